// Per-writer counters: where every submitted record went.
#pragma once

#include <cstdint>

namespace jsonlw {

// Records dropped, by reason. Each record is counted under exactly one reason.
struct DropCounts {
    std::uint64_t queue_full = 0;      // refused by submit(): queue full (or block timed out)
    std::uint64_t oldest_evicted = 0;  // evicted from a full queue by Overflow::drop_oldest
    std::uint64_t malformed = 0;       // serialize() threw MalformedRecord (or a non-finite number)
    std::uint64_t write_error = 0;     // its append failed (ENOSPC, EIO, ...), or start() failed
    std::uint64_t shutdown = 0;        // still queued when close() ran out of time
    std::uint64_t unexpected = 0;      // any other exception from serialize() or write_batch()
    std::uint64_t closed = 0;          // submitted after async_close()

    std::uint64_t total() const noexcept
    {
        return queue_full + oldest_evicted + malformed + write_error + shutdown + unexpected +
               closed;
    }
    // The drops WriterOptions::envelope's seq numbers leave as gaps: all but `closed` (a
    // record submitted after async_close() belongs to no numbered stream).
    std::uint64_t seq_gaps() const noexcept { return total() - closed; }
    friend bool operator==(const DropCounts&, const DropCounts&) = default;
};

// A snapshot of one writer (never process-global). At every snapshot:
//   submitted == written + dropped.total() + unknown + pending
struct WriterStats {
    std::uint64_t submitted = 0;  // submit()/async_submit() calls that were counted
    std::uint64_t written = 0;    // records whose line reached the file (fsync'ed, when durable)
    std::uint64_t batches = 0;    // groups of lines a sink took at least one record of
    std::uint64_t bytes = 0;      // bytes appended successfully
    std::uint64_t sanitized = 0;  // written records whose invalid UTF-8 was replaced by U+FFFD
    std::uint64_t unknown = 0;    // may or may not be in the file: in an append that failed
                                  // part-way, or still running when close() gave up on it
    std::uint64_t pending = 0;    // queued or being written
    DropCounts dropped;
    std::uint64_t files_closed = 0;  // files of the default layout closed by rotate or reopen

    friend bool operator==(const WriterStats&, const WriterStats&) = default;
};

// What async_close() completes with.
struct CloseReport {
    WriterStats stats;     // the final counters
    bool drained = false;  // true when every queued record was resolved before shutdown_timeout
};

}  // namespace jsonlw
