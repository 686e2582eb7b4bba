// check_sink(): a conformance check for a LineSink of your own — it drives fresh sinks from
// your factory through real writers (under each Durability, with a reopen, and with faults
// in front of the sink and in its system calls) and directly, and reports every rule of the
// sink contract (jsonlw/sinks/line_sink.hpp, docs/sinks.md "Testing a sink") that the sink
// broke. No test framework needed: a Catch2 test writes
//     const auto report = jsonlw::testing::check_sink([] { return std::make_shared<MySink>(); });
//     INFO(report.to_string());
//     CHECK(report.ok());
#pragma once

#include <jsonlw/durability.hpp>
#include <jsonlw/sinks/line_sink.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::testing {

// The rules check_sink() checks, by the name a ConformanceFailure gives (docs/sinks.md says
// each at length):
//   counts.add_up         each append's written + failed + unknown is the group's records
//   counts.exact          with no fault, every record a writer submits is counted written
//   counts.found          a record counted written is read back exactly once; one counted
//                         failed is not read back; unknown ones at most once
//   counts.log_records    a Lines::log_records group (one line, many records) counts them all
//   fault.append          appends failed in front of the sink (FaultySink), whole or part-way,
//                         are counted exactly, and the sink writes on after them
//   fault.sync            under fsync_batch a failed sync() makes exactly its append's records
//                         unknown, and the sink writes on after it
//   fault.io              a writev that fails in SinkContext::file_io is not counted written,
//                         and the sink writes on after it (a sink that writes through file_io)
//   durability.sync_per_append  under fsync_batch sync() follows each append that reported
//                         records written, before they count, and succeeds
//   durability.fsynced_when_counted  under fsync_batch nothing written through file_io is
//                         unsynced (or closed unsynced) once its records count written
//   durability.in_os_when_counted    under none and fsync_interval, a batch counted written
//                         wrote through file_io (no records held in the sink across batches)
//   durability.close      close(durable) is the engine's last call, once, durable unless
//                         Durability::none, after a sync() when durable
//   lifecycle.start       start() succeeds in a fresh directory
//   lifecycle.thread      every call but start() and files() on the writer's I/O thread, one
//                         at a time
//   lifecycle.reopen      reopen() succeeds at a batch boundary and the sink writes on
//   lifecycle.close_twice a second close() (the destructor's) changes nothing read back
//   lifecycle.progress    every flush and close completes within ConformanceOptions::timeout
//   files.exist           files() lists every file the sink created through file_io, and each
//                         path it lists exists after close

// A fresh sink, never started: every run asks for one (a sink serves one writer).
using SinkFactory = std::function<std::shared_ptr<LineSink>()>;

// What a closed sink holds, as lines without their '\n', in the order a reader meets them:
// `sink` is the factory's sink, `files` its files(). For a sink whose files are not plain
// JSON Lines (compressed) or that has none (a socket, memory).
using ReadBack = std::function<std::vector<std::string>(
    LineSink& sink, const std::vector<std::filesystem::path>& files)>;

struct ConformanceOptions {
    // Records each writer run submits (default 160), at most batch_records per append
    // (default 16).
    std::size_t records = 160;
    std::size_t batch_records = 16;
    // The durabilities the writer runs under (default all three); the faults run uses
    // fsync_batch when listed, else the first.
    std::vector<Durability> durabilities{Durability::none, Durability::fsync_batch,
                                         Durability::fsync_interval};
    // The key every group is appended under (default empty: the writer's one destination).
    // A sink that maps keys to files needs one: "conformance/part.jsonl" for a
    // PartitionedFileSink.
    std::string key{};
    // Where the runs' directories are made, one fresh folder each, all removed at the end
    // (default: the system's temporary directory).
    std::filesystem::path directory{};
    bool keep_files = false;  // leave the runs' folders, to look at them
    // How to read back what a closed sink holds (default: the files files() lists, read as
    // text; without any, the counts.found rule is skipped).
    ReadBack read_back{};
    // Longest wait for each flush and close (default 10 s).
    std::chrono::milliseconds timeout{10000};
};

struct ConformanceFailure {
    std::string rule;     // one of the names above
    std::string message;  // what was seen, and in which run
};

struct ConformanceReport {
    std::vector<ConformanceFailure> failures;  // at most one per rule and run
    std::vector<std::string> checked;          // the rules checked (each once)
    std::vector<std::string> skipped;          // "rule: why it could not be checked"
    std::vector<std::string> log;              // what the writers and the sink logged

    bool ok() const noexcept { return failures.empty(); }
    // Whether `rule` failed in some run.
    bool failed(std::string_view rule) const noexcept;
    // One line per failure, then one per skipped rule.
    std::string to_string() const;
};

// Runs the check; blocks until done (a few hundred milliseconds for a fast sink). Never
// throws for a sink's misbehaviour (an exception from the factory or the sink is a failure);
// a sink whose append() never returns hangs it. Any thread but an Asio loop's.
ConformanceReport check_sink(const SinkFactory& make, const ConformanceOptions& options = {});

}  // namespace jsonlw::testing
