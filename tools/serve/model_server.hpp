// The model side of `jsonlw serve`: admits checked completion requests to the demo's engine
// (a seeded synthetic model on its own thread, tools/demo/demo_engine.hpp), runs the snapshot
// stage on every decode step, turns the engine's tokens and the stage's per-token data into
// Generations that HTTP sessions answer from, and feeds the three writers: the request trace
// (every request, as received, and its response as sent), the raw output (every generated
// token with its logprobs, ranks and top-k, first-gen logits) and perf metrics (the server's
// own arrival, first-token and last-token times). Everything but the engine and the stage's
// workers runs on the loop thread that calls it; it owns the engine, its thread, the stage and
// the writers.
#pragma once

#include "../demo/demo_engine.hpp"
#include "generation.hpp"
#include "serve_counters.hpp"
#include "serve_options.hpp"
#include "serve_writers.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <boost/asio/io_context.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>

namespace jsonlw::serve {

// How a request that was not admitted ended, for its response line.
struct ExchangeEnd {
    int http_status = 0;  // 0: no response was sent
    ResponseKind kind = ResponseKind::json;
    std::string body;
    std::optional<TraceTermination> termination{};
    RequestTraceStatus request_status = RequestTraceStatus::rejected_400;
    std::optional<std::vector<TraceValidationError>> validation_errors{};
    ResponseTraceStatus response_status = ResponseTraceStatus::completed;
};

enum class GenerationEnd {
    completed,            // the response was written whole
    client_disconnected,  // the client went away (or stopped reading) first
    server_shutdown,      // SIGINT/SIGTERM ended it
};

class ModelServer {
public:
    ModelServer(boost::asio::io_context& loop, const ServeOptions& o);
    ~ModelServer();
    ModelServer(const ModelServer&) = delete;
    ModelServer& operator=(const ModelServer&) = delete;

    // Starts the writers and the engine's thread.
    void start();

    // A checked request, handed to the engine: its request line is written now.
    std::shared_ptr<Generation> admit(CompletionRequest req, RequestInfo&& info,
                                      std::weak_ptr<GenerationListener> listener);
    // A request that never reached the engine (an error, /health, /v1/models): both its lines.
    void record_exchange(RequestInfo&& info, ExchangeEnd end);
    // The generation's response ended: its raw output (aborted unless completed), response
    // line and perf record are written; the engine drops it if it was still decoding. `body`:
    // the JSON body of a non-streamed response (a stream's is g.streamed).
    void end(Generation& g, GenerationEnd how, std::string body = {});

    // SIGINT/SIGTERM, after the sessions ended their generations: no more requests; the
    // engine's thread ends once the active ones are done.
    void stop_engine();
    // After the loop stopped: joins the engine's thread and delivers the stage's last
    // batches, then closes the writers, running the loop until they are closed.
    WritersOutcome finish(std::chrono::milliseconds stage_timeout);

    ServeCounters& counters() noexcept { return counters_; }
    std::size_t live_generations() const noexcept { return live_.size(); }
    std::uint64_t steps() const noexcept { return engine_.steps(); }
    snapshot::SnapshotStats stage_stats() const { return stage_->stats(); }
    bool writers_on() const noexcept { return writers_ != nullptr; }

private:
    void on_scheduled(std::uint64_t id, ServeClock::time_point at);
    void on_step(const tools::EngineStep& step);
    void on_batch(snapshot::SnapshotBatch&& b);
    void on_finished(std::uint64_t id, std::uint64_t last_batch);
    void settle_finished();
    void tell(Generation& g);
    Generation* find(std::uint64_t id) noexcept;

    boost::asio::io_context& loop_;
    const ServeOptions& o_;
    tools::DemoOptions model_;  // the engine's options (first-gen rows off without writers)
    std::unique_ptr<ServeWriters> writers_;  // null with --writers off
    snapshot::SnapshotConfig config_;
    std::unique_ptr<snapshot::SnapshotStage> stage_;
    ServeCounters counters_;

    std::unordered_map<std::uint64_t, std::shared_ptr<Generation>> live_;
    std::uint64_t next_id_ = 1;
    std::uint64_t batches_seen_ = 0;
    std::deque<std::pair<std::uint64_t, std::uint64_t>> engine_done_;  // (last_batch, id)
    std::vector<Generation*> touched_;  // generations a batch added data to, told once
    tools::DemoEngine engine_;
    std::thread engine_thread_;
};

}  // namespace jsonlw::serve
