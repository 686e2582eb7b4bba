// The demo's end-to-end check: per writer, the records it should have received (the demo
// knows: per request one request line, one response line, one perf record, one raw output)
// against where each went (written, dropped by reason, unknown, or lost at the raw-output hook
// before the queue); and that what it counted as written is on disk where a reader finds it:
// per writer, the lines read back from its folder (as `jsonlw report` reads them) against the
// records counted written, less those its sink deleted by retention and those someone else
// removed or moved away (the sink's FileSinkCounters). Called once, on the demo's thread,
// after the writers closed; owns nothing.
#pragma once

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/writer_stats.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>

namespace jsonlw::tools {

struct WriterAccount {
    const char* name = "";
    std::uint64_t expected = 0;   // records the writer should have been handed
    WriterStats stats{};          // its final counters (CloseReport::stats)
    bool drained = true;          // CloseReport::drained
    std::uint64_t hook_lost = 0;  // counted before the queue (raw output: hook failures,
                                  // not recorded, released empty)

    std::uint64_t dropped() const noexcept { return stats.dropped.total() + hook_lost; }
    // Written, dropped with a counted reason, or counted as unknown (or still pending).
    std::uint64_t accounted() const noexcept
    {
        return stats.written + dropped() + stats.unknown + stats.pending;
    }
    // expected - accounted: records no counter knows about (negative: extra records).
    std::int64_t unaccounted() const noexcept
    {
        return static_cast<std::int64_t>(expected) - static_cast<std::int64_t>(accounted());
    }
};

struct AccountingVerdict {
    std::uint64_t unaccounted = 0;  // sum of |unaccounted()| over the writers
    std::uint64_t dropped = 0;      // records dropped (counted) over the writers
    std::uint64_t unknown = 0;
    bool drained = true;            // every writer's close drained its queue
};

// What the stage did, for the JSON summary.
struct StageAccount {
    std::uint64_t steps = 0, captured = 0, dropped_steps = 0, dropped_rows = 0;
    std::uint64_t slot_waits = 0, slot_wait_timeouts = 0, slot_wait_us = 0;
    std::uint64_t tokens_without_data = 0, token_data_orphaned = 0;
};

// The whole accounting as one JSON object (--summary-json): seconds, requests, per writer
// expected / written / dropped (by reason) / unknown / unaccounted, the stage's figures.
// False when the file cannot be written.
bool write_summary_json(const std::filesystem::path& file, double seconds, std::uint64_t requests,
                        std::span<const WriterAccount> writers, const StageAccount& stage);

// Prints "writer expected written dropped unknown unaccounted records/s MB" and, under a
// writer with drops, its reasons; returns the totals.
AccountingVerdict print_accounting(std::FILE* out, std::span<const WriterAccount> writers,
                                   double seconds);

struct DiskCheck {
    const char* name = "";
    std::filesystem::path dir;     // the writer's folder
    std::uint64_t written = 0;     // records the writer counted written
    std::uint64_t unknown = 0;     // counted unknown: each may or may not be on disk
    FileSinkCounters sink{};       // its file sink's counters
    // Read back:
    std::uint64_t found = 0;       // valid lines under `dir`
    std::uint64_t malformed = 0;   // lines that are not JSON
    std::uint64_t torn_tails = 0;  // files whose last line has no '\n'
    std::string error;             // the folder could not be read

    std::uint64_t gone() const noexcept
    {
        return sink.records_deleted + sink.records_removed + sink.records_moved;
    }
    // written - gone - found: records counted written that no reader finds (negative: lines
    // nobody counted, beyond the `unknown` ones that may have landed).
    std::int64_t unaccounted() const noexcept
    {
        const std::int64_t d = static_cast<std::int64_t>(written) -
                               static_cast<std::int64_t>(gone()) - static_cast<std::int64_t>(found);
        const auto u = static_cast<std::int64_t>(unknown);
        return d > 0 ? d : d < -u ? d + u : 0;
    }
};

// Reads each writer's folder back (fills found, malformed, torn_tails, error).
void read_back(std::span<DiskCheck> writers);

// Prints "writer written on disk deleted removed moved reappended rolled-back unaccounted"
// and returns the sum of |unaccounted()| (a folder that could not be read counts its
// written records), plus malformed lines and torn tails.
std::uint64_t print_disk_check(std::FILE* out, std::span<const DiskCheck> writers);

}  // namespace jsonlw::tools
