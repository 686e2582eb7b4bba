// Accounting: where every record is counted and each reason's log line rate-limited — the
// I/O thread fills and publish()es a unit's tally, close and shutdown count what they drop,
// producers count theirs and anyone may snapshot() or log, each from the thread its section
// below names; it owns the counters, the tally and the log counts, and borrows the writer's
// options, which outlive it (both belong to WriterCore).
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/detail/log_marks.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/sinks/line_sink.hpp>
#include <jsonlw/writer_messages.hpp>
#include <jsonlw/writer_options.hpp>
#include <jsonlw/writer_stats.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace jsonlw::detail {

class Accounting {
public:
    explicit Accounting(const WriterOptions& opts) noexcept : opts_(opts) {}
    Accounting(const Accounting&) = delete;
    Accounting& operator=(const Accounting&) = delete;

    // --- logs (any thread) ---
    void log(LogLevel level, std::string_view msg) const noexcept;
    // Logs one of WriterOptions::messages, `wording` (a member of it), with the subject as
    // {0} and `args` after it; a format fmt rejects falls back to the default wording.
    template <class... Args>
    void say(LogLevel level, std::string WriterMessages::*wording, const Args&... args) const noexcept
    {
        try {
            try {
                log(level, fmt::format(fmt::runtime(opts_.messages.*wording), opts_.subject,
                                       args...));
            } catch (const fmt::format_error&) {
                log(level, fmt::format(fmt::runtime(WriterMessages{}.*wording), opts_.subject,
                                       args...));
            }
        } catch (...) {
            // Out of memory: the counters still tell.
        }
    }

    // --- the unit in flight (I/O thread) ---
    void begin_unit() noexcept { tally_ = Tally{}; }
    // Adds the unit's tally to the counters, so that it resolves exactly `n` records.
    void publish(std::size_t n) noexcept;
    // A sink's report of `lines` (clamped by the caller), counted.
    void count_append(const Lines& lines, const AppendResult& r) noexcept;
    // Lines that had nowhere to go (the sinks are closed).
    void count_unwritten(std::uint64_t records) noexcept { tally_.write_error += records; }
    void on_malformed(std::string_view what) noexcept;
    void on_unexpected(Stage stage, std::string_view what) noexcept;
    void log_unexpected(Stage stage, std::string_view what) noexcept;
    // An append to `to` under `key` left records unwritten.
    void on_write_failure(std::error_code ec, const LineSink& to, std::string_view key) noexcept;
    void on_sync_failure(std::error_code ec) noexcept;
    void log_queue_drops() noexcept;  // any thread (the I/O thread, the strand)

    // --- outside a unit: close, shutdown, a start() that failed ---
    void count_unknown(std::uint64_t n) noexcept { unknown_.fetch_add(n, std::memory_order_release); }
    void count_shutdown(std::uint64_t n) noexcept
    {
        shutdown_.fetch_add(n, std::memory_order_release);
    }
    void count_write_error(std::uint64_t n) noexcept { write_error_.fetch_add(n); }

    // --- producers (any thread) ---
    // Returns the drop's number (1 for the first).
    std::uint64_t count_queue_full() noexcept
    {
        return queue_full_.fetch_add(1, std::memory_order_acq_rel) + 1;
    }
    std::uint64_t queue_full() const noexcept { return queue_full_.load(std::memory_order_acquire); }
    void count_closed() noexcept { closed_.fetch_add(1, std::memory_order_acq_rel); }
    void count_evicted() noexcept { evicted_.fetch_add(1, std::memory_order_acq_rel); }

    // Every counter of `s` but submitted, pending and files_closed; any thread.
    void snapshot(WriterStats& s) const noexcept;

private:
    // What one unit's serialize_batch()/append() calls resolved (I/O thread).
    struct Tally {
        std::uint64_t written = 0, malformed = 0, unexpected = 0, write_error = 0, unknown = 0;
        std::uint64_t sanitized = 0, bytes = 0, batches = 0;
        std::uint64_t resolved() const noexcept
        {
            return written + malformed + unexpected + write_error + unknown;
        }
    };

    // A group's records as `r` counts them, of which `landed_bytes` reached the sink.
    void tally_add(const Lines& lines, const AppendResult& r, std::uint64_t landed_bytes) noexcept;

    const WriterOptions& opts_;

    // Consumer side (the unit or close): written ... shutdown, unknown.
    std::atomic<std::uint64_t> written_{0}, batches_{0}, bytes_{0}, sanitized_{0}, unknown_{0};
    std::atomic<std::uint64_t> malformed_{0}, write_error_{0}, shutdown_{0}, unexpected_{0};
    // Producer side.
    alignas(64) std::atomic<std::uint64_t> queue_full_{0};
    std::atomic<std::uint64_t> closed_{0}, evicted_{0};

    // I/O thread (a line of its own: producers write queue_full_ above).
    alignas(64) Tally tally_;
    std::uint64_t malformed_seen_ = 0, unexpected_serialize_ = 0;
    std::uint64_t unexpected_write_ = 0, write_failures_ = 0, sync_failures_ = 0;

    // The last queue-full count logged ("Dropped N <subject> records" at 1 and every 1000th):
    // claimed by compare-exchange, so the I/O thread and the strand (nudged by the submit
    // that reaches a mark, in case the I/O thread is stuck in a write) log each mark once.
    std::atomic<std::uint64_t> queue_full_logged_{0};
};

}  // namespace jsonlw::detail
