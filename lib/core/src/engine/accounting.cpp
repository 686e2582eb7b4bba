// Where every record is counted: Accounting's methods (a unit's tally, published to the
// counters by the I/O thread; close's and shutdown's counts; the producers' drops; the
// snapshot), the rate-limited log line of each reason, and WriterCore's doors to them.
#include "accounting.hpp"

#include "writer_core_impl.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jsonlw::detail {

void Accounting::publish(std::size_t n) noexcept
{
    Tally& tally = tally_;
    std::uint64_t resolved = tally.resolved();
    if (resolved < n) {
        const std::uint64_t missing = n - resolved;
        tally.unexpected += missing;
        log(LogLevel::error,
            fmt::format("write_batch() left {} of {} {} records without an append; "
                        "counted as unexpected",
                        missing, n, opts_.subject));
    } else if (resolved > n) {
        // Keep the invariant: a record is counted once, whatever the override did.
        std::uint64_t excess = resolved - n;
        log(LogLevel::error,
            fmt::format("write_batch() accounted {} {} records for a batch of {}",
                        resolved, opts_.subject, n));
        for (std::uint64_t* c : {&tally.written, &tally.write_error, &tally.unknown,
                                 &tally.malformed, &tally.unexpected}) {
            const std::uint64_t take = std::min(*c, excess);
            *c -= take;
            excess -= take;
        }
    }
    written_.fetch_add(tally.written, std::memory_order_release);
    malformed_.fetch_add(tally.malformed, std::memory_order_release);
    unexpected_.fetch_add(tally.unexpected, std::memory_order_release);
    write_error_.fetch_add(tally.write_error, std::memory_order_release);
    unknown_.fetch_add(tally.unknown, std::memory_order_release);
    sanitized_.fetch_add(tally.sanitized, std::memory_order_relaxed);
    bytes_.fetch_add(tally.bytes, std::memory_order_relaxed);
    batches_.fetch_add(tally.batches, std::memory_order_relaxed);
}

void Accounting::count_append(const Lines& lines, const AppendResult& r) noexcept
{
    // A sink that changes the bytes (OtlpSink, a chain) reports what landed; one that says
    // nothing (landed 0) wrote the lines as given.
    tally_add(lines, r,
              r.records_written == lines.records && r.landed == 0 ? lines.bytes.size() : r.landed);
}

void Accounting::tally_add(const Lines& lines, const AppendResult& r,
                           std::uint64_t landed_bytes) noexcept
{
    tally_.written += r.records_written;
    tally_.write_error += r.records_failed;
    tally_.unknown += r.records_unknown;
    if (r.records_written > 0) {
        ++tally_.batches;
        tally_.bytes += landed_bytes;
        // Which lines were sanitized is known only for the whole group.
        if (r.records_written == lines.records) tally_.sanitized += lines.sanitized;
    }
}

void Accounting::on_malformed(std::string_view what) noexcept
{
    ++tally_.malformed;
    if (log_worthy(++malformed_seen_))
        say(LogLevel::warning, &WriterMessages::malformed, what);
}

void Accounting::on_unexpected(Stage stage, std::string_view what) noexcept
{
    ++tally_.unexpected;
    log_unexpected(stage, what);
}

void Accounting::log_unexpected(Stage stage, std::string_view what) noexcept
{
    std::uint64_t& seen = stage == Stage::serialize ? unexpected_serialize_ : unexpected_write_;
    if (log_worthy(++seen))
        log(LogLevel::error,
            fmt::format("Unexpected error {} {} record ({} so far): {}",
                        stage == Stage::serialize ? "serializing" : "writing",
                        opts_.subject, seen, what));
}

void Accounting::on_write_failure(std::error_code ec, const LineSink& to,
                                  std::string_view key) noexcept
{
    if (!log_worthy(++write_failures_)) return;
    if (!ec) ec = std::make_error_code(std::errc::io_error);
    try {
        say(LogLevel::warning, &WriterMessages::write_failed, ec.message(), to.describe(key));
    } catch (...) {
        // describe() ran out of memory: the count tells.
    }
}

void Accounting::on_sync_failure(std::error_code ec) noexcept
{
    if (log_worthy(++sync_failures_))
        log(LogLevel::warning,
            fmt::format("Failed to fsync {} JSONL: {}", opts_.subject, ec.message()));
}

void Accounting::log(LogLevel level, std::string_view msg) const noexcept
{
    try {
        if (opts_.log) opts_.log(level, msg);
        else log_to_stderr(level, msg);
    } catch (...) {
        // A throwing log sink must not cost records or the drain.
    }
}

// "Dropped N <subject> records" for every N in (logged, now] that is 1 or a multiple of
// 1000: the same lines a synchronous logger would print, without a log call on submit.
void Accounting::log_queue_drops() noexcept
{
    const std::uint64_t now = queue_full_.load(std::memory_order_acquire);
    std::uint64_t logged = queue_full_logged_.load(std::memory_order_acquire);
    while (logged < now) {
        const std::uint64_t next = next_log_mark(logged);
        if (next > now) {
            // No mark between: remember the count (a failed exchange re-reads and retries).
            if (queue_full_logged_.compare_exchange_weak(logged, now, std::memory_order_acq_rel))
                break;
            continue;
        }
        if (queue_full_logged_.compare_exchange_weak(logged, next, std::memory_order_acq_rel)) {
            say(LogLevel::warning, &WriterMessages::queue_full, next);
            logged = next;
        }
    }
}

void Accounting::snapshot(WriterStats& s) const noexcept
{
    // Consumer-side counters first: each counts records pushed before it, so the push
    // count read afterwards is never smaller than what they add up to.
    s.written = written_.load(std::memory_order_acquire);
    s.batches = batches_.load(std::memory_order_relaxed);
    s.bytes = bytes_.load(std::memory_order_relaxed);
    s.sanitized = sanitized_.load(std::memory_order_relaxed);
    s.unknown = unknown_.load(std::memory_order_acquire);
    s.dropped.malformed = malformed_.load(std::memory_order_acquire);
    s.dropped.write_error = write_error_.load(std::memory_order_acquire);
    s.dropped.shutdown = shutdown_.load(std::memory_order_acquire);
    s.dropped.unexpected = unexpected_.load(std::memory_order_acquire);
    s.dropped.oldest_evicted = evicted_.load(std::memory_order_acquire);
    s.dropped.queue_full = queue_full_.load(std::memory_order_acquire);
    s.dropped.closed = closed_.load(std::memory_order_acquire);
}

WriterStats WriterCore::stats() const noexcept
{
    auto& d = const_cast<Impl&>(*impl_);
    WriterStats s;
    d.accounting.snapshot(s);  // before the push count: see snapshot()
    s.files_closed = d.sinks.files_closed();
    std::uint64_t pushes = 0;
    if (Impl::Guard g{d}) pushes = ring_ ? ring_->claimed() : 0;
    else pushes = final_pushes_.load(std::memory_order_acquire);
    const std::uint64_t resolved = s.written + s.unknown + s.dropped.total() -
                                   s.dropped.queue_full - s.dropped.closed;
    s.submitted = pushes + s.dropped.queue_full + s.dropped.closed;
    s.pending = pushes > resolved ? pushes - resolved : 0;
    return s;
}

void WriterCore::count_queue_full() noexcept
{
    const std::uint64_t n = impl_->accounting.count_queue_full();
    // A drop that reaches a log mark (1, then every 1000th) has the warning logged on the
    // strand: the I/O thread logs marks too, after each step, but a full queue often means
    // it is stuck in a write. One post per 1000 drops; the producer never formats or logs.
    if (log_worthy(n)) [[unlikely]] {
        try {
            asio::post(impl_->strand, [core = shared_from_this()] {
                Impl& d = *core->impl_;
                if (Impl::Guard g{d}) d.accounting.log_queue_drops();  // not once the writer is gone
            });
        } catch (...) {
            // Out of memory: the I/O thread still logs the mark after its next step.
        }
    }
}
std::uint64_t WriterCore::queue_full_count() const noexcept
{
    return impl_->accounting.queue_full();
}
void WriterCore::count_closed() noexcept { impl_->accounting.count_closed(); }
void WriterCore::count_evicted() noexcept { impl_->accounting.count_evicted(); }

}  // namespace jsonlw::detail
