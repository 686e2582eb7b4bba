// Where every record is counted: a settle()'s lines as written, unknown or write_error (a
// sink's appends: sink_io.cpp), a serializer's drops, a batch's tally published to the counters (I/O thread), the producers'
// drops (any thread), stats() (any thread); and the rate-limited log line of each reason.
#include "writer_core_impl.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jsonlw::detail {

void WriterCore::Impl::publish(std::size_t n) noexcept
{
    if (!handoff.publish_claim()) return;  // close gave up on this unit: counted unknown
    std::uint64_t resolved = tally.resolved();
    if (resolved < n) {
        const std::uint64_t missing = n - resolved;
        tally.unexpected += missing;
        log(LogLevel::error,
            fmt::format("write_batch() left {} of {} {} records without an append; "
                        "counted as unexpected",
                        missing, n, self.opts_.subject));
    } else if (resolved > n) {
        // Keep the invariant: a record is counted once, whatever the override did.
        std::uint64_t excess = resolved - n;
        log(LogLevel::error,
            fmt::format("write_batch() accounted {} {} records for a batch of {}",
                        resolved, self.opts_.subject, n));
        for (std::uint64_t* c : {&tally.written, &tally.write_error, &tally.unknown,
                                 &tally.malformed, &tally.unexpected}) {
            const std::uint64_t take = std::min(*c, excess);
            *c -= take;
            excess -= take;
        }
    }
    written.fetch_add(tally.written, std::memory_order_release);
    malformed.fetch_add(tally.malformed, std::memory_order_release);
    unexpected.fetch_add(tally.unexpected, std::memory_order_release);
    write_error.fetch_add(tally.write_error, std::memory_order_release);
    unknown.fetch_add(tally.unknown, std::memory_order_release);
    sanitized.fetch_add(tally.sanitized, std::memory_order_relaxed);
    bytes.fetch_add(tally.bytes, std::memory_order_relaxed);
    batches.fetch_add(tally.batches, std::memory_order_relaxed);
    handoff.end_unit();
}

AppendResult WriterCore::Impl::settle(const Lines& lines, std::uint64_t delivered, std::uint64_t failed,
                    std::uint64_t delivered_bytes) noexcept
{
    AppendResult r;
    r.attempted = true;
    delivered = std::min(delivered, lines.records);
    failed = std::min(failed, lines.records - delivered);
    r.records_written = delivered;
    r.records_failed = failed;
    r.records_unknown = lines.records - delivered - failed;
    tally.written += r.records_written;
    tally.write_error += r.records_failed;
    tally.unknown += r.records_unknown;
    if (delivered > 0) {
        ++tally.batches;
        tally.bytes += delivered_bytes;
        // Which lines were sanitized is known only for the whole group.
        if (delivered == lines.records) tally.sanitized += lines.sanitized;
    }
    r.landed = delivered_bytes;
    if (delivered < lines.records) r.ec = std::make_error_code(std::errc::io_error);
    return r;
}

void WriterCore::Impl::on_malformed(std::string_view what) noexcept
{
    ++tally.malformed;
    if (log_worthy(++malformed_seen))
        say(LogLevel::warning, &WriterMessages::malformed, what);
}

void WriterCore::Impl::on_unexpected(Stage stage, std::string_view what) noexcept
{
    ++tally.unexpected;
    log_unexpected(stage, what);
}

void WriterCore::Impl::log_unexpected(Stage stage, std::string_view what) noexcept
{
    std::uint64_t& seen = stage == Stage::serialize ? unexpected_serialize : unexpected_write;
    if (log_worthy(++seen))
        log(LogLevel::error,
            fmt::format("Unexpected error {} {} record ({} so far): {}",
                        stage == Stage::serialize ? "serializing" : "writing",
                        self.opts_.subject, seen, what));
}

// "Dropped N <subject> records" for every N in (logged, now] that is 1 or a multiple of
// 1000: the same lines a synchronous logger would print, without a log call on submit.
void WriterCore::Impl::log_queue_drops() noexcept
{
    const std::uint64_t now = queue_full.load(std::memory_order_acquire);
    std::uint64_t logged = queue_full_logged.load(std::memory_order_acquire);
    while (logged < now) {
        const std::uint64_t next = logged == 0 ? 1 : (logged / 1000 + 1) * 1000;
        if (next > now) {
            // No mark between: remember the count (a failed exchange re-reads and retries).
            if (queue_full_logged.compare_exchange_weak(logged, now, std::memory_order_acq_rel))
                break;
            continue;
        }
        if (queue_full_logged.compare_exchange_weak(logged, next, std::memory_order_acq_rel)) {
            say(LogLevel::warning, &WriterMessages::queue_full, next);
            logged = next;
        }
    }
}

WriterStats WriterCore::stats() const noexcept
{
    auto& d = const_cast<Impl&>(*impl_);
    WriterStats s;
    // Consumer-side counters first: each counts records pushed before it, so the push
    // count read afterwards is never smaller than what they add up to.
    s.written = d.written.load(std::memory_order_acquire);
    s.batches = d.batches.load(std::memory_order_relaxed);
    s.bytes = d.bytes.load(std::memory_order_relaxed);
    s.sanitized = d.sanitized.load(std::memory_order_relaxed);
    s.unknown = d.unknown.load(std::memory_order_acquire);
    s.dropped.malformed = d.malformed.load(std::memory_order_acquire);
    s.dropped.write_error = d.write_error.load(std::memory_order_acquire);
    s.dropped.shutdown = d.shutdown.load(std::memory_order_acquire);
    s.dropped.unexpected = d.unexpected.load(std::memory_order_acquire);
    s.dropped.oldest_evicted = d.evicted.load(std::memory_order_acquire);
    s.dropped.queue_full = d.queue_full.load(std::memory_order_acquire);
    s.dropped.closed = d.closed.load(std::memory_order_acquire);
    s.files_closed = d.file_sink ? d.file_sink->files_closed() : 0;
    std::uint64_t pushes = 0;
    if (Impl::Guard g{d}) pushes = hooks_ ? hooks_->claimed() : 0;
    else pushes = final_pushes_.load(std::memory_order_acquire);
    const std::uint64_t resolved = s.written + s.unknown + s.dropped.total() -
                                   s.dropped.queue_full - s.dropped.closed;
    s.submitted = pushes + s.dropped.queue_full + s.dropped.closed;
    s.pending = pushes > resolved ? pushes - resolved : 0;
    return s;
}

void WriterCore::count_queue_full() noexcept
{
    const std::uint64_t n = impl_->queue_full.fetch_add(1, std::memory_order_acq_rel) + 1;
    // A drop that reaches a log mark (1, then every 1000th) has the warning logged on the
    // strand: the I/O thread logs marks too, after each step, but a full queue often means
    // it is stuck in a write. One post per 1000 drops; the producer never formats or logs.
    if (n == 1 || n % 1000 == 0) [[unlikely]] {
        try {
            asio::post(impl_->strand, [core = shared_from_this()] {
                Impl& d = *core->impl_;
                if (Impl::Guard g{d}) d.log_queue_drops();  // not once the writer is gone
            });
        } catch (...) {
            // Out of memory: the I/O thread still logs the mark after its next step.
        }
    }
}
std::uint64_t WriterCore::queue_full_count() const noexcept
{
    return impl_->queue_full.load(std::memory_order_acquire);
}
void WriterCore::count_closed() noexcept { impl_->closed.fetch_add(1, std::memory_order_acq_rel); }
void WriterCore::count_evicted() noexcept { impl_->evicted.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace jsonlw::detail
