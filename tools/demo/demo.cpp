// jsonlw demo: a simulated LLM server writing all three record kinds, then a report.
//
// Two sides, as in a real server. The *server* is an Asio io_context on this thread: requests
// arrive on it (Poisson), are traced (a request line whose credentials get redacted), and the
// tokens come back to it as snapshot batches, one post per decode step, which become
// raw-output chunks; a finished request gets its response line and its perf-metrics record.
// The *engine* (demo_engine.hpp) is a thread running the decode loop: it admits up to
// --concurrency requests, builds each step's seeded synthetic logits, samples a token per
// row, sends the step's tokens to the server (the engine owns them: every token reaches the
// raw-output hook whatever the stage does), and hands the step to the snapshot stage (CUDA
// when a GPU is present, else the CPU), whose per-token data follows on its own (a step it
// dropped leaves those positions null, counted), never waiting on the server beyond
// --stage-wait-ms.
//
// At the end it checks, per writer, that every record it should have received (per request
// one request line, one response line, one perf record, one raw output) was written or
// dropped with a counted reason (demo_accounting.hpp), and prints it (demo_summary.hpp).
//
// For shippers (docs/shipping.md): --envelope numbers every line per writer and writes
// writers.json after close; --rotate-bytes/--rotate-interval-ms rotate the perf-metrics file;
// --kafka also sends every line the writers append through a KafkaSink to an in-process
// mock cluster and reads it back. The demo makes each writer's file sink itself (a FileSink
// for perf metrics, PartitionedFileSinks for the hour folders), so --retain-* reach all three
// and, at the end, each sink's counters reconcile what it counted written with the lines found
// on disk (DiskCheck, demo_accounting.hpp).
#include "../commands.hpp"
#include "demo_accounting.hpp"
#include "demo_engine.hpp"
#include "demo_kafka.hpp"
#include "demo_options.hpp"
#include "demo_perf_record.hpp"
#include "demo_summary.hpp"
#include "demo_writer_options.hpp"
#include "output_dir.hpp"
#include "slow_disk.hpp"
#include "thread_stats.hpp"

#include <jsonlw/file_io.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_snapshot.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/report/report.hpp>
#include <jsonlw/request_trace_writer.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>
#include <jsonlw/snapshot/asio_bridge.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>
#include <jsonlw/trace_context.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <pthread.h>

namespace jsonlw::tools {
namespace {

namespace snap = jsonlw::snapshot;
namespace asio = boost::asio;
using Clock = DemoClock;

double steady_seconds(Clock::time_point t)
{
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The demo's "tokenizer": token id -> a word (ids past the list wrap around).
constexpr const char* words[] = {
    "the", "model", "writes", "records", "without", "blocking", "its", "loop", "and", "every",
    "line", "is", "valid", "JSON", "a", "token", "per", "step", "from", "GPU", "to", "disk",
    "fast", "batch", "queue", "never", "loses", "count", "drop", "we", "measure", "what",
    "matters", "latency", "throughput", "in", "order", "on", "time", "with", "care", "so",
    "that", "readers", "can", "trust", "files", "later", ".", ",", "!", "?", "of", "it",
    "runs", "here", "now", "again", "each", "request", "gets", "answer", "done", "ok"};
constexpr std::size_t num_words = sizeof(words) / sizeof(words[0]);

// What the server knows about a request.
struct ServerRequest {
    std::uint64_t id = 0;
    std::string trace_id;
    std::string session;
    Clock::time_point arrival{};    // HTTP arrival at the server
    Clock::time_point enqueued{};   // handed to the engine
    Clock::time_point scheduled{};
    Clock::time_point first_token{};         // the engine produced it (capture)
    Clock::time_point server_first_token{};  // the server sent it
    Clock::time_point last_token{};
    std::uint32_t max_tokens = 0;
    std::uint32_t tokens_seen = 0;
    std::string sse;               // the response body as the client saw it
    // The client's traceparent header as the server parsed it: stamped on the request's raw
    // output, response line and perf record (its request line reads the header itself).
    std::optional<TraceContext> trace{};
};

// A client's traceparent for a new request: random trace and parent ids, sampled
// (spec/20-http_request_header_format.md in github.com/w3c/trace-context: ids not all zero).
std::string client_traceparent(std::mt19937_64& rng)
{
    TraceContext tc;
    for (const std::span<std::uint8_t> id : {std::span<std::uint8_t>(tc.trace_id),
                                             std::span<std::uint8_t>(tc.span_id)}) {
        for (std::uint8_t& b : id) b = std::uint8_t(rng());
        id.back() |= 1;  // never all zeros
    }
    tc.flags = TraceContext::flag_sampled;
    return tc.traceparent();
}


class Demo {
public:
    explicit Demo(const DemoOptions& o)
        : o_(o),
          kafka_(o.kafka ? std::make_unique<KafkaShip>() : nullptr),
          raw_sink_(std::make_shared<PartitionedFileSink>(
              PartitionedFileSinkOptions{.retention = demo_retention(o)})),
          trace_sink_(std::make_shared<PartitionedFileSink>(
              PartitionedFileSinkOptions{.retention = demo_retention(o)})),
          perf_sink_(std::make_shared<FileSink>(FileSinkOptions{.rotation = {
              .rotate_bytes = o.rotate_bytes,
              .rotate_interval = std::chrono::milliseconds(o.rotate_interval_ms),
              .retention = demo_retention(o)}})),
          raw_(loop_.get_executor(), demo_raw_options(o, file_io(), teed("raw_output", raw_sink_))),
          trace_(loop_.get_executor(),
                 demo_trace_options(o, file_io(), teed("request_trace", trace_sink_))),
          perf_(loop_.get_executor(), o.out / "perf_metrics", "server",
                demo_perf_options(o, file_io(), teed("perf_metrics", perf_sink_))),
          config_(demo_stage_config(o)),
          stage_(snap::SnapshotStage::create(
              config_, o.backend,
              snap::post_batches(loop_.get_executor(),
                                 [this](snap::SnapshotBatch&& b) { on_batch(std::move(b)); }))),
          arrival_timer_(loop_),
          server_rng_(o.seed ^ 0x5eedu),
          client_rng_(o.seed ^ 0x7aceu),
          engine_(o_, *stage_, loop_.get_executor(),
                  EngineEvents{
                      [this](std::uint64_t id, Clock::time_point at) { on_scheduled(id, at); },
                      [this](const EngineStep& st) { on_step(st); },
                      [this](std::uint64_t id, std::uint64_t last) { on_finished(id, last); }})
    {
    }

    int run(const ProgressOptions& progress_options)
    {
        if (kafka_) kafka_->start();  // the consumer that reads the topics back
        raw_.start();
        trace_.start();
        perf_.start();
        const auto t0 = Clock::now();
        schedule_arrival();
        ProgressOptions po = progress_options;
        po.bytes = false;
        progress_.emplace("demo: requests finished", o_.requests, po);
        pthread_setname_np(pthread_self(), "demo-loop");
        std::thread engine([this] {
            pthread_setname_np(pthread_self(), "demo-engine");
            engine_.run();
            // Taken here, after the last request was answered (that stops the engine), while
            // this thread is still there to be counted.
            if (o_.thread_stats) thread_stats_ = read_thread_stats();
        });
        loop_.run();  // until every request has its response (finish_ready stops it)
        engine.join();
        progress_->finish();
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

        // Every enqueued step has reached the loop (and was handled above); close the writers.
        stage_->drain(std::chrono::seconds(10));
        loop_.restart();
        CloseReport reports[3];
        int open_writers = 3;
        const auto closed = [&](int i) {
            return [&, i](error_code, CloseReport r) {
                reports[i] = std::move(r);
                --open_writers;
            };
        };
        raw_.async_close(closed(0));
        trace_.async_close(closed(1));
        perf_.async_close(closed(2));
        loop_.run();  // close handlers run here, on this thread
        return summarize(seconds, reports);
    }

private:
    // The writers' FileIo: a slow disk (--slow-disk-us); null, the writers' POSIX default,
    // otherwise.
    std::shared_ptr<FileIo> file_io() const
    {
        if (!o_.slow_disk_us) return nullptr;
        return std::make_shared<SlowDisk>(nullptr, std::chrono::microseconds(o_.slow_disk_us));
    }

    // A writer's sink: its file sink, teed with the kind's Kafka sink under --kafka.
    std::shared_ptr<LineSink> teed(const char* kind, std::shared_ptr<LineSink> files) const
    {
        return kafka_ ? kafka_->sink(kind, std::move(files)) : std::move(files);
    }

    // --- the server side (the loop's thread) --------------------------------------------
    void schedule_arrival()
    {
        if (arrived_ == o_.requests) return;
        std::exponential_distribution<double> gap(o_.rate);
        const auto wait = std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(gap(server_rng_)));
        arrival_timer_.expires_after(wait);
        arrival_timer_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            arrive();
            schedule_arrival();
        });
    }

    void arrive()
    {
        const std::uint64_t id = 1000 + arrived_++;
        std::uniform_int_distribution<std::uint32_t> len(o_.min_tokens, o_.max_tokens);
        ServerRequest& r = server_[id];
        r.id = id;
        r.trace_id = new_trace_id();
        r.session = fmt::format("user-{}@demo", id % 97);
        r.arrival = Clock::now();
        r.max_tokens = len(server_rng_);
        RequestTrace req;
        req.trace_id = r.trace_id;
        req.session = r.session;
        req.server_arrival_time = steady_seconds(r.arrival);
        req.route = "/v1/completions";
        req.headers = {{"Content-Type", "application/json"},
                       {"Authorization", "Bearer sk-demo-" + std::to_string(id)},
                       {"X-Api-Key", "demo-key"},
                       {"Cookie", "session=" + std::to_string(id)},
                       {"User-Agent", "jsonlw-demo/1"},
                       {"traceparent", client_traceparent(client_rng_)}};
        // What a server does with it: the same context on the request's other records.
        r.trace = trace_context_of(req.headers).context;
        req.body = fmt::format(
            R"({{"model":"demo","prompt":"Tell me about record {}","max_tokens":{},"stream":true,"logprobs":{}}})",
            id, r.max_tokens, o_.top_k);
        trace_.record_request(std::move(req));
        r.enqueued = Clock::now();  // handed to the engine: the end of preprocessing
        engine_.admit(EngineRequest{id, r.max_tokens, 0, std::uint32_t(id % DemoEngine::topics),
                                    std::int32_t(id % o_.vocab)});
    }

    void on_scheduled(std::uint64_t id, Clock::time_point at)
    {
        if (auto it = server_.find(id); it != server_.end()) it->second.scheduled = at;
    }

    // The engine's tokens of one step: they reach the raw-output hook now, whatever the stage
    // does with the step; its per-token data follows in on_batch.
    void on_step(const EngineStep& step)
    {
        if (o_.server_us) spin_for(std::chrono::microseconds(o_.server_us));
        for (const StepToken& t : step.tokens) {
            auto it = server_.find(t.request_id);
            if (it == server_.end()) continue;
            ServerRequest& r = it->second;
            if (r.tokens_seen == 0) {
                r.first_token = step.produced;
                r.server_first_token = Clock::now();
            }
            r.last_token = step.produced;
            ++r.tokens_seen;
            const char* word = words[std::size_t(t.token) % num_words];
            text_.assign(r.tokens_seen == 1 ? "" : " ").append(word);
            OutputChunk c;
            c.request_id = t.request_id;
            c.output_index = 0;
            c.text_diff = text_;
            c.token_ids_diff = std::span<const std::int32_t>(&t.token, 1);
            c.token_data_follows = true;  // logprobs, ranks, top-k: from the stage, in on_batch
            c.streaming = true;
            if (r.tokens_seen == 1) c.trace_context = r.trace;  // the output's first chunk
            raw_.on_chunk(c);
            fmt::format_to(std::back_inserter(r.sse),
                           "data: {{\"id\":\"cmpl-{}\",\"choices\":[{{\"index\":0,\"text\":\"{}\"}}]}}\n\n",
                           r.id, text_);
        }
    }

    // The stage's results of one step: copied into the pending outputs, the slot released at
    // once (record_token_data), then requests this batch settles are answered.
    void on_batch(snap::SnapshotBatch&& b)
    {
        batches_seen_ = b.batch_seq + 1;
        record_token_data(raw_, std::move(b), config_);
        finish_ready();
    }

    void on_finished(std::uint64_t id, std::uint64_t last_batch)
    {
        // Posted in the engine's order, so last_batch never decreases along the queue.
        engine_done_.emplace_back(last_batch, id);
        finish_ready();
    }

    // Requests whose engine side finished and whose captured steps have all been delivered
    // (delivery is in capture order: a request is settled once the batch count it finished
    // at has arrived). O(1) per request.
    void finish_ready()
    {
        while (!engine_done_.empty() && engine_done_.front().first <= batches_seen_) {
            const std::uint64_t id = engine_done_.front().second;
            engine_done_.pop_front();
            if (auto it = server_.find(id); it != server_.end()) {
                respond(it->second);
                server_.erase(it);
            }
        }
        if (finished_ == o_.requests) {
            arrival_timer_.cancel();
            engine_.stop();
            loop_.stop();  // the writers' drains keep the loop busy; run() returns here
        }
    }

    static void spin_for(std::chrono::microseconds d) noexcept
    {
        const auto until = Clock::now() + d;
        while (Clock::now() < until) {
        }
    }

    void respond(ServerRequest& r)
    {
        // The final chunk: every token of the output is in; the positions whose step the
        // stage dropped stay null and are counted in the record's logprobs_missing.
        OutputChunk last;
        last.request_id = r.id;
        last.output_index = 0;
        last.streaming = true;
        last.is_final = true;
        last.trace_context = r.trace;  // an output of no tokens starts here
        raw_.on_chunk(last);
        r.sse += "data: [DONE]\n\n";
        ResponseTrace resp;
        resp.trace_id = r.trace_id;
        resp.session = r.session;
        resp.client_id = std::int64_t(r.id);
        resp.http_status = 200;
        resp.response = TraceResponseBody{ResponseKind::sse_text, std::move(r.sse)};
        resp.trace_context = r.trace;
        trace_.record_response(std::move(resp));

        perf_.submit(demo_perf_record(std::to_string(r.id), "complete", r.trace,
                                      RequestStamps{r.arrival, r.enqueued, r.scheduled,
                                                    r.first_token, r.server_first_token,
                                                    r.last_token},
                                      std::int64_t(r.tokens_seen), r.max_tokens));
        ++finished_;
        progress_->advance(1);
    }

    int summarize(double seconds, const CloseReport (&reports)[3])
    {
        DemoOutcome r;
        r.seconds = seconds;
        r.finished = finished_;
        r.steps = engine_.steps();
        r.backend = stage_->backend();
        r.stage = stage_->stats();
        r.raw = raw_.counters();
        r.trace_metadata_captured = trace_.metadata_captured();
        for (std::size_t i = 0; i < 3; ++i) r.reports[i] = reports[i];
        r.writer_ids = {raw_.writer_id(), trace_.writer_id(), perf_.writer_id()};
        r.perf_files = perf_sink_->files();
        r.sinks = {raw_sink_->counters(), trace_sink_->counters(), perf_sink_->counters()};
        r.thread_stats = std::move(thread_stats_);
        return tools::summarize(o_, r, kafka_.get());
    }

    DemoOptions o_;
    asio::io_context loop_;
    std::unique_ptr<KafkaShip> kafka_;  // --kafka; outlives the file writers that feed it
    // The writers' file sinks (read for their counters once the writers closed).
    std::shared_ptr<PartitionedFileSink> raw_sink_, trace_sink_;
    std::shared_ptr<FileSink> perf_sink_;
    RawOutputWriter raw_;
    RequestTraceWriter trace_;
    PerfMetricsWriter perf_;
    snap::SnapshotConfig config_;
    std::unique_ptr<snap::SnapshotStage> stage_;
    asio::steady_timer arrival_timer_;
    std::mt19937_64 server_rng_;
    std::mt19937_64 client_rng_;  // the clients' trace ids (apart: lengths stay per --seed)
    std::optional<Progress> progress_;

    // the server side (loop thread only)
    std::map<std::uint64_t, ServerRequest> server_;
    std::uint64_t arrived_ = 0;
    std::uint64_t finished_ = 0;
    std::uint64_t batches_seen_ = 0;
    std::deque<std::pair<std::uint64_t, std::uint64_t>> engine_done_;  // (last_batch, id)
    std::string text_;  // one token's text, reused
    std::vector<ThreadStat> thread_stats_;

    DemoEngine engine_;  // its thread runs in run()
};

}  // namespace

int in_process_demo_main(std::span<char*> args)
{
    DemoOptions o;
    std::string error;
    if (!parse_demo_options(args, o, error)) {
        std::fprintf(stderr, "jsonlw demo: %s (see jsonlw --help)\n", error.c_str());
        return 2;
    }
    if (o.kafka && !JSONLW_HAVE_KAFKA) {
        std::fprintf(stderr, "jsonlw demo: --kafka: this jsonlw was built without Kafka "
                             "(librdkafka not found; rebuild with librdkafka-dev installed)\n");
        return 2;
    }
    if (!fresh_output_dir(o.out, "demo")) return 2;
    int status = 0;
    try {
        Demo demo(o);
        status = demo.run(ProgressOptions{});
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jsonlw demo: %s\n", e.what());
        return 1;
    }
    std::printf("\n");
    std::fflush(stdout);
    // Then the report over what was just written, as `jsonlw report DIR` prints it.
    std::string dir = o.out.string();
    char* report_args[] = {dir.data()};
    const int report_status = report_main(std::span<char*>(report_args, 1));
    return status != 0 ? status : report_status;
}

}  // namespace jsonlw::tools
