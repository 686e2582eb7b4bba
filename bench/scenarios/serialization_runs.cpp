// The runs of the serialization scenario: serialize() alone in a loop (the batch buffer cleared
// every 64 records, as serialize_batch() does), thread CPU time; the loops are also the
// callgrind entry points (bench::serialize_loop_*, docs/benchmarks.md).
#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"
#include "writer_harness.hpp"
#include "writer_workloads.hpp"

#include <jsonlw/perf_metrics_writer.hpp>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace bench {

// The body of the serialize_loop_* entry points: `iterations` lines, write(i, line) making
// each, the buffer cleared every 64 records as serialize_batch() does.
template <class Write>
void json_lines_loop(std::size_t iterations, jsonlw::LineBuffer& buf, Write write)
{
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        jsonlw::JsonLine line(buf);
        write(i, line);
        buf.push_back('\n');
    }
}

[[gnu::noinline]] void serialize_loop_perf(const jsonlw::PerfMetricsRecord& rec,
                                           std::size_t iterations, jsonlw::LineBuffer& buf)
{
    json_lines_loop(iterations, buf, [&](std::size_t, jsonlw::JsonLine& line) {
        jsonlw::serialize_perf_metrics(rec, line);
    });
}

[[gnu::noinline]] void serialize_loop_raw_output(const jsonlw::RawOutputRecord& rec,
                                                 std::size_t iterations, jsonlw::LineBuffer& buf)
{
    json_lines_loop(iterations, buf, [&](std::size_t, jsonlw::JsonLine& line) {
        jsonlw::serialize_raw_output(rec, line);
    });
}

// --- Serialization ---

}  // namespace bench

// RawJsonWriter's batch path (what the engine has the encoder do before the append: begin_chunk()
// then serialize() per record), for the bench.
struct jsonlw::RawJsonWriterProbe {
    static void begin_batch(RawJsonWriter& w, std::span<const RawJsonText> b)
    {
        w.encoder_->begin_batch(b);
    }
    static void serialize(RawJsonWriter& w, const RawJsonText& r, JsonLine& l)
    {
        w.encoder_->serialize(r, l);
    }
};

namespace bench {
namespace {

// The seed record, the aggregated worker example (a WorkerPerfMetricsRecord line,
// tensorrt_llm/serve/_perf_metrics_schema.py) as a typed struct.
struct StepMetrics {
    std::optional<int> iter;
    double forward_start_time, forward_end_time, sample_start_time, sample_end_time;
    double gpu_forward_time, gpu_sample_time, token_time;
};
struct SeedWorker {
    long request_id = 42;
    double arrival_time = 1000.0021, first_scheduled_time = 1000.0053,
           first_token_time = 1000.025, last_token_time = 1000.41, server_arrival_time = 1000.0,
           server_first_token_time = 1000.027;
    int first_iter = 812, last_iter = 860;
    int num_total_allocated_blocks = 5, num_new_allocated_blocks = 3, num_reused_blocks = 2,
        num_missed_blocks = 3;
    std::vector<StepMetrics> ctx_chunks{
        {std::nullopt, 5310.101, 5310.104, 5310.104, 5310.105, 3.0, 0.25, 5310.106}};
    std::vector<StepMetrics> steps{{1, 5310.110, 5310.112, 5310.112, 5310.113, 1.5, 0.5, 5310.114}};
};

void write_steps(jsonlw::JsonLine& l, std::string_view name, const std::vector<StepMetrics>& v)
{
    l.key(name).begin_array();
    for (const StepMetrics& s : v) {
        l.begin_object();
        if (s.iter) l.field("iter", *s.iter);
        l.field("forward_start_time", s.forward_start_time)
            .field("forward_end_time", s.forward_end_time)
            .field("sample_start_time", s.sample_start_time)
            .field("sample_end_time", s.sample_end_time)
            .field("gpu_forward_time", s.gpu_forward_time)
            .field("gpu_sample_time", s.gpu_sample_time)
            .field("token_time", s.token_time);
        l.end_object();
    }
    l.end_array();
}

void build_seed(jsonlw::JsonLine& l, const SeedWorker& r)
{
    l.begin_object().field("request_id", r.request_id);
    l.key("perf_metrics").begin_object();
    l.key("timing_metrics").begin_object();
    l.field("arrival_time", r.arrival_time)
        .field("first_scheduled_time", r.first_scheduled_time)
        .field("first_token_time", r.first_token_time)
        .field("last_token_time", r.last_token_time)
        .field("server_arrival_time", r.server_arrival_time)
        .field("server_first_token_time", r.server_first_token_time);
    l.end_object();
    l.field("first_iter", r.first_iter).field("last_iter", r.last_iter);
    l.key("kv_cache_metrics").begin_object();
    l.field("num_total_allocated_blocks", r.num_total_allocated_blocks)
        .field("num_new_allocated_blocks", r.num_new_allocated_blocks)
        .field("num_reused_blocks", r.num_reused_blocks)
        .field("num_missed_blocks", r.num_missed_blocks);
    l.end_object().end_object();
    l.key("time_breakdown_metrics").begin_object();
    write_steps(l, "ctx_chunk_metrics", r.ctx_chunks);
    write_steps(l, "step_metrics", r.steps);
    l.end_object();
    l.field("status", "complete").end_object();
}

const SeedWorker& seed_record()
{
    static const SeedWorker r;
    return r;
}

}  // namespace

// The callgrind entry points: one record per iteration, a batch buffer cleared every 64
// records as serialize_batch() does. Not inlined, so --toggle-collect can name them.
[[gnu::noinline]] void serialize_loop_raw(jsonlw::RawJsonWriter& w,
                                          const std::vector<jsonlw::RawJsonText>& recs,
                                          std::size_t iterations, jsonlw::LineBuffer& buf)
{
    json_lines_loop(iterations, buf, [&](std::size_t i, jsonlw::JsonLine& line) {
        jsonlw::RawJsonWriterProbe::serialize(w, recs[i % recs.size()], line);
    });
}

// The batch path: records in batches of 64 (the writer's default), each batch validated as
// one document stream first, as RawJsonEncoder::begin_chunk() does for the engine.
[[gnu::noinline]] void serialize_loop_raw_batch(jsonlw::RawJsonWriter& w,
                                                const std::vector<jsonlw::RawJsonText>& recs,
                                                std::size_t iterations, jsonlw::LineBuffer& buf)
{
    using P = jsonlw::RawJsonWriterProbe;
    for (std::size_t i = 0; i < iterations;) {
        buf.clear();
        const std::size_t n = std::min<std::size_t>({64, iterations - i, recs.size()});
        i += n;
        const std::span<const jsonlw::RawJsonText> batch(recs.data(), n);
        P::begin_batch(w, batch);
        for (const jsonlw::RawJsonText& r : batch) {
            jsonlw::JsonLine line(buf);
            P::serialize(w, r, line);
            buf.push_back('\n');
        }
    }
}

[[gnu::noinline]] void serialize_loop_memcpy(const std::vector<std::string>& recs,
                                             std::size_t iterations, jsonlw::LineBuffer& buf)
{
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        const std::string& s = recs[i % recs.size()];
        buf.append(s.data(), s.data() + s.size());
        buf.push_back('\n');
    }
}

[[gnu::noinline]] void serialize_loop_jsonline(const SeedWorker& rec, std::size_t iterations,
                                               jsonlw::LineBuffer& buf)
{
    json_lines_loop(iterations, buf,
                    [&](std::size_t, jsonlw::JsonLine& line) { build_seed(line, rec); });
}

[[gnu::noinline]] void serialize_loop_fmt(const SeedWorker& r, std::size_t iterations,
                                          jsonlw::LineBuffer& buf)
{
    const StepMetrics& c = r.ctx_chunks.front();
    const StepMetrics& s = r.steps.front();
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        fmt::format_to(
            fmt::appender(buf),
            FMT_COMPILE(R"({{"request_id":{},"perf_metrics":{{"timing_metrics":{{"arrival_time":{},)"
            R"("first_scheduled_time":{},"first_token_time":{},"last_token_time":{},)"
            R"("server_arrival_time":{},"server_first_token_time":{}}},"first_iter":{},)"
            R"("last_iter":{},"kv_cache_metrics":{{"num_total_allocated_blocks":{},)"
            R"("num_new_allocated_blocks":{},"num_reused_blocks":{},"num_missed_blocks":{}}}}},)"
            R"("time_breakdown_metrics":{{"ctx_chunk_metrics":[{{"forward_start_time":{},)"
            R"("forward_end_time":{},"sample_start_time":{},"sample_end_time":{},)"
            R"("gpu_forward_time":{},"gpu_sample_time":{},"token_time":{}}}],)"
            R"("step_metrics":[{{"iter":{},"forward_start_time":{},"forward_end_time":{},)"
            R"("sample_start_time":{},"sample_end_time":{},"gpu_forward_time":{},)"
            R"("gpu_sample_time":{},"token_time":{}}}]}},"status":"complete"}})"
            "\n"),
            r.request_id, r.arrival_time, r.first_scheduled_time, r.first_token_time,
            r.last_token_time, r.server_arrival_time, r.server_first_token_time, r.first_iter,
            r.last_iter, r.num_total_allocated_blocks, r.num_new_allocated_blocks,
            r.num_reused_blocks, r.num_missed_blocks, c.forward_start_time, c.forward_end_time,
            c.sample_start_time, c.sample_end_time, c.gpu_forward_time, c.gpu_sample_time,
            c.token_time, *s.iter, s.forward_start_time, s.forward_end_time, s.sample_start_time,
            s.sample_end_time, s.gpu_forward_time, s.gpu_sample_time, s.token_time);
    }
}

double raw_serialize_seconds(const LinePool& pool, std::size_t iterations, RawPath path)
{
    asio::io_context ctx;
    // No directory: an inert writer, used only for its serialize() (and its validator).
    jsonlw::RawJsonWriter w(ctx.get_executor(), jsonlw::WriterOptions{},
                            jsonlw::RawJsonOptions{.validation = path == RawPath::trusted
                                                                     ? jsonlw::RawJsonValidation::trusted
                                                                     : jsonlw::RawJsonValidation::full});
    std::vector<jsonlw::RawJsonText> recs;
    // The batch path takes batches of 64 consecutive records: a smaller pool is repeated.
    const std::size_t count = path == RawPath::batch ? std::max<std::size_t>(64, pool.lines.size())
                                                     : pool.lines.size();
    for (std::size_t i = 0; i < count; ++i) {
        const std::string& l = pool.lines[i % pool.lines.size()];
        if (path == RawPath::batch) {  // as submit(std::string_view) queues it: in the record
            recs.emplace_back(std::string_view(l));
            continue;
        }
        // A moved-in string (submit(std::string&&)): spare capacity for simdjson's padding
        // lets it parse in place instead of copying.
        std::string s;
        if (path == RawPath::alone_padded) s.reserve(l.size() + simdjson::SIMDJSON_PADDING);
        s.assign(l);
        recs.emplace_back(std::move(s));
    }
    jsonlw::LineBuffer buf;
    const auto loop = [&](std::size_t n) {
        if (path == RawPath::batch) serialize_loop_raw_batch(w, recs, n, buf);
        else serialize_loop_raw(w, recs, n, buf);
    };
    return cpu_seconds_after_warmup(iterations, loop);
}

double memcpy_line_seconds(const LinePool& pool, std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    return cpu_seconds_after_warmup(
        iterations, [&](std::size_t n) { serialize_loop_memcpy(pool.lines, n, buf); });
}

double jsonline_seed_seconds(std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    return cpu_seconds_after_warmup(
        iterations, [&](std::size_t n) { serialize_loop_jsonline(seed_record(), n, buf); });
}

double fmt_seed_seconds(std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    return cpu_seconds_after_warmup(
        iterations, [&](std::size_t n) { serialize_loop_fmt(seed_record(), n, buf); });
}

std::string jsonline_seed_line()
{
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    build_seed(line, seed_record());
    return std::string(line.view());
}

double writer_serialize_seconds(const WriterWorkload& wl, std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    if (wl.kind == WriterWorkload::Kind::perf_metrics) {
        const auto& rec = *static_cast<const jsonlw::PerfMetricsRecord*>(wl.records.get());
        return cpu_seconds_after_warmup(
            iterations, [&](std::size_t n) { serialize_loop_perf(rec, n, buf); });
    }
    const jsonlw::RawOutputRecord rec =
        raw_output_record(*static_cast<const RawOutputShape*>(wl.records.get()));
    return cpu_seconds_after_warmup(
        iterations, [&](std::size_t n) { serialize_loop_raw_output(rec, n, buf); });
}

}  // namespace bench
