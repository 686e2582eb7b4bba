// The perf-metrics record a serving process submits (TensorRT-LLM's internal record, as
// PerfMetricsMiddleware in tensorrt_llm/serve/perf_metrics.py builds it) and how it becomes one
// JSON line (its JSONL shapes, tensorrt_llm/serve/_perf_metrics_schema.py, by _jsonl_record).
//
// Times are steady-clock seconds (monotonic, arbitrary origin — not wall time) unless a field
// says milliseconds. std::nullopt means "not measured"; so does a timestamp <= 0, which
// TensorRT-LLM uses for "unset". An unknown time is never written as 0: an optional key is
// left out, a required key is written as null.
//
// Key order: TensorRT-LLM's writer copies the maps it is given (timing_metrics,
// kv_cache_metrics, speculative_decoding, time_breakdown_metrics and its steps), so each of
// those structs carries `order`, the keys in the order its producer set them (the Python
// package fills it from the dict). Keys it does not list follow in the order TensorRT-LLM's
// own helpers build them (perf_metrics_serialize.cpp says which).
#pragma once

#include <jsonlw/json_line.hpp>
#include <jsonlw/perf_metrics_key_order.hpp>
#include <jsonlw/trace_context.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw {

// The keys of TimingMetrics, in its members' order.
enum class TimingKey : std::uint8_t {
    arrival_time, first_scheduled_time, first_token_time, last_token_time, server_arrival_time,
    server_first_token_time, kv_cache_size, kv_cache_transfer_start, kv_cache_transfer_end,
    count
};

// The request's lifecycle stamps on one server (seconds).
struct TimingMetrics {
    std::optional<double> arrival_time;             // executor enqueue; required: null if unknown
    std::optional<double> first_scheduled_time;     // first scheduled for a forward pass
    std::optional<double> first_token_time;         // first token produced
    std::optional<double> last_token_time;          // last token; required: null if unknown
    std::optional<double> server_arrival_time;      // HTTP arrival at this server
    std::optional<double> server_first_token_time;  // first token sent by this server
    std::optional<std::int64_t> kv_cache_size;      // written only when > 0
    std::optional<double> kv_cache_transfer_start;  // disagg gen: KV transfer began
    std::optional<double> kv_cache_transfer_end;    // disagg gen: KV transfer ended
    // As given. Unlisted keys follow in the order of TensorRT-LLM's builder of the phase: a
    // worker's own record (build_request_metrics_record): arrival, first_scheduled,
    // first_token, last_token, kv_cache_transfer_start/end, kv_cache_size, server_arrival,
    // server_first_token; a ctx/gen phase of a disagg record, rebuilt from the worker's
    // headers (build_metrics_record_from_headers): arrival, last_token, first_scheduled,
    // first_token, then the others in the worker's order.
    KeyOrder<TimingKey> order{};
};

// The four counts of KvCacheMetrics, as bits of KvCacheMetrics::counts.
enum class KvCacheCounts : std::uint8_t {
    none = 0,
    num_total_allocated_blocks = 1 << 0,
    num_new_allocated_blocks = 1 << 1,
    num_reused_blocks = 1 << 2,
    num_missed_blocks = 1 << 3,
    all = 0xf,
};

constexpr KvCacheCounts operator|(KvCacheCounts a, KvCacheCounts b) noexcept
{
    return KvCacheCounts(std::uint8_t(a) | std::uint8_t(b));
}
constexpr KvCacheCounts operator&(KvCacheCounts a, KvCacheCounts b) noexcept
{
    return KvCacheCounts(std::uint8_t(a) & std::uint8_t(b));
}
constexpr KvCacheCounts& operator|=(KvCacheCounts& a, KvCacheCounts b) noexcept
{
    return a = a | b;
}

enum class KvCacheKey : std::uint8_t {
    num_total_allocated_blocks, num_new_allocated_blocks, num_reused_blocks, num_missed_blocks,
    count
};

struct KvCacheMetrics {
    std::int64_t num_total_allocated_blocks = 0;
    std::int64_t num_new_allocated_blocks = 0;
    std::int64_t num_reused_blocks = 0;
    std::int64_t num_missed_blocks = 0;
    // Carried for callers that compute it; never written (TensorRT-LLM strips it).
    std::optional<double> kv_cache_hit_rate{};
    // Which of the four counts the line carries, in the order above. TensorRT-LLM writes the
    // dict it was given minus kv_cache_hit_rate, so a dict with fewer keys gives fewer, and
    // none gives "kv_cache_metrics":{} (the Python package sets this from the dict's keys).
    KvCacheCounts counts = KvCacheCounts::all;
    // The counts as given (those not in `counts` are not written); unlisted ones follow in
    // the order above.
    KeyOrder<KvCacheKey> order{};
};

enum class SpeculativeKey : std::uint8_t {
    acceptance_rate, total_accepted_draft_tokens, total_draft_tokens, count
};

// Written only when total_draft_tokens > 0 (acceptance_rate is 0/0 otherwise).
struct SpeculativeDecoding {
    double acceptance_rate = 0;
    std::int64_t total_accepted_draft_tokens = 0;
    std::int64_t total_draft_tokens = 0;
    KeyOrder<SpeculativeKey> order{};  // as given; unlisted keys follow in the order above
};

// The keys of StepMetrics, in its members' order.
enum class StepKey : std::uint8_t {
    iter, forward_start_time, forward_end_time, sample_start_time, sample_end_time,
    gpu_forward_time, gpu_sample_time, token_time, scheduled_time, prev_batch_token_time,
    iter_counter, iter_batch_size, num_ctx_requests, num_gen_requests, context_token_number,
    generation_token_number, req_context_token_number, req_generation_token_number,
    num_capacity_fitting, num_scheduled, count
};

// One decode step or one context chunk. Every field is optional: unknown ones are left out.
// The chunk/step stamps may sit on a different steady-clock base than TimingMetrics.
struct StepMetrics {
    std::optional<std::int64_t> iter;           // decoding iteration (steps)
    std::optional<double> forward_start_time;   // s
    std::optional<double> forward_end_time;     // s
    std::optional<double> sample_start_time;    // s
    std::optional<double> sample_end_time;      // s
    std::optional<double> gpu_forward_time;     // ms (CUDA-event delta); written when >= 0
    std::optional<double> gpu_sample_time;      // ms; written when >= 0
    std::optional<double> token_time;           // s
    std::optional<double> scheduled_time;       // s, legacy admission stamp
    std::optional<double> prev_batch_token_time;  // s
    // Extended counters (TensorRT-LLM writes them under TRTLLM_PERF_TIME_EVENTS_PATH).
    std::optional<std::int64_t> iter_counter;
    std::optional<std::int64_t> iter_batch_size;
    std::optional<std::int64_t> num_ctx_requests;
    std::optional<std::int64_t> num_gen_requests;
    std::optional<std::int64_t> context_token_number;
    std::optional<std::int64_t> generation_token_number;
    std::optional<std::int64_t> req_context_token_number;     // chunks
    std::optional<std::int64_t> req_generation_token_number;  // steps: 1 + draft length
    std::optional<std::int64_t> num_capacity_fitting;
    std::optional<std::int64_t> num_scheduled;
    KeyOrder<StepKey> order{};  // as given; unlisted keys follow in the order above
};

enum class TimeBreakdownKey : std::uint8_t {
    ctx_chunk_metrics, step_metrics, ctx_gpu_forward_time, ctx_gpu_sample_time, count
};

struct TimeBreakdownMetrics {
    std::vector<StepMetrics> step_metrics;       // left out when empty
    std::vector<StepMetrics> ctx_chunk_metrics;  // left out when empty
    std::optional<double> ctx_gpu_forward_time;  // ms, sum over chunks; written when >= 0
    std::optional<double> ctx_gpu_sample_time;   // ms, sum over chunks; written when >= 0
    // As given; unlisted keys follow in TimeBreakdownKey's order.
    KeyOrder<TimeBreakdownKey> order{};
};

// One worker phase: `server` (a worker's own record) or `ctx` / `gen` (the disagg server's).
struct PhaseRecord {
    std::optional<std::int64_t> first_iter;
    std::optional<std::int64_t> last_iter;
    TimingMetrics timing_metrics;
    std::optional<KvCacheMetrics> kv_cache_metrics;
    std::optional<SpeculativeDecoding> speculative_decoding;
    std::optional<TimeBreakdownMetrics> time_breakdown_metrics;
    // ctx/gen phases: the worker's own ids (request_id defaults to the record's).
    std::optional<std::string> request_id;
    std::optional<std::string> ctx_request_id;
};

// The disaggregated server's own phase.
struct DisaggPhase {
    std::string ctx_server;  // as routed, e.g. "http://ctx0:8001"; required (non-empty)
    std::string gen_server;  // required (non-empty)
    struct Timing {
        std::optional<double> arrival_time;             // not written (response headers only)
        std::optional<double> last_token_time;          // not written (response headers only)
        std::optional<double> server_arrival_time;      // -> disagg_server_arrival_time
        std::optional<double> ctx_dispatch_time;        // -> disagg_ctx_dispatch_time
        std::optional<double> server_first_token_time;  // -> disagg_server_first_token_time
    } timing_metrics;
};

// What the serving process submits once per finished request. Without `disagg` it becomes a
// worker line (built from `server`, which is then required); with `disagg` a disagg-server
// line (from `disagg`, `ctx`, `gen`; disagg_request_id is its last TensorRT-LLM key, after
// gen_perf_metrics, as TensorRT-LLM's _jsonl_record() appends it; only jsonlw's traceparent
// follows it). Ids are strings; one made only of digits that fits in
// 64 bits unsigned is written as a JSON integer, as TensorRT-LLM's int() coercion does.
struct PerfMetricsRecord {
    std::string request_id;
    std::string status = "complete";
    std::optional<PhaseRecord> server;
    std::optional<DisaggPhase> disagg;
    std::optional<PhaseRecord> ctx;
    std::optional<PhaseRecord> gen;
    std::optional<std::string> ctx_request_id;     // worker line (a disagg worker's ctx id)
    std::optional<std::string> disagg_request_id;
    // The W3C trace context the request came with (its traceparent header): written as a
    // "traceparent" key after every other key of either line, so the line joins the request's
    // raw-output and request-trace lines and its distributed trace. Absent: the line is
    // TensorRT-LLM's, byte for byte (docs/writers.md, "Trace context on records").
    std::optional<TraceContext> trace_context{};
    // Set by a binding that could not convert its caller's record (the Python package): the
    // record is queued as it is and serialize_perf_metrics() throws MalformedRecord(*malformed),
    // so the drop is counted and logged where every malformed record is (dropped.malformed).
    std::optional<std::string> malformed{};
};

// Writes `rec` as one JSON line (no newline) into `line`. Throws MalformedRecord when the
// record cannot be written: `malformed` set (what(): its text), no `server` phase on a worker
// record (what(): "'server'", as Python's KeyError prints), a disagg phase without
// ctx_server/gen_server, or a non-finite number in a field that would be written (what()
// names the field). Thread-safe (no state).
void serialize_perf_metrics(const PerfMetricsRecord& rec, JsonLine& line);

// An id as the line spells it: a JSON integer for a string of digits that fits in uint64,
// a JSON string otherwise.
void write_coerced_id(JsonLine& line, std::string_view id);

}  // namespace jsonlw
