// The rules of jsonlw/testing/sink_conformance.hpp, as functions the Checker calls on
// check_sink()'s thread once a run is over: each reads what the run saw and records its
// verdicts in a ReportBuilder; none owns anything. Grouped by topic: count_rules.cpp,
// lifecycle_rules.cpp, durability_rules.cpp, fault_rules.cpp, closed_sink_rules.cpp.
#pragma once

#include "conformance_report.hpp"
#include "observed_io.hpp"
#include "probe.hpp"

#include <jsonlw/append_result.hpp>
#include <jsonlw/durability.hpp>
#include <jsonlw/sinks/faulty_sink.hpp>
#include <jsonlw/writer_stats.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace jsonlw::testing::conformance {

// A group of lines as the writer counted it (the engine's rules, from what the sink said).
struct Group {
    std::vector<std::uint64_t> ids;
    std::uint64_t records = 0, written = 0, failed = 0, unknown = 0;
};

// What a writer run saw, for the rules that read it.
struct WriterRunSeen {
    Durability mode = Durability::none;
    bool faults = false;             // the faults run, not a plain one
    std::string run;                 // its name in the report
    std::vector<Event> events;       // the Probe's
    const CloseReport* closed = nullptr;  // none when close did not complete
    bool overlapped = false;
    std::thread::id caller, loop;    // check_sink()'s thread, the io_context's
    std::size_t submitted = 0;
    FaultySink::Counts fc;
    ObservedIo::Snapshot io;         // after close
};

// "none", "fsync_batch", "fsync_interval", as run names say them.
const char* name_of(Durability d) noexcept;

// --- counts (count_rules.cpp) ---
// counts.add_up for one append of `records`.
void check_adds_up(ReportBuilder& report, const AppendResult& r, std::uint64_t records,
                   const std::string& run);
// The groups as the engine counts them (checking counts.add_up on each append): clamped, and
// under fsync_batch unknown when the sync() after them failed.
std::vector<Group> count_groups(ReportBuilder& report, const WriterRunSeen& seen);
// counts.exact: the writer's counts against the groups'.
void check_exact(ReportBuilder& report, const WriterRunSeen& seen,
                 const std::vector<Group>& groups);
// counts.found: `lines` read back against the groups as the writer counted them.
void check_found(ReportBuilder& report, const std::vector<Group>& groups,
                 const std::vector<std::string>& lines, const std::string& run);

// --- lifecycle (lifecycle_rules.cpp) ---
// lifecycle.thread: one I/O thread, not the caller's nor the loop's, one call at a time.
void check_thread(ReportBuilder& report, const WriterRunSeen& seen);
// lifecycle.reopen: at a batch boundary, and succeeds (the plain runs).
void check_reopen(ReportBuilder& report, const WriterRunSeen& seen);

// --- durability (durability_rules.cpp) ---
// durability.close: once, last, durable unless none, after a sync() when durable.
void check_close(ReportBuilder& report, const WriterRunSeen& seen);
// durability.sync_per_append, durability.fsynced_when_counted, durability.in_os_when_counted.
void check_durable_when_counted(ReportBuilder& report, const WriterRunSeen& seen);

// --- faults (fault_rules.cpp) ---
// fault.append, fault.sync, fault.io (the faults run).
void check_faults(ReportBuilder& report, const WriterRunSeen& seen,
                  const std::vector<Group>& groups);

// --- the closed sink (closed_sink_rules.cpp) ---
// What the closed sink holds, or none (`why` says why); a read_back that throws fails
// counts.found.
std::optional<std::vector<std::string>> read_back(
    ReportBuilder& report, const ConformanceOptions& opts, LineSink& sink,
    const std::vector<std::filesystem::path>& files, const std::filesystem::path& dir,
    const std::string& run, std::string& why);
// Reads the closed sink back, closes it again (`durable`, as a destructor may) and reads it
// again: counts.found on the first, lifecycle.close_twice on both.
void check_closed_sink(ReportBuilder& report, const ConformanceOptions& opts, LineSink& sink,
                       const std::vector<std::filesystem::path>& files,
                       const std::filesystem::path& dir, const std::vector<Group>& groups,
                       bool durable, const std::string& run);
// files.exist.
void check_files(ReportBuilder& report, const std::vector<std::filesystem::path>& files,
                 const std::filesystem::path& dir, const ObservedIo::Snapshot& io,
                 const std::string& run);

}  // namespace jsonlw::testing::conformance
