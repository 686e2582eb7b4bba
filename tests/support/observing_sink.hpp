// ObservingSink: a LineSink decorator for tests — forwards every call to the sink it wraps
// and records the lifecycle calls the engine makes (after_batch, close, close_abandoned):
// how often, on which thread, and what the writer's counters said at each after_batch.
// Called by the writer's engine as every LineSink is; the readers from any thread.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace jsonlw_test {

class ObservingSink final : public jsonlw::LineSink {
public:
    explicit ObservingSink(std::shared_ptr<jsonlw::LineSink> inner) : inner_(std::move(inner)) {}

    // Runs inside close(), before the inner sink closes (set before start()).
    void on_close(std::function<void()> f) { on_close_ = std::move(f); }

    std::error_code start(const jsonlw::SinkContext& ctx) override
    {
        stats_ = ctx.writer_stats;
        return inner_->start(ctx);
    }
    jsonlw::AppendResult append(std::string_view key, const jsonlw::Lines& lines) noexcept override
    {
        return inner_->append(key, lines);
    }
    void after_batch() noexcept override
    {
        const jsonlw::WriterStats s = stats_();
        std::lock_guard lock(mu_);
        written_at_batches_.push_back(s.written);
    }
    std::error_code sync() noexcept override { return inner_->sync(); }
    std::error_code reopen() noexcept override { return inner_->reopen(); }
    void close(bool durable) noexcept override
    {
        ++closes_;
        close_thread_ = std::this_thread::get_id();
        if (on_close_) on_close_();
        inner_->close(durable);
    }
    void close_abandoned() noexcept override
    {
        abandoned_thread_ = std::this_thread::get_id();
        ++abandoned_;
        inner_->close_abandoned();
    }
    std::vector<std::filesystem::path> files() const override { return inner_->files(); }
    std::string describe(std::string_view key) const override { return inner_->describe(key); }

    int closes() const { return closes_.load(); }
    int abandoned() const { return abandoned_.load(); }
    std::thread::id close_thread() const { return close_thread_; }
    std::thread::id abandoned_thread() const { return abandoned_thread_; }
    // stats().written as each after_batch() saw it, in order.
    std::vector<std::uint64_t> written_at_batches() const
    {
        std::lock_guard lock(mu_);
        return written_at_batches_;
    }

private:
    std::shared_ptr<jsonlw::LineSink> inner_;
    std::function<jsonlw::WriterStats()> stats_;
    std::function<void()> on_close_;
    std::atomic<int> closes_{0}, abandoned_{0};
    std::thread::id close_thread_, abandoned_thread_;
    mutable std::mutex mu_;
    std::vector<std::uint64_t> written_at_batches_;
};

}  // namespace jsonlw_test
