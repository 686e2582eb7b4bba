// LedgerSink: the durable request trace's sink decorator — the inner sink (the hour folders'
// PartitionedFileSink, or the sink the options name) writes each group, the group's
// AppendResult goes into the TraceAccounting ledger, and the ledger's sidecar is published
// with the writer's own counters: after the first batch, at most every publish_interval
// after, after a batch with a failed append, and once closed (at close, or — from a thread
// of its own — when close runs out of time). The ledger's persisted_end means fsync'ed, so
// under fsync_batch each group is synced here, before the ledger sees it, rather than by the
// engine's sync() after it (docs/sinks.md, "The contract"). Called by the writer's engine
// as every LineSink is (start() on the start() thread, close_abandoned() on the strand, the
// rest on the I/O thread); owns its publisher thread, shares the ledger with the writer.
#pragma once

#include "trace_accounting.hpp"

#include <jsonlw/sinks/sink_decorator.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

namespace jsonlw::detail {

class LedgerSink final : public SinkDecorator {
public:
    LedgerSink(std::shared_ptr<LineSink> inner, std::shared_ptr<TraceAccounting> ledger,
               std::chrono::steady_clock::duration publish_interval);
    ~LedgerSink() override;

    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;
    void after_batch() noexcept override;
    void close(bool durable) noexcept override;
    void close_abandoned() noexcept override;

private:
    WriterStats counts() const noexcept;

    const std::shared_ptr<TraceAccounting> ledger_;
    const std::chrono::steady_clock::duration publish_interval_;
    std::function<WriterStats()> writer_stats_;  // set by start()
    std::atomic<bool> started_{false};
    bool batch_failed_ = false;                  // I/O thread
    bool durable_ = false;                       // fsync_batch (set by start())
    bool synced_ = false;  // the last append's sync already ran (I/O thread)
    // A closed sidecar was published, or is being by publisher_: any thread.
    std::atomic<bool> closed_published_{false};
    // Publishes the closed sidecar when close times out (the I/O thread may be stuck in an
    // append, and the strand must not block); joined by the destructor.
    std::thread publisher_;
};

}  // namespace jsonlw::detail
