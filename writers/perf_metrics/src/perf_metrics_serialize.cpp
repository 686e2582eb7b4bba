// The perf-metrics line shapes: TensorRT-LLM's _jsonl_record() rules
// (tensorrt_llm/serve/perf_metrics.py, with the newer KV-stamp rule) plus jsonlw's rule for
// unknown times (left out, or null where the key is required; never 0, which
// time_breakdown.py would read as a real stamp).
#include <jsonlw/perf_metrics_record.hpp>
#include <jsonlw/traceparent_field.hpp>

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <optional>

namespace jsonlw {
namespace {

// Where a value sits in the submitted record, spelled only when it is reported.
struct Where {
    std::string_view phase;    // "server", "ctx", "gen", "disagg"
    std::string_view section;  // "timing_metrics", "time_breakdown_metrics.step_metrics", ...
    std::optional<std::size_t> index{};
};

[[noreturn]] void non_finite(double v, const Where& w, std::string_view key)
{
    const std::string_view spelled = std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
    if (w.index)
        throw MalformedRecord(fmt::format("non-finite number {} in phases.{}.{}[{}].{}", spelled,
                                          w.phase, w.section, *w.index, key));
    throw MalformedRecord(
        fmt::format("non-finite number {} in phases.{}.{}.{}", spelled, w.phase, w.section, key));
}

double finite(double v, const Where& w, std::string_view key)
{
    if (!std::isfinite(v)) [[unlikely]]
        non_finite(v, w, key);
    return v;
}

// An optional timestamp: written only when known (> 0).
void optional_stamp(JsonLine& line, const Where& w, JsonKey key, const std::optional<double>& v)
{
    if (v && finite(*v, w, key.name()) > 0) line.field(key, *v);
}

// A required timestamp: the key is always there, null when unknown. `field` names it in the
// submitted record when the line renames it.
void required_stamp(JsonLine& line, const Where& w, JsonKey key, const std::optional<double>& v,
                    std::string_view field = {})
{
    line.key(key);
    if (v && finite(*v, w, field.empty() ? key.name() : field) > 0) line.value(*v);
    else line.null();
}

// An optional duration (ms): written when known (>= 0; a zero duration is a measurement).
void optional_duration(JsonLine& line, const Where& w, JsonKey key,
                       const std::optional<double>& v)
{
    if (v && finite(*v, w, key.name()) >= 0) line.field(key, *v);
}

void optional_int(JsonLine& line, JsonKey key, const std::optional<std::int64_t>& v)
{
    if (v) line.field(key, *v);
}

// The order TensorRT-LLM's helpers build timing_metrics in, for the keys a record does not
// order itself. A worker's own record: build_request_metrics_record (the lifecycle stamps,
// the transfer stamps, kv_cache_size, then the HTTP stamps). A ctx/gen phase of a disagg
// record: build_metrics_record_from_headers (start and end from X-TRTLLM-Start-End-Time, then
// queue and ttft from Server-Timing), then the rest in the worker's order.
constexpr std::array<TimingKey, 9> worker_timing_order{
    TimingKey::arrival_time, TimingKey::first_scheduled_time, TimingKey::first_token_time,
    TimingKey::last_token_time, TimingKey::kv_cache_transfer_start,
    TimingKey::kv_cache_transfer_end, TimingKey::kv_cache_size, TimingKey::server_arrival_time,
    TimingKey::server_first_token_time};
constexpr std::array<TimingKey, 9> rebuilt_timing_order{
    TimingKey::arrival_time, TimingKey::last_token_time, TimingKey::first_scheduled_time,
    TimingKey::first_token_time, TimingKey::kv_cache_transfer_start,
    TimingKey::kv_cache_transfer_end, TimingKey::kv_cache_size, TimingKey::server_arrival_time,
    TimingKey::server_first_token_time};

void timing(JsonLine& line, const Where& w, const TimingMetrics& t,
            const std::array<TimingKey, 9>& fallback)
{
    line.key("timing_metrics"_key).begin_object();
    for_each_in_order(t.order, fallback, [&](TimingKey k) {
        switch (k) {
        case TimingKey::arrival_time:
            required_stamp(line, w, "arrival_time", t.arrival_time);
            break;
        case TimingKey::first_scheduled_time:
            optional_stamp(line, w, "first_scheduled_time", t.first_scheduled_time);
            break;
        case TimingKey::first_token_time:
            optional_stamp(line, w, "first_token_time", t.first_token_time);
            break;
        case TimingKey::last_token_time:
            required_stamp(line, w, "last_token_time", t.last_token_time);
            break;
        case TimingKey::server_arrival_time:
            optional_stamp(line, w, "server_arrival_time", t.server_arrival_time);
            break;
        case TimingKey::server_first_token_time:
            optional_stamp(line, w, "server_first_token_time", t.server_first_token_time);
            break;
        case TimingKey::kv_cache_size:
            if (t.kv_cache_size && *t.kv_cache_size > 0)
                line.key("kv_cache_size"_key).value(*t.kv_cache_size);
            break;
        // Newer rule: the transfer stamps do not depend on kv_cache_size (header-derived
        // records never carry it); they go only when unknown.
        case TimingKey::kv_cache_transfer_start:
            optional_stamp(line, w, "kv_cache_transfer_start", t.kv_cache_transfer_start);
            break;
        case TimingKey::kv_cache_transfer_end:
            optional_stamp(line, w, "kv_cache_transfer_end", t.kv_cache_transfer_end);
            break;
        case TimingKey::count:
            break;
        }
    });
    line.end_object();
}

constexpr std::array<StepKey, std::size_t(StepKey::count)> step_order = [] {
    std::array<StepKey, std::size_t(StepKey::count)> a{};
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = StepKey(i);
    return a;
}();

void step(JsonLine& line, const Where& w, const StepMetrics& s)
{
    line.begin_object();
    for_each_in_order(s.order, step_order, [&](StepKey k) {
        switch (k) {
        case StepKey::iter: optional_int(line, "iter", s.iter); break;
        case StepKey::forward_start_time:
            optional_stamp(line, w, "forward_start_time", s.forward_start_time);
            break;
        case StepKey::forward_end_time:
            optional_stamp(line, w, "forward_end_time", s.forward_end_time);
            break;
        case StepKey::sample_start_time:
            optional_stamp(line, w, "sample_start_time", s.sample_start_time);
            break;
        case StepKey::sample_end_time:
            optional_stamp(line, w, "sample_end_time", s.sample_end_time);
            break;
        case StepKey::gpu_forward_time:
            optional_duration(line, w, "gpu_forward_time", s.gpu_forward_time);
            break;
        case StepKey::gpu_sample_time:
            optional_duration(line, w, "gpu_sample_time", s.gpu_sample_time);
            break;
        case StepKey::token_time: optional_stamp(line, w, "token_time", s.token_time); break;
        case StepKey::scheduled_time:
            optional_stamp(line, w, "scheduled_time", s.scheduled_time);
            break;
        case StepKey::prev_batch_token_time:
            optional_stamp(line, w, "prev_batch_token_time", s.prev_batch_token_time);
            break;
        case StepKey::iter_counter: optional_int(line, "iter_counter", s.iter_counter); break;
        case StepKey::iter_batch_size:
            optional_int(line, "iter_batch_size", s.iter_batch_size);
            break;
        case StepKey::num_ctx_requests:
            optional_int(line, "num_ctx_requests", s.num_ctx_requests);
            break;
        case StepKey::num_gen_requests:
            optional_int(line, "num_gen_requests", s.num_gen_requests);
            break;
        case StepKey::context_token_number:
            optional_int(line, "context_token_number", s.context_token_number);
            break;
        case StepKey::generation_token_number:
            optional_int(line, "generation_token_number", s.generation_token_number);
            break;
        case StepKey::req_context_token_number:
            optional_int(line, "req_context_token_number", s.req_context_token_number);
            break;
        case StepKey::req_generation_token_number:
            optional_int(line, "req_generation_token_number", s.req_generation_token_number);
            break;
        case StepKey::num_capacity_fitting:
            optional_int(line, "num_capacity_fitting", s.num_capacity_fitting);
            break;
        case StepKey::num_scheduled: optional_int(line, "num_scheduled", s.num_scheduled); break;
        case StepKey::count: break;
        }
    });
    line.end_object();
}

void steps(JsonLine& line, std::string_view phase, JsonKey key,
           const std::vector<StepMetrics>& list)
{
    if (list.empty()) return;
    const std::string_view section = key.name() == "step_metrics"
                                         ? "time_breakdown_metrics.step_metrics"
                                         : "time_breakdown_metrics.ctx_chunk_metrics";
    line.key(key).begin_array();
    for (std::size_t i = 0; i < list.size(); ++i) step(line, Where{phase, section, i}, list[i]);
    line.end_array();
}

void time_breakdown(JsonLine& line, std::string_view phase, const TimeBreakdownMetrics& tb)
{
    const Where w{phase, "time_breakdown_metrics"};
    static constexpr std::array<TimeBreakdownKey, 4> fallback{
        TimeBreakdownKey::ctx_chunk_metrics, TimeBreakdownKey::step_metrics,
        TimeBreakdownKey::ctx_gpu_forward_time, TimeBreakdownKey::ctx_gpu_sample_time};
    line.key("time_breakdown_metrics"_key).begin_object();
    for_each_in_order(tb.order, fallback, [&](TimeBreakdownKey k) {
        switch (k) {
        case TimeBreakdownKey::ctx_chunk_metrics:
            steps(line, phase, "ctx_chunk_metrics", tb.ctx_chunk_metrics);
            break;
        case TimeBreakdownKey::step_metrics:
            steps(line, phase, "step_metrics", tb.step_metrics);
            break;
        case TimeBreakdownKey::ctx_gpu_forward_time:
            optional_duration(line, w, "ctx_gpu_forward_time", tb.ctx_gpu_forward_time);
            break;
        case TimeBreakdownKey::ctx_gpu_sample_time:
            optional_duration(line, w, "ctx_gpu_sample_time", tb.ctx_gpu_sample_time);
            break;
        case TimeBreakdownKey::count: break;
        }
    });
    line.end_object();
}

void kv_cache_metrics(JsonLine& line, const KvCacheMetrics& kv)
{
    static constexpr std::array<KvCacheKey, 4> fallback{
        KvCacheKey::num_total_allocated_blocks, KvCacheKey::num_new_allocated_blocks,
        KvCacheKey::num_reused_blocks, KvCacheKey::num_missed_blocks};
    const auto count = [&](KvCacheCounts bit, JsonKey key, std::int64_t v) {
        if ((kv.counts & bit) != KvCacheCounts::none) line.field(key, v);
    };
    line.key("kv_cache_metrics"_key).begin_object();
    for_each_in_order(kv.order, fallback, [&](KvCacheKey k) {
        switch (k) {
        case KvCacheKey::num_total_allocated_blocks:
            count(KvCacheCounts::num_total_allocated_blocks, "num_total_allocated_blocks"_key,
                  kv.num_total_allocated_blocks);
            break;
        case KvCacheKey::num_new_allocated_blocks:
            count(KvCacheCounts::num_new_allocated_blocks, "num_new_allocated_blocks"_key,
                  kv.num_new_allocated_blocks);
            break;
        case KvCacheKey::num_reused_blocks:
            count(KvCacheCounts::num_reused_blocks, "num_reused_blocks"_key, kv.num_reused_blocks);
            break;
        case KvCacheKey::num_missed_blocks:
            count(KvCacheCounts::num_missed_blocks, "num_missed_blocks"_key, kv.num_missed_blocks);
            break;
        case KvCacheKey::count: break;
        }
    });
    line.end_object();
}

void speculative_decoding(JsonLine& line, const Where& w, const SpeculativeDecoding& spec)
{
    static constexpr std::array<SpeculativeKey, 3> fallback{
        SpeculativeKey::acceptance_rate, SpeculativeKey::total_accepted_draft_tokens,
        SpeculativeKey::total_draft_tokens};
    line.key("speculative_decoding"_key).begin_object();
    for_each_in_order(spec.order, fallback, [&](SpeculativeKey k) {
        switch (k) {
        case SpeculativeKey::acceptance_rate:
            line.field("acceptance_rate"_key, finite(spec.acceptance_rate, w, "acceptance_rate"));
            break;
        case SpeculativeKey::total_accepted_draft_tokens:
            line.field("total_accepted_draft_tokens"_key, spec.total_accepted_draft_tokens);
            break;
        case SpeculativeKey::total_draft_tokens:
            line.field("total_draft_tokens"_key, spec.total_draft_tokens);
            break;
        case SpeculativeKey::count: break;
        }
    });
    line.end_object();
}

// Which builder of TensorRT-LLM made the phase: the worker's own record, or the disagg
// server's rebuild from the worker's headers (see the timing orders above).
enum class TimingOrder { worker, disagg };

// WorkerPerfMetrics: request_id, perf_metrics, ctx_request_id?, time_breakdown_metrics?.
void worker_metrics(JsonLine& line, std::string_view phase, const PhaseRecord& p,
                    std::string_view request_id, const std::optional<std::string>& ctx_request_id,
                    TimingOrder order)
{
    line.key("request_id"_key);
    write_coerced_id(line, request_id);

    line.key("perf_metrics"_key).begin_object();
    timing(line, Where{phase, "timing_metrics"}, p.timing_metrics,
           order == TimingOrder::worker ? worker_timing_order : rebuilt_timing_order);
    optional_int(line, "first_iter", p.first_iter);
    optional_int(line, "last_iter", p.last_iter);
    if (p.kv_cache_metrics) kv_cache_metrics(line, *p.kv_cache_metrics);
    if (const auto& spec = p.speculative_decoding; spec && spec->total_draft_tokens > 0)
        speculative_decoding(line, Where{phase, "speculative_decoding"}, *spec);
    line.end_object();

    if (ctx_request_id) {
        line.key("ctx_request_id"_key);
        write_coerced_id(line, *ctx_request_id);
    }
    if (p.time_breakdown_metrics) time_breakdown(line, phase, *p.time_breakdown_metrics);
}

void worker_line(const PerfMetricsRecord& rec, JsonLine& line)
{
    if (!rec.server) throw MalformedRecord("'server'");
    const PhaseRecord& p = *rec.server;
    line.begin_object();
    worker_metrics(line, "server", p, rec.request_id,
                   rec.ctx_request_id ? rec.ctx_request_id : p.ctx_request_id,
                   TimingOrder::worker);
    line.field("status"_key, rec.status);
    if (rec.disagg_request_id) {
        line.key("disagg_request_id"_key);
        write_coerced_id(line, *rec.disagg_request_id);
    }
    write_traceparent(line, rec.trace_context);  // jsonlw's own key: after TensorRT-LLM's
    line.end_object();
}

void disagg_line(const PerfMetricsRecord& rec, JsonLine& line)
{
    const DisaggPhase& d = *rec.disagg;
    if (d.ctx_server.empty()) throw MalformedRecord("'ctx_server'");
    if (d.gen_server.empty()) throw MalformedRecord("'gen_server'");
    const Where w{"disagg", "timing_metrics"};
    const auto& t = d.timing_metrics;
    line.begin_object();
    line.field("ctx_server"_key, d.ctx_server);
    line.field("gen_server"_key, d.gen_server);
    required_stamp(line, w, "disagg_server_arrival_time", t.server_arrival_time,
                   "server_arrival_time");
    required_stamp(line, w, "disagg_ctx_dispatch_time", t.ctx_dispatch_time, "ctx_dispatch_time");
    required_stamp(line, w, "disagg_server_first_token_time", t.server_first_token_time,
                   "server_first_token_time");
    line.field("status"_key, rec.status);
    // The worker sub-records take their ids from the phase (request_id falling back to the
    // record's), as TensorRT-LLM's _jsonl_record() does.
    if (rec.ctx) {
        line.key("ctx_perf_metrics"_key).begin_object();
        worker_metrics(line, "ctx", *rec.ctx, rec.ctx->request_id.value_or(rec.request_id),
                       rec.ctx->ctx_request_id, TimingOrder::disagg);
        line.end_object();
    }
    if (rec.gen) {
        line.key("gen_perf_metrics"_key).begin_object();
        worker_metrics(line, "gen", *rec.gen, rec.gen->request_id.value_or(rec.request_id),
                       rec.gen->ctx_request_id, TimingOrder::disagg);
        line.end_object();
    }
    // Last, after gen_perf_metrics: _jsonl_record() appends it once the sub-records are in.
    if (rec.disagg_request_id) {
        line.key("disagg_request_id"_key);
        write_coerced_id(line, *rec.disagg_request_id);
    }
    write_traceparent(line, rec.trace_context);  // jsonlw's own key: after TensorRT-LLM's
    line.end_object();
}

}  // namespace

void write_coerced_id(JsonLine& line, std::string_view id)
{
    // Digits only (no sign, space or '_': stricter than Python's int(), on purpose); 20 digits
    // is the most a uint64 has, from_chars rejects the overflow.
    if (!id.empty() && id.size() <= 20 &&
        id.find_first_not_of("0123456789") == std::string_view::npos) {
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
        if (ec == std::errc() && end == id.data() + id.size()) {
            line.value(v);
            return;
        }
    }
    line.string(id);
}

void serialize_perf_metrics(const PerfMetricsRecord& rec, JsonLine& line)
{
    if (rec.malformed) [[unlikely]]
        throw MalformedRecord(*rec.malformed);
    if (rec.disagg) disagg_line(rec, line);
    else worker_line(rec, line);
}

}  // namespace jsonlw
