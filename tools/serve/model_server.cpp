// The model side of `jsonlw serve` (model_server.hpp).
#include "model_server.hpp"

#include "../demo/demo_perf_record.hpp"
#include "../demo/demo_writer_options.hpp"

#include <jsonlw/raw_output_snapshot.hpp>
#include <jsonlw/snapshot/asio_bridge.hpp>

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <pthread.h>

namespace jsonlw::serve {
namespace {

namespace snap = jsonlw::snapshot;

double steady_seconds(ServeClock::time_point t)
{
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

tools::DemoOptions engine_options(const ServeOptions& o)
{
    tools::DemoOptions m = o.model;
    if (!o.writers) m.first_gen_every = 0;  // first-gen rows are only for the raw output
    return m;
}

snap::SnapshotConfig stage_config(const ServeOptions& o, const tools::DemoOptions& m)
{
    snap::SnapshotConfig c = tools::demo_stage_config(m);
    if (!o.writers) c.first_gen = snap::FirstGenMode::off;
    return c;
}

RequestTrace request_line(RequestInfo&& info, const std::string& trace_id)
{
    RequestTrace req;
    req.trace_id = trace_id;
    req.session = std::move(info.session);
    req.server_arrival_time = steady_seconds(info.arrival);
    req.route = std::move(info.route);
    req.headers = std::move(info.headers);
    req.body = std::move(info.body);
    req.trace_context = info.trace;  // the client's, or the one made for it
    return req;
}

}  // namespace

ModelServer::ModelServer(boost::asio::io_context& loop, const ServeOptions& o)
    : loop_(loop),
      o_(o),
      model_(engine_options(o)),
      writers_(o.writers ? std::make_unique<ServeWriters>(loop.get_executor(), model_, o.writer_flush) : nullptr),
      config_(stage_config(o, model_)),
      stage_(snap::SnapshotStage::create(
          config_, model_.backend,
          snap::post_batches(loop.get_executor(),
                             [this](snap::SnapshotBatch&& b) { on_batch(std::move(b)); }))),
      engine_(model_, *stage_, loop.get_executor(),
              tools::EngineEvents{
                  [this](std::uint64_t id, ServeClock::time_point at) { on_scheduled(id, at); },
                  [this](const tools::EngineStep& st) { on_step(st); },
                  [this](std::uint64_t id, std::uint64_t last) { on_finished(id, last); }})
{
}

ModelServer::~ModelServer()
{
    if (engine_thread_.joinable()) {
        engine_.stop();
        engine_thread_.join();
    }
}

void ModelServer::start()
{
    if (writers_) writers_->start();
    engine_thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "serve-engine");
        engine_.run();
    });
}

std::shared_ptr<Generation> ModelServer::admit(CompletionRequest req, RequestInfo&& info,
                                               std::weak_ptr<GenerationListener> listener)
{
    auto g = std::make_shared<Generation>();
    g->id = next_id_++;
    g->response_id = fmt::format("{}-{}", req.endpoint == Endpoint::chat_completions ? "chatcmpl" : "cmpl",
                                 g->id);
    g->created = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
    g->trace_id = new_trace_id();
    g->session = info.session;
    g->trace = info.trace;
    g->arrival = info.arrival;
    g->request = std::move(req);
    g->listener = std::move(listener);
    g->token_ids.reserve(g->request.max_tokens);
    g->data.reserve(g->request.max_tokens);
    ++counters_.requests;
    ++counters_.generations;
    if (g->request.stream) ++counters_.streams;
    if (writers_) {
        RequestTrace line = request_line(std::move(info), g->trace_id);
        line.status = RequestTraceStatus::accepted;
        writers_->trace().record_request(std::move(line));
    }
    live_.emplace(g->id, g);
    g->enqueued = ServeClock::now();  // handed to the engine: the end of preprocessing
    engine_.admit(tools::EngineRequest{g->id, g->request.max_tokens, 0,
                                       std::uint32_t(g->id % tools::DemoEngine::topics),
                                       std::int32_t(g->id % model_.vocab)});
    return g;
}

void ModelServer::record_exchange(RequestInfo&& info, ExchangeEnd end)
{
    ++counters_.requests;
    ++counters_.by_status[end.http_status];
    if (!writers_) return;
    const std::string trace_id = new_trace_id();
    const TraceContext trace = info.trace;
    const std::string session = info.session;
    RequestTrace req = request_line(std::move(info), trace_id);
    req.status = end.request_status;
    req.validation_errors = std::move(end.validation_errors);
    writers_->trace().record_request(std::move(req));
    ResponseTrace resp;
    resp.trace_id = trace_id;
    resp.session = session;
    resp.status = end.response_status;
    if (end.http_status != 0) resp.http_status = end.http_status;
    resp.termination = std::move(end.termination);
    resp.response = TraceResponseBody{end.kind, std::move(end.body)};
    resp.trace_context = trace;
    writers_->trace().record_response(std::move(resp));
}

void ModelServer::end(Generation& g, GenerationEnd how, std::string body)
{
    if (g.ended) return;
    g.ended = true;
    const bool completed = how == GenerationEnd::completed;
    ++counters_.by_status[completed || g.request.stream ? 200 : 0];
    if (completed) ++counters_.completed;
    else if (how == GenerationEnd::client_disconnected) ++counters_.client_disconnected;
    else ++counters_.shutdown_aborted;
    counters_.tokens_streamed += g.settled;
    if (!g.engine_done) engine_.cancel(g.id);
    if (writers_) {
        // The raw output ends with the response, not with the engine: a client that left
        // after the last token was generated but before it was sent makes it aborted too, as
        // its response line and perf record say.
        OutputChunk last;
        last.request_id = g.id;
        last.streaming = g.request.stream;
        last.is_final = true;
        last.aborted = !completed;
        last.trace_context = g.trace;  // an output of no tokens starts here
        writers_->raw().on_chunk(last);
        ResponseTrace resp;
        resp.trace_id = g.trace_id;
        resp.session = g.session;
        resp.client_id = std::int64_t(g.id);
        resp.trace_context = g.trace;
        if (g.request.stream || completed) resp.http_status = 200;
        if (completed) {
            resp.status = ResponseTraceStatus::completed;
        } else {
            resp.status = ResponseTraceStatus::client_disconnected;
            resp.termination = TraceTermination{
                how == GenerationEnd::server_shutdown ? "server_shutdown" : "client_disconnected",
                fmt::format("after {} of {} tokens", g.settled, g.request.max_tokens)};
        }
        resp.response = g.request.stream ? TraceResponseBody{ResponseKind::sse_text, std::move(g.streamed)}
                                         : TraceResponseBody{ResponseKind::json, std::move(body)};
        writers_->trace().record_response(std::move(resp));

        writers_->perf().submit(tools::demo_perf_record(
            std::to_string(g.id), completed ? "complete" : "aborted", g.trace,
            tools::RequestStamps{g.arrival, g.enqueued, g.scheduled, g.first_token,
                                 g.server_first_token, g.last_token},
            std::int64_t(g.token_ids.size()), g.request.max_tokens));
    }
    live_.erase(g.id);  // g may be gone now unless its session still holds it
}

void ModelServer::stop_engine()
{
    for (const auto& [id, g] : live_)
        if (!g->engine_done) engine_.cancel(id);
    engine_.stop();
}

WritersOutcome ModelServer::finish(std::chrono::milliseconds stage_timeout)
{
    if (engine_thread_.joinable()) {
        engine_.stop();
        engine_thread_.join();
    }
    stage_->drain(stage_timeout);
    loop_.restart();
    loop_.poll();  // the stage's last batches (their generations are gone: slots released)
    WritersOutcome outcome;
    if (writers_) {
        bool closed = false;
        writers_->async_close([&](WritersOutcome r) {
            outcome = std::move(r);
            closed = true;
        });
        while (!closed && loop_.run_one() != 0) {
        }
    }
    return outcome;
}

Generation* ModelServer::find(std::uint64_t id) noexcept
{
    const auto it = live_.find(id);
    return it == live_.end() ? nullptr : it->second.get();
}

void ModelServer::on_scheduled(std::uint64_t id, ServeClock::time_point at)
{
    if (Generation* g = find(id)) g->scheduled = at;
}

// The engine's tokens of one step: they reach the raw-output hook now; their per-token data
// follows in on_batch, and the session sends a token once its data is there (or known lost).
void ModelServer::on_step(const tools::EngineStep& step)
{
    for (const tools::StepToken& t : step.tokens) {
        Generation* g = find(t.request_id);
        if (!g || g->ended) continue;
        if (g->token_ids.empty()) g->first_token = step.produced;
        g->last_token = step.produced;
        g->token_ids.push_back(t.token);
        g->data.emplace_back();
        if (!writers_) continue;
        OutputChunk c;
        c.request_id = t.request_id;
        c.text_diff = token_text(t.token);
        c.token_ids_diff = std::span<const std::int32_t>(&t.token, 1);
        c.token_data_follows = true;
        c.streaming = g->request.stream;
        if (g->token_ids.size() == 1) c.trace_context = g->trace;
        writers_->raw().on_chunk(c);
    }
}

// The stage's results of one step, in capture order: each row's data goes to its generation
// (and the raw output: the same TokenLogprob, so the response and the record agree value for
// value); the earlier positions of that generation still without data belong to steps the
// stage dropped, so they are settled as null. Each touched generation's session is told once.
void ModelServer::on_batch(snap::SnapshotBatch&& b)
{
    batches_seen_ = b.batch_seq + 1;
    if (!b.failed) {
        for (const snap::TokenSnapshot& row : b.rows) {
            Generation* g = find(row.request_id);
            if (!g || g->ended || row.step >= g->data.size()) continue;
            TokenLogprob lp = token_logprob(row, config_);
            if (writers_) {
                std::optional<FirstGenLogitsView> fg;
                for (const snap::FirstGenLogits& f : b.first_gen)
                    if (f.request_id == row.request_id && f.seq_index == row.seq_index)
                        fg = first_gen_view(f);
                writers_->raw().on_token_data(row.request_id, row.seq_index, row.step,
                                              std::span<const TokenLogprob>(&lp, 1), fg);
            }
            g->data[row.step] = std::move(lp);
            g->settled = std::max<std::size_t>(g->settled, row.step + 1);
            if (std::find(touched_.begin(), touched_.end(), g) == touched_.end())
                touched_.push_back(g);
        }
    }
    b.lease.release();
    for (Generation* g : touched_) tell(*g);
    touched_.clear();
    settle_finished();
}

void ModelServer::on_finished(std::uint64_t id, std::uint64_t last_batch)
{
    engine_done_.emplace_back(last_batch, id);  // in the engine's order: last_batch ascends
    settle_finished();
}

// Generations whose engine side finished and whose captured steps have all been delivered:
// every token is settled now.
void ModelServer::settle_finished()
{
    while (!engine_done_.empty() && engine_done_.front().first <= batches_seen_) {
        const std::uint64_t id = engine_done_.front().second;
        engine_done_.pop_front();
        Generation* g = find(id);
        if (!g || g->ended) continue;
        g->settled = g->token_ids.size();
        g->engine_done = true;
        tell(*g);
    }
}

void ModelServer::tell(Generation& g)
{
    if (auto l = g.listener.lock()) l->on_generation_progress();
}

}  // namespace jsonlw::serve
