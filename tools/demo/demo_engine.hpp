// jsonlw demo's engine: the decode loop of a simulated LLM, on its own thread.
#pragma once

#include "demo_options.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

namespace jsonlw::tools {

using DemoClock = std::chrono::steady_clock;

// One generated token as the engine sends it to the server (before the stage sees the step).
struct StepToken {
    std::uint64_t request_id = 0;
    std::uint32_t step = 0;
    std::int32_t token = 0;
};

// A decode step's tokens, posted to the server's loop once per step.
struct EngineStep {
    DemoClock::time_point produced{};
    std::vector<StepToken> tokens;
};

// A request as the engine knows it.
struct EngineRequest {
    std::uint64_t id = 0;
    std::uint32_t max_tokens = 0;
    std::uint32_t step = 0;
    std::uint32_t topic = 0;  // which of the engine's base logit rows it decodes from
    std::int32_t prev = 0;    // the token it sampled last
};

// What the engine tells the server, each posted to the server's executor in the engine's
// order: a request was scheduled; a step's tokens; a request finished, with the number of
// steps the stage had enqueued by then (its results arrive in that order).
struct EngineEvents {
    std::function<void(std::uint64_t id, DemoClock::time_point at)> scheduled;
    std::function<void(const EngineStep&)> step;
    std::function<void(std::uint64_t id, std::uint64_t last_batch)> finished;
};

// The engine: run() on its own thread admits up to --concurrency requests, builds each
// step's seeded synthetic logits (per-topic rows in the engine's dtype), samples a token per
// row, posts the step's tokens to the server and then hands the step to the snapshot stage,
// never waiting on the server. admit() and stop() are the server's, from its loop's thread.
// Borrows the options and the stage, which outlive it.
class DemoEngine {
public:
    static constexpr std::uint32_t topics = 8;

    DemoEngine(const DemoOptions& o, snapshot::SnapshotStage& stage,
               boost::asio::any_io_executor server, EngineEvents events);

    // The server hands a request over (any thread).
    void admit(const EngineRequest& r);
    // The request ends now (its client went away): it leaves the batch before the next step
    // and its `finished` event follows as for a request that ran to its end (any thread).
    void cancel(std::uint64_t id);
    // No more requests: run() returns once the active ones are done (any thread).
    void stop();
    // The decode loop; returns after stop() once nothing is active.
    void run();
    // Decode steps so far (any thread).
    std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }

private:
    // Element i of a row in the engine's dtype (bf16 and fp16 rounded to nearest even).
    void store(std::byte* row, int i, float x) const noexcept;

    const DemoOptions& o_;
    snapshot::SnapshotStage& stage_;
    boost::asio::any_io_executor server_;
    EngineEvents events_;

    std::mutex admission_mutex_;
    std::condition_variable admission_cv_;
    std::deque<EngineRequest> admission_;  // under admission_mutex_
    std::vector<std::uint64_t> cancelled_;  // under admission_mutex_
    bool stop_ = false;                    // under admission_mutex_
    std::atomic<std::uint64_t> steps_{0};
};

}  // namespace jsonlw::tools
