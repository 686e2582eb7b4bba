// SinkDecorator: the base of a sink that wraps another — ChainSink, OtlpSink, the durable
// request trace's ledger, a sink of your own (docs/sinks.md). Every LineSink call goes on to
// the wrapped sink unless the decorator overrides it; append() is the decorator's to write.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <memory>
#include <utility>

namespace jsonlw {

// Called as the LineSink it is (start() on the writer's start() thread, the rest on its I/O
// thread, close_abandoned() on its strand); shares the sink it wraps, which serves only it.
class SinkDecorator : public LineSink {
public:
    explicit SinkDecorator(std::shared_ptr<LineSink> inner) : inner_(std::move(inner)) {}

    std::error_code start(const SinkContext& ctx) override { return inner_->start(ctx); }
    void after_batch() noexcept override { inner_->after_batch(); }
    std::error_code sync() noexcept override { return inner_->sync(); }
    std::error_code reopen() noexcept override { return inner_->reopen(); }
    std::optional<std::chrono::steady_clock::time_point> next_tick() const noexcept override
    {
        return inner_->next_tick();
    }
    void tick() noexcept override { inner_->tick(); }
    void close(bool durable) noexcept override { inner_->close(durable); }
    void close_abandoned() noexcept override { inner_->close_abandoned(); }
    std::vector<std::filesystem::path> files() const override { return inner_->files(); }
    std::filesystem::path file_path() const override { return inner_->file_path(); }
    std::uint64_t files_closed() const noexcept override { return inner_->files_closed(); }
    std::string describe(std::string_view key) const override { return inner_->describe(key); }

    // The sink this one wraps.
    const std::shared_ptr<LineSink>& inner() const noexcept { return inner_; }

protected:
    const std::shared_ptr<LineSink> inner_;
};

}  // namespace jsonlw
