// The demo's end-to-end check: per writer, the records it should have received (the demo
// knows: per request one request line, one response line, one perf record, one raw output)
// against where each went (written, dropped by reason, unknown, or lost at the raw-output hook
// before the queue). Called once, on the demo's thread, after the writers closed; owns nothing.
#pragma once

#include <jsonlw/writer_stats.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>

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

}  // namespace jsonlw::tools
