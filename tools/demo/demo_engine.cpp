// jsonlw demo's engine (demo_engine.hpp): the decode loop, on its own thread.
#include "demo_engine.hpp"

#include <jsonlw/snapshot/reference.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <utility>

namespace jsonlw::tools {

namespace snap = jsonlw::snapshot;

DemoEngine::DemoEngine(const DemoOptions& o, snap::SnapshotStage& stage,
                       boost::asio::any_io_executor server, EngineEvents events)
    : o_(o), stage_(stage), server_(std::move(server)), events_(std::move(events))
{
}

void DemoEngine::admit(const EngineRequest& r)
{
    {
        std::lock_guard lock(admission_mutex_);
        admission_.push_back(r);
    }
    admission_cv_.notify_one();
}

void DemoEngine::cancel(std::uint64_t id)
{
    {
        std::lock_guard lock(admission_mutex_);
        cancelled_.push_back(id);
    }
    admission_cv_.notify_one();
}

void DemoEngine::stop()
{
    {
        std::lock_guard lock(admission_mutex_);
        stop_ = true;
    }
    admission_cv_.notify_one();
}

void DemoEngine::run()
{
    const int V = int(o_.vocab);
    const int usable = std::max(1, V - 16);
    const std::size_t width = snap::itemsize(o_.dtype);
    // Per-topic base logits: normal(0, 2), the last 16 ids masked to -inf (vocab padding),
    // stored in the engine's dtype; each step copies the rows and boosts one token.
    std::mt19937_64 rng(o_.seed);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::vector<std::vector<std::byte>> base(topics, std::vector<std::byte>(std::size_t(V) * width));
    for (auto& row : base)
        for (int i = 0; i < V; ++i)
            store(row.data(), i, i < usable ? normal(rng) : -std::numeric_limits<float>::infinity());
    std::vector<EngineRequest> active;
    std::vector<std::byte> logits;
    std::vector<std::int32_t> sampled;
    std::vector<snap::RowMeta> meta;
    std::uniform_real_distribution<double> unit(0, 1);
    std::uint64_t enqueued = 0;
    const auto forward_pass = std::chrono::microseconds(o_.step_us);
    auto next_step = DemoClock::now();
    for (;;) {
        {
            std::unique_lock lock(admission_mutex_);
            if (active.empty()) {
                admission_cv_.wait(lock, [&] { return stop_ || !admission_.empty() || !cancelled_.empty(); });
                next_step = DemoClock::now();
            }
            // Cancelled requests end before this step, whether decoding or still waiting.
            for (const std::uint64_t id : cancelled_) {
                const auto gone = [id](const EngineRequest& q) { return q.id == id; };
                const bool found = std::erase_if(active, gone) + std::erase_if(admission_, gone) != 0;
                if (found)
                    boost::asio::post(server_,
                                      [this, id, enqueued] { events_.finished(id, enqueued); });
            }
            cancelled_.clear();
            if (stop_ && active.empty() && admission_.empty()) return;
            if (active.empty() && admission_.empty()) continue;
            const auto now = DemoClock::now();
            while (!admission_.empty() && active.size() < o_.concurrency) {
                active.push_back(admission_.front());
                admission_.pop_front();
                boost::asio::post(server_, [this, id = active.back().id, now] {
                    events_.scheduled(id, now);
                });
            }
        }
        // The model's forward pass: the engine thread is busy this long per step.
        next_step += forward_pass;
        std::this_thread::sleep_until(next_step);
        if (DemoClock::now() > next_step + forward_pass) next_step = DemoClock::now();  // fell behind
        const int rows = int(active.size());
        EngineStep step;
        step.tokens.reserve(std::size_t(rows));
        logits.resize(std::size_t(rows) * std::size_t(V) * width);
        sampled.resize(std::size_t(rows));
        meta.resize(std::size_t(rows));
        for (int r = 0; r < rows; ++r) {
            EngineRequest& q = active[std::size_t(r)];
            std::byte* row = logits.data() + std::size_t(r) * std::size_t(V) * width;
            std::copy(base[q.topic].begin(), base[q.topic].end(), row);
            // The "model" strongly prefers one continuation; the sampler mostly takes it.
            const auto intended = std::int32_t(
                (std::uint64_t(std::uint32_t(q.prev)) * 2654435761u + q.step) % std::uint64_t(usable));
            store(row, intended, snap::load_logit(row, o_.dtype, intended) + 9.f);
            sampled[std::size_t(r)] = unit(rng) < 0.85 ? intended
                                                       : std::int32_t(rng() % std::uint64_t(usable));
            const bool first_gen = q.step == 0 && o_.first_gen_every != 0 &&
                                   q.id % o_.first_gen_every == 0;
            meta[std::size_t(r)] =
                snap::RowMeta{q.id, 0, q.step, std::uint8_t(first_gen ? snap::RowMeta::first_gen : 0)};
            step.tokens.push_back(StepToken{q.id, q.step, sampled[std::size_t(r)]});
        }
        // The tokens go to the server first: they are the engine's, and the stage's
        // results for them (posted by the sink during capture() on the CPU backend, later
        // on CUDA) then always find the output they belong to.
        step.produced = DemoClock::now();
        boost::asio::post(server_, [this, st = std::move(step)] { events_.step(st); });
        const snap::LogitsView view{logits.data(), o_.dtype, rows, V, V, -1};
        if (stage_.capture(view, sampled.data(), meta) == snap::CaptureResult::enqueued)
            ++enqueued;
        steps_.fetch_add(1, std::memory_order_relaxed);
        // Advance; finished requests leave the batch and tell the server.
        for (int r = 0; r < rows; ++r) {
            EngineRequest& q = active[std::size_t(r)];
            q.prev = sampled[std::size_t(r)];
            if (++q.step == q.max_tokens)
                boost::asio::post(server_,
                                  [this, id = q.id, enqueued] { events_.finished(id, enqueued); });
        }
        std::erase_if(active, [](const EngineRequest& q) { return q.step == q.max_tokens; });
    }
}

void DemoEngine::store(std::byte* row, int i, float x) const noexcept
{
    if (o_.dtype == snap::LogitDType::f32) {
        std::memcpy(row + std::size_t(i) * 4, &x, 4);
        return;
    }
    std::uint16_t h;
    if (o_.dtype == snap::LogitDType::f16) {
        h = snap::f32_to_f16_rne(x, nullptr);
    } else {
        std::uint32_t u;
        std::memcpy(&u, &x, 4);
        h = std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // finite inputs only
        if (std::isinf(x)) h = std::uint16_t(u >> 16);
    }
    std::memcpy(row + std::size_t(i) * 2, &h, 2);
}

}  // namespace jsonlw::tools
