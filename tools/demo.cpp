// jsonlw demo: a simulated LLM server writing all three record kinds, then a report.
//
// Two sides, as in a real server. The *server* is an Asio io_context on this thread: requests
// arrive on it (Poisson), are traced (a request line whose credentials get redacted), and the
// tokens come back to it as snapshot batches, one post per decode step, which become
// raw-output chunks; a finished request gets its response line and its perf-metrics record.
// The *engine* is a thread running the decode loop: it admits up to --concurrency requests,
// builds each step's seeded synthetic logits, samples a token per row, sends the step's tokens
// to the server (the engine owns them: every token reaches the raw-output hook whatever the
// stage does), and hands the step to the snapshot stage (CUDA when a GPU is present, else the
// CPU), whose per-token data follows on its own (a step it dropped leaves those positions
// null, counted), never waiting on the server beyond --stage-wait-ms.
//
// At the end it checks, per writer, that every record it should have received (per request
// one request line, one response line, one perf record, one raw output) was written or
// dropped with a counted reason (demo_accounting.hpp).
//
// For shippers (docs/shipping.md): --envelope numbers every line per writer and writes
// writers.json after close; --rotate-bytes/--rotate-interval-ms rotate the perf-metrics file;
// --kafka also sends every line the writers append through KafkaJsonWriter to an in-process
// mock cluster and reads it back.
#include "commands.hpp"
#include "demo_accounting.hpp"
#include "demo_kafka.hpp"
#include "demo_options.hpp"
#include "progress.hpp"
#include "slow_disk.hpp"
#include "thread_stats.hpp"

#include <jsonlw/file_io.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_snapshot.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/request_trace_writer.hpp>
#include <jsonlw/snapshot/asio_bridge.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
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
using Clock = std::chrono::steady_clock;

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
};

// One generated token as the engine sends it to the server (before the stage sees the step).
struct StepToken {
    std::uint64_t request_id = 0;
    std::uint32_t step = 0;
    std::int32_t token = 0;
};

// A decode step's tokens, posted to the loop once per step.
struct EngineStep {
    Clock::time_point produced{};
    std::vector<StepToken> tokens;
};

// What the engine knows about a request.
struct EngineRequest {
    std::uint64_t id = 0;
    std::uint32_t max_tokens = 0;
    std::uint32_t step = 0;
    std::uint32_t topic = 0;
    std::int32_t prev = 0;
};

// The three writers' folders under --out, in the order of the summary's rows (writers.json
// and the Kafka topics use them as the kind's name).
constexpr auto& kinds = demo_kinds;


class Demo {
public:
    explicit Demo(const DemoOptions& o)
        : o_(o),
          kafka_(o.kafka ? std::make_unique<KafkaShip>(loop_.get_executor()) : nullptr),
          raw_(loop_.get_executor(), raw_options(o, file_io("raw_output"))),
          trace_(loop_.get_executor(), trace_options(o, file_io("request_trace"))),
          perf_(loop_.get_executor(), o.out / "perf_metrics", "server",
                perf_options(o, file_io("perf_metrics"))),
          arrival_timer_(loop_),
          server_rng_(o.seed ^ 0x5eedu)
    {
        snap::SnapshotConfig sc;
        sc.k = o.top_k;
        sc.max_rows = int(o.concurrency);
        sc.max_vocab = int(o.vocab);
        sc.first_gen = snap::FirstGenMode::Float16Compat;
        sc.max_first_gen_rows_per_step = 8;
        sc.ring_slots = o.ring_slots;
        sc.slot_wait = std::chrono::milliseconds(o.stage_wait_ms);
        sc.cpu_threads = o.stage_threads;
        sc.cpu_worker_nice = o.stage_nice;
        config_ = sc;
        stage_ = snap::SnapshotStage::create(
            sc, o.backend,
            snap::post_batches(loop_.get_executor(),
                               [this](snap::SnapshotBatch&& b) { on_batch(std::move(b)); }));
    }

    int run(const ProgressOptions& progress_options)
    {
        if (kafka_) kafka_->start();  // before the file writers: their first line is teed
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
            engine_loop();
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
        // The producers close after the file writers: by then every line has been teed.
        const auto closed = [&](int i) {
            return [&, i](error_code, CloseReport r) {
                reports[i] = std::move(r);
                if (--open_writers == 0 && kafka_) kafka_->close();
            };
        };
        raw_.async_close(closed(0));
        trace_.async_close(closed(1));
        perf_.async_close(closed(2));
        loop_.run();  // close handlers run here, on this thread
        return summarize(seconds, reports);
    }

private:
    // The writer's FileIo: the Kafka tee (--kafka), behind a slow disk (--slow-disk-us);
    // null, the writers' POSIX default, when neither is asked for.
    std::shared_ptr<FileIo> file_io(std::string_view kind) const
    {
        std::shared_ptr<FileIo> io = kafka_ ? kafka_->tee(kind) : nullptr;
        if (o_.slow_disk_us)
            io = std::make_shared<SlowDisk>(std::move(io), std::chrono::microseconds(o_.slow_disk_us));
        return io;
    }

    static RawOutputOptions raw_options(const DemoOptions& o, std::shared_ptr<FileIo> io)
    {
        RawOutputOptions r;
        r.directory = o.out / "raw_output";
        r.max_pending = o.concurrency * 4 + 64;
        r.queue_capacity = o.writer_queue ? o.writer_queue : 4096;
        r.file_io = std::move(io);
        r.envelope = o.envelope;
        return r;
    }

    static RequestTraceOptions trace_options(const DemoOptions& o, std::shared_ptr<FileIo> io)
    {
        RequestTraceOptions r;
        r.directory = o.out / "request_trace";
        if (o.writer_queue) r.queue_capacity = o.writer_queue;
        r.file_io = std::move(io);
        r.envelope = o.envelope;
        return r;
    }

    // Rotation is the perf-metrics writer's alone: the other two write hour folders.
    static PerfMetricsOptions perf_options(const DemoOptions& o, std::shared_ptr<FileIo> io)
    {
        PerfMetricsOptions p;  // its queue is TensorRT-LLM's 1024: --writer-queue leaves it
        p.file_io = std::move(io);
        p.rotate_bytes = o.rotate_bytes;
        p.rotate_interval = std::chrono::milliseconds(o.rotate_interval_ms);
        p.envelope = o.envelope;
        return p;
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
                       {"User-Agent", "jsonlw-demo/1"}};
        req.body = fmt::format(
            R"({{"model":"demo","prompt":"Tell me about record {}","max_tokens":{},"stream":true,"logprobs":{}}})",
            id, r.max_tokens, o_.top_k);
        trace_.record_request(std::move(req));
        r.enqueued = Clock::now();  // handed to the engine: the end of preprocessing
        {
            std::lock_guard lock(admission_mutex_);
            admission_.push_back(EngineRequest{id, r.max_tokens, 0, std::uint32_t(id % topics),
                                               std::int32_t(id % o_.vocab)});
        }
        admission_cv_.notify_one();
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
            {
                std::lock_guard lock(admission_mutex_);
                engine_stop_ = true;
            }
            admission_cv_.notify_one();
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
        raw_.on_chunk(last);
        r.sse += "data: [DONE]\n\n";
        ResponseTrace resp;
        resp.trace_id = r.trace_id;
        resp.session = r.session;
        resp.client_id = std::int64_t(r.id);
        resp.http_status = 200;
        resp.response = TraceResponseBody{ResponseKind::sse_text, std::move(r.sse)};
        trace_.record_response(std::move(resp));

        PerfMetricsRecord rec;
        rec.request_id = std::to_string(r.id);
        PhaseRecord& p = rec.server.emplace();
        const auto s = [](Clock::time_point t) -> std::optional<double> {
            if (t == Clock::time_point{}) return std::nullopt;
            return steady_seconds(t);
        };
        p.first_iter = 0;
        p.last_iter = std::int64_t(r.tokens_seen) - 1;
        p.timing_metrics.arrival_time = s(r.enqueued);
        p.timing_metrics.server_arrival_time = s(r.arrival);
        p.timing_metrics.first_scheduled_time = s(r.scheduled);
        p.timing_metrics.first_token_time = s(r.first_token);
        p.timing_metrics.server_first_token_time = s(r.server_first_token);
        p.timing_metrics.last_token_time = s(r.last_token);
        const std::int64_t blocks = (std::int64_t(r.max_tokens) + 63) / 64 + 1;
        p.kv_cache_metrics = KvCacheMetrics{blocks, blocks, 0, blocks, std::nullopt};
        perf_.submit(std::move(rec));
        ++finished_;
        progress_->advance(1);
    }

    // --- the engine (its own thread) ----------------------------------------------------
    static constexpr std::uint32_t topics = 8;

    void engine_loop()
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
        auto next_step = Clock::now();
        for (;;) {
            {
                std::unique_lock lock(admission_mutex_);
                if (active.empty()) {
                    admission_cv_.wait(lock, [&] { return engine_stop_ || !admission_.empty(); });
                    next_step = Clock::now();
                }
                if (engine_stop_ && active.empty()) return;
                const auto now = Clock::now();
                while (!admission_.empty() && active.size() < o_.concurrency) {
                    active.push_back(admission_.front());
                    admission_.pop_front();
                    asio::post(loop_, [this, id = active.back().id, now] { on_scheduled(id, now); });
                }
            }
            // The model's forward pass: the engine thread is busy this long per step.
            next_step += forward_pass;
            std::this_thread::sleep_until(next_step);
            if (Clock::now() > next_step + forward_pass) next_step = Clock::now();  // fell behind
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
            step.produced = Clock::now();
            asio::post(loop_, [this, st = std::move(step)] { on_step(st); });
            const snap::LogitsView view{logits.data(), o_.dtype, rows, V, V, -1};
            if (stage_->capture(view, sampled.data(), meta) == snap::CaptureResult::Enqueued)
                ++enqueued;
            steps_.fetch_add(1, std::memory_order_relaxed);
            // Advance; finished requests leave the batch and tell the server.
            for (int r = 0; r < rows; ++r) {
                EngineRequest& q = active[std::size_t(r)];
                q.prev = sampled[std::size_t(r)];
                if (++q.step == q.max_tokens)
                    asio::post(loop_, [this, id = q.id, enqueued] { on_finished(id, enqueued); });
            }
            std::erase_if(active, [](const EngineRequest& q) { return q.step == q.max_tokens; });
        }
    }

    // Element i of a row in the engine's dtype (bf16 and fp16 rounded to nearest even).
    void store(std::byte* row, int i, float x) const noexcept
    {
        if (o_.dtype == snap::LogitDType::F32) {
            std::memcpy(row + std::size_t(i) * 4, &x, 4);
            return;
        }
        std::uint16_t h;
        if (o_.dtype == snap::LogitDType::F16) {
            h = snap::f32_to_f16_rne(x, nullptr);
        } else {
            std::uint32_t u;
            std::memcpy(&u, &x, 4);
            h = std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // finite inputs only
            if (std::isinf(x)) h = std::uint16_t(u >> 16);
        }
        std::memcpy(row + std::size_t(i) * 2, &h, 2);
    }

    // Exit status: 0 every record written; 3 every record accounted for, some dropped (or
    // unknown) with a counted reason; 1 records unaccounted for, or a Kafka topic short.
    int summarize(double seconds, const CloseReport (&reports)[3])
    {
        std::printf("jsonlw demo: %llu requests, %llu decode steps in %.2f s "
                    "(snapshot backend %s, %s logits, vocab %u, concurrency %zu, seed %llu)\n",
                    (unsigned long long)finished_, (unsigned long long)steps_.load(), seconds,
                    snap::to_string(stage_->backend()), snap::dtype_name(o_.dtype), unsigned(o_.vocab),
                    o_.concurrency,
                    (unsigned long long)o_.seed);
        const RawOutputCounters rc = raw_.counters();
        const WriterAccount accounts[] = {
            {"raw output", o_.requests, reports[0].stats, reports[0].drained,
             rc.hook_failures + rc.not_recorded + rc.released_empty},
            {"request trace", 2 * o_.requests, reports[1].stats, reports[1].drained, 0},
            {"perf metrics", o_.requests, reports[2].stats, reports[2].drained, 0},
        };
        const AccountingVerdict v = print_accounting(stdout, accounts, seconds);
        bool lost = v.unaccounted != 0;
        const snap::SnapshotStats st = stage_->stats();
        std::printf("\nsnapshot stage (%s): %llu steps, %llu captured (%llu rows), %llu dropped "
                    "(%.2f %%, %llu rows); %llu waited for a slot (%.1f ms in all, %llu still "
                    "dropped); %llu first-gen rows (%llu dropped)\n",
                    snap::to_string(st.backend), (unsigned long long)steps_.load(),
                    (unsigned long long)st.captured_steps, (unsigned long long)st.captured_rows,
                    (unsigned long long)st.dropped_steps,
                    steps_.load() ? 100.0 * double(st.dropped_steps) / double(steps_.load()) : 0.0,
                    (unsigned long long)st.dropped_rows, (unsigned long long)st.slot_waits,
                    double(st.slot_wait_us) / 1e3, (unsigned long long)st.slot_wait_timeouts,
                    (unsigned long long)st.first_gen_rows, (unsigned long long)st.first_gen_dropped);
        std::printf("per-token data: %llu token positions written without it (null, counted in "
                    "logprobs_missing), %llu rows of results that found no output\n",
                    (unsigned long long)rc.tokens_without_data,
                    (unsigned long long)rc.token_data_orphaned);
        if (!o_.summary_json.empty()) {
            const StageAccount sa{steps_.load(), st.captured_steps, st.dropped_steps, st.dropped_rows,
                                  st.slot_waits, st.slot_wait_timeouts, st.slot_wait_us,
                                  rc.tokens_without_data, rc.token_data_orphaned};
            if (!write_summary_json(o_.summary_json, seconds, finished_, accounts, sa)) {
                std::fprintf(stderr, "jsonlw demo: cannot write %s\n", o_.summary_json.c_str());
                lost = true;
            }
        }
        if (o_.thread_stats) {
            std::printf("\nthreads (Linux /proc schedstat and status, when the engine stopped):\n");
            print_thread_stats(stdout, thread_stats_);
        }
        if (kafka_ && !kafka_->summarize(o_.out)) lost = true;
        if (o_.envelope && !write_writers_json(reports)) lost = true;
        std::printf("\nfiles under %s:\n", o_.out.c_str());
        std::vector<std::filesystem::path> files;
        for (const auto& e : std::filesystem::recursive_directory_iterator(o_.out))
            if (e.is_regular_file()) files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files)
            std::printf("  %s (%s)\n", f.lexically_relative(o_.out).c_str(),
                        format_bytes(double(std::filesystem::file_size(f))).c_str());
        std::fflush(stdout);
        if (lost) return 1;
        return v.dropped != 0 || v.unknown != 0 || !v.drained ? 3 : 0;
    }

    // With --envelope: <out>/writers.json, what each writer says it wrote and dropped, so
    // that a loader of the collected files can check per writer that
    // max(seq) + 1 - count(*) == seq_gaps (a gap: lines lost after the writer).
    bool write_writers_json(const CloseReport (&reports)[3]) const
    {
        const std::string* ids[] = {&raw_.writer_id(), &trace_.writer_id(), &perf_.writer_id()};
        LineBuffer buf;
        JsonLine j(buf);
        j.begin_array();
        for (std::size_t i = 0; i < 3; ++i) {
            const WriterStats& s = reports[i].stats;
            j.begin_object()
                .field("kind", kinds[i])
                .field("writer", *ids[i])
                .field("submitted", s.submitted)
                .field("written", s.written)
                .field("seq_gaps", s.dropped.seq_gaps())
                .field("unknown", s.unknown);
            // The single-file layout's files, relative to --out (the hour-folder writers
            // have no such list).
            if (std::string_view(kinds[i]) == "perf_metrics") {
                j.key("files").begin_array();
                for (const auto& f : perf_.files()) j.string(f.lexically_relative(o_.out).string());
                j.end_array();
            }
            j.end_object();
        }
        j.end_array();
        buf.push_back('\n');
        const auto path = o_.out / "writers.json";
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(buf.data(), std::streamsize(buf.size()));
        f.close();
        if (!f) {
            std::fprintf(stderr, "jsonlw demo: cannot write %s\n", path.c_str());
            return false;
        }
        return true;
    }

    DemoOptions o_;
    asio::io_context loop_;
    std::unique_ptr<KafkaShip> kafka_;  // --kafka; outlives the file writers that feed it
    RawOutputWriter raw_;
    RequestTraceWriter trace_;
    PerfMetricsWriter perf_;
    snap::SnapshotConfig config_;
    std::unique_ptr<snap::SnapshotStage> stage_;
    asio::steady_timer arrival_timer_;
    std::mt19937_64 server_rng_;
    std::optional<Progress> progress_;

    // the server side (loop thread only)
    std::map<std::uint64_t, ServerRequest> server_;
    std::uint64_t arrived_ = 0;
    std::uint64_t finished_ = 0;
    std::uint64_t batches_seen_ = 0;
    std::deque<std::pair<std::uint64_t, std::uint64_t>> engine_done_;  // (last_batch, id)
    std::string text_;  // one token's text, reused
    std::vector<ThreadStat> thread_stats_;

    // the engine side
    std::mutex admission_mutex_;
    std::condition_variable admission_cv_;
    std::deque<EngineRequest> admission_;
    bool engine_stop_ = false;  // under admission_mutex_
    std::atomic<std::uint64_t> steps_{0};
};

}  // namespace

int demo_main(std::span<char*> args)
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
    std::error_code ec;
    // An earlier demo's output in the same place is replaced: appending to it would mix two
    // runs in one report. Only the demo's own three folders (and writers.json) are removed.
    const auto writers_json = o.out / "writers.json";
    if (std::filesystem::is_regular_file(writers_json, ec))
        std::filesystem::remove(writers_json, ec);
    for (const char* sub : kinds) {
        const auto dir = o.out / sub;
        if (!std::filesystem::exists(dir, ec)) continue;
        std::filesystem::remove_all(dir, ec);
        if (ec) {
            std::fprintf(stderr, "jsonlw demo: cannot remove the earlier run's %s: %s\n", dir.c_str(),
                         ec.message().c_str());
            return 2;
        }
        std::fprintf(stderr, "jsonlw demo: removed the earlier run's %s\n", dir.c_str());
    }
    std::filesystem::create_directories(o.out, ec);
    if (ec) {
        std::fprintf(stderr, "jsonlw demo: cannot create %s: %s\n", o.out.c_str(), ec.message().c_str());
        return 2;
    }
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
