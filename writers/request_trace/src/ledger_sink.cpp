#include "ledger_sink.hpp"

namespace jsonlw::detail {

LedgerSink::LedgerSink(std::shared_ptr<LineSink> inner, std::shared_ptr<TraceAccounting> ledger,
                       std::chrono::steady_clock::duration publish_interval)
    : SinkDecorator(std::move(inner)), ledger_(std::move(ledger)), publish_interval_(publish_interval)
{
}

LedgerSink::~LedgerSink()
{
    if (publisher_.joinable()) publisher_.join();
}

std::error_code LedgerSink::start(const SinkContext& ctx)
{
    const std::error_code ec = inner_->start(ctx);
    if (!ec) {
        writer_stats_ = ctx.writer_stats;
        durable_ = ctx.durability == Durability::fsync_batch;
        started_.store(true);
    }
    return ec;
}

WriterStats LedgerSink::counts() const noexcept
{
    try {
        return writer_stats_ ? writer_stats_() : WriterStats{};
    } catch (...) {
        return {};
    }
}

AppendResult LedgerSink::append(std::string_view key, const Lines& lines) noexcept
{
    AppendResult r = inner_->append(key, lines);
    synced_ = false;
    if (durable_ && r.records_written > 0) {
        // A PartitionedFileSink fsync'ed in its append already: this finds nothing to sync.
        if (const std::error_code ec = inner_->sync(); ec) {
            // In the file, durability not known: unknown, as the engine counts a failed sync.
            r.records_unknown += r.records_written;
            r.records_written = 0;
            if (r.ok()) r.ec = ec;
        } else {
            synced_ = true;
        }
    }
    if (!r.ok()) batch_failed_ = true;
    try {
        ledger_->on_append(key, lines, r);
    } catch (...) {
        // Out of memory: the sidecar misses this extent; the records are counted anyway.
    }
    return r;
}

std::error_code LedgerSink::sync() noexcept
{
    // The engine's sync() right after an append this sink synced already: nothing is left.
    if (std::exchange(synced_, false)) return {};
    return inner_->sync();
}

void LedgerSink::after_batch() noexcept
{
    const bool failed = std::exchange(batch_failed_, false);
    if (!failed && !ledger_->publication_due(std::chrono::steady_clock::now(), publish_interval_))
        return;
    ledger_->publish(counts(), false);
}

void LedgerSink::close(bool durable) noexcept
{
    inner_->close(durable);
    // Also the destructor's path when close never ran (or timed out before publishing): the
    // last word on the accounting is still written.
    if (started_.load() && !closed_published_.exchange(true)) ledger_->publish(counts(), true);
}

void LedgerSink::close_abandoned() noexcept
{
    inner_->close_abandoned();
    // The close report's counts (queued records as shutdown, the stuck batch as unknown) go
    // into the closed sidecar now, as TensorRT-LLM's durable writer publishes one after its
    // drain times out (tensorrt_llm/serve/request_trace.py), not when the append returns.
    if (!started_.load() || closed_published_.exchange(true)) return;
    try {
        publisher_ = std::thread([ledger = ledger_, s = counts()] { ledger->publish(s, true); });
    } catch (...) {
        closed_published_.store(false);  // no thread: close() publishes it later
    }
}

}  // namespace jsonlw::detail
