// The perf-metrics reference records (the aggregated worker example, the "seed record" of
// docs/benchmarks.md, and the 12-span disagg example of docs/writers.md, "Disagg-server line")
// as typed records, and the worker example's golden line as TensorRT-LLM writes it: one
// definition that jsonlw-bench and the perf-metrics tests both build, so the bench times
// exactly the record the tests check byte for byte.
#pragma once

#include <jsonlw/perf_metrics_record.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace perf_metrics_reference {

// The aggregated worker example as TensorRT-LLM's tensorrt_llm/serve/perf_metrics.py writes it:
// Python's json.dumps(..., separators=(",", ":")), floats as repr() spells the parsed values
// (1000.0000 -> 1000.0, 1000.0250 -> 1000.025, 5310.110 -> 5310.11).
inline constexpr std::string_view seed_worker_line =
    R"({"request_id":42,"perf_metrics":{"timing_metrics":{"arrival_time":1000.0021,)"
    R"("first_scheduled_time":1000.0053,"first_token_time":1000.025,"last_token_time":1000.41,)"
    R"("server_arrival_time":1000.0,"server_first_token_time":1000.027},"first_iter":812,)"
    R"("last_iter":860,"kv_cache_metrics":{"num_total_allocated_blocks":5,)"
    R"("num_new_allocated_blocks":3,"num_reused_blocks":2,"num_missed_blocks":3}},)"
    R"("time_breakdown_metrics":{"ctx_chunk_metrics":[{"forward_start_time":5310.101,)"
    R"("forward_end_time":5310.104,"sample_start_time":5310.104,"sample_end_time":5310.105,)"
    R"("gpu_forward_time":3.0,"gpu_sample_time":0.25,"token_time":5310.106}],)"
    R"("step_metrics":[{"iter":1,"forward_start_time":5310.11,"forward_end_time":5310.112,)"
    R"("sample_start_time":5310.112,"sample_end_time":5310.113,"gpu_forward_time":1.5,)"
    R"("gpu_sample_time":0.5,"token_time":5310.114}]},"status":"complete"})";

// The line serialize_perf_metrics() writes for `rec`, without its '\n'.
inline std::string line_of(const jsonlw::PerfMetricsRecord& rec)
{
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    jsonlw::serialize_perf_metrics(rec, line);
    return std::string(line.view());
}

// The worker example's KV-cache counts (the hit rate is not written: TensorRT-LLM drops it).
inline jsonlw::KvCacheMetrics seed_kv_cache_metrics()
{
    return jsonlw::KvCacheMetrics{.num_total_allocated_blocks = 5,
                                  .num_new_allocated_blocks = 3,
                                  .num_reused_blocks = 2,
                                  .num_missed_blocks = 3,
                                  .kv_cache_hit_rate = 0.4};
}

// The aggregated worker example (seed_worker_line when extra_steps is 0), plus `extra_steps`
// more decode steps spelled like its one (stamps 4 ms apart, about 190 B each).
inline jsonlw::PerfMetricsRecord seed_worker_record(std::size_t extra_steps = 0)
{
    jsonlw::PerfMetricsRecord r;
    r.request_id = "42";
    jsonlw::PhaseRecord p;
    auto& t = p.timing_metrics;
    t.arrival_time = 1000.0021;
    t.first_scheduled_time = 1000.0053;
    t.first_token_time = 1000.0250;
    t.last_token_time = 1000.4100;
    t.server_arrival_time = 1000.0000;
    t.server_first_token_time = 1000.0270;
    p.first_iter = 812;
    p.last_iter = 860;
    p.kv_cache_metrics = seed_kv_cache_metrics();
    jsonlw::TimeBreakdownMetrics tb;
    jsonlw::StepMetrics chunk;
    chunk.forward_start_time = 5310.101;
    chunk.forward_end_time = 5310.104;
    chunk.sample_start_time = 5310.104;
    chunk.sample_end_time = 5310.105;
    chunk.gpu_forward_time = 3.0;
    chunk.gpu_sample_time = 0.25;
    chunk.token_time = 5310.106;
    tb.ctx_chunk_metrics.push_back(chunk);
    // Stamps in thousandths, divided once: (5310110 + 2) / 1000 is the double 5310.112 names.
    for (std::size_t k = 0; k <= extra_steps; ++k) {
        const auto ms = [k](int at) { return (5310110.0 + 4.0 * static_cast<double>(k) + at) / 1000; };
        jsonlw::StepMetrics step;
        step.iter = static_cast<std::int64_t>(k + 1);
        step.forward_start_time = ms(0);
        step.forward_end_time = ms(2);
        step.sample_start_time = ms(2);
        step.sample_end_time = ms(3);
        step.gpu_forward_time = 1.5;
        step.gpu_sample_time = 0.5;
        step.token_time = ms(4);
        tb.step_metrics.push_back(step);
    }
    p.time_breakdown_metrics = std::move(tb);
    r.server = std::move(p);
    return r;
}

// The disaggregated server's own phase of the 12-span disagg example.
inline jsonlw::DisaggPhase disagg_server_phase()
{
    jsonlw::DisaggPhase d;
    d.ctx_server = "http://ctx0:8001";
    d.gen_server = "http://gen0:8002";
    d.timing_metrics.arrival_time = 1000.0;
    d.timing_metrics.last_token_time = 1000.3;
    d.timing_metrics.server_arrival_time = 1000.0;
    d.timing_metrics.ctx_dispatch_time = 1000.0005;
    d.timing_metrics.server_first_token_time = 1000.078;
    return d;
}

// The context worker's stamps of the disagg example ("12 distinct non-zero spans"); no order.
inline jsonlw::TimingMetrics ctx_worker_timing()
{
    jsonlw::TimingMetrics t;
    t.arrival_time = 1000.003;
    t.first_scheduled_time = 1000.006;
    t.first_token_time = 1000.010;
    t.last_token_time = 1000.010;
    t.server_arrival_time = 1000.001;
    t.server_first_token_time = 1000.015;
    return t;
}

// The generation worker's stamps of the disagg example, the KV transfer included; no order.
inline jsonlw::TimingMetrics gen_worker_timing()
{
    jsonlw::TimingMetrics t;
    t.arrival_time = 1000.028;
    t.first_scheduled_time = 1000.055;
    t.first_token_time = 1000.066;
    t.last_token_time = 1000.2;
    t.kv_cache_transfer_start = 1000.036;
    t.kv_cache_transfer_end = 1000.045;
    t.server_arrival_time = 1000.021;
    t.server_first_token_time = 1000.066;
    return t;
}

}  // namespace perf_metrics_reference
