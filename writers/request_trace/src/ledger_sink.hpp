// LedgerSink: the durable request trace's sink decorator — the inner sink (the hour folders'
// PartitionedFileSink, or the sink the options name) writes each group, then the group's
// AppendResult goes into the TraceAccounting ledger that the sidecar publishes. Called by the
// writer's engine as every LineSink is (the I/O thread); shares the ledger with the writer.
#pragma once

#include "trace_accounting.hpp"

#include <jsonlw/sinks/line_sink.hpp>

#include <memory>
#include <utility>

namespace jsonlw::detail {

class LedgerSink final : public LineSink {
public:
    LedgerSink(std::shared_ptr<LineSink> inner, std::shared_ptr<TraceAccounting> ledger)
        : inner_(std::move(inner)), ledger_(std::move(ledger))
    {
    }

    std::error_code start(const SinkContext& ctx) override { return inner_->start(ctx); }
    AppendResult append(std::string_view key, const Lines& lines) noexcept override
    {
        const AppendResult r = inner_->append(key, lines);
        try {
            ledger_->on_append(key, lines, r);
        } catch (...) {
            // Out of memory: the sidecar misses this extent; the records are counted anyway.
        }
        return r;
    }
    std::error_code sync() noexcept override { return inner_->sync(); }
    std::error_code reopen() noexcept override { return inner_->reopen(); }
    std::optional<std::chrono::steady_clock::time_point> next_tick() const noexcept override
    {
        return inner_->next_tick();
    }
    void tick() noexcept override { inner_->tick(); }
    void close(bool durable) noexcept override { inner_->close(durable); }
    std::vector<std::filesystem::path> files() const override { return inner_->files(); }
    std::string describe(std::string_view key) const override { return inner_->describe(key); }

private:
    std::shared_ptr<LineSink> inner_;
    std::shared_ptr<TraceAccounting> ledger_;
};

}  // namespace jsonlw::detail
