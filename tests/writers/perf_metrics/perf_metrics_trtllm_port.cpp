// Records built the way TensorRT-LLM's helpers build them, written byte for byte as its writer
// writes them. The disaggregated server rebuilds each worker's phase from the metrics headers
// the worker answered with (tensorrt_llm/serve/perf_metrics.py: build_metrics_headers, then
// build_metrics_record_from_headers, then combine_disagg_metrics); the port below does the
// same steps — our code, the same logic — so the timing keys arrive in the same order. The
// expected lines are what TensorRT-LLM's _jsonl_record() + compact json.dumps give for those
// records (computed by tests/python/trtllm_perf_port.py, the Python port of the same helpers).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/perf_metrics_record.hpp>

#include "perf_metrics_reference.hpp"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using jsonlw::PerfMetricsRecord;
using jsonlw::PhaseRecord;
using jsonlw::TimingKey;
using jsonlw::TimingMetrics;

namespace {

namespace ref = perf_metrics_reference;
using ref::line_of;

// The two headers a worker's timing goes into: Server-Timing durations (ms, 6 decimals) and
// X-TRTLLM-Start-End-Time stamps (s, 9 decimals), for the phase "server".
struct Headers {
    std::string server_timing;
    std::string start_end;
};

Headers worker_headers(const TimingMetrics& t)
{
    Headers h;
    const auto add = [](std::string& to, const std::string& item) {
        if (!to.empty()) to += ", ";
        to += item;
    };
    if (t.arrival_time) add(h.start_end, fmt::format("server-start;ts={:.9f}", *t.arrival_time));
    if (t.last_token_time) add(h.start_end, fmt::format("server-end;ts={:.9f}", *t.last_token_time));
    const auto span = [&](std::string_view name, const std::optional<double>& a,
                          const std::optional<double>& b) {
        if (a && b && (*b - *a) * 1000 >= 0)
            add(h.server_timing, fmt::format("server_{};dur={:.6f}", name, (*b - *a) * 1000));
    };
    span("queue", t.arrival_time, t.first_scheduled_time);
    span("ttft", t.arrival_time, t.first_token_time);
    span("e2e", t.arrival_time, t.last_token_time);
    span("kv_transfer", t.kv_cache_transfer_start, t.kv_cache_transfer_end);
    return h;
}

double parse(std::string_view s)
{
    double v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

// "a;ts=1, b;ts=2" -> {(a, 1), (b, 2)} in order.
std::vector<std::pair<std::string, double>> items(std::string_view header, std::string_view sep)
{
    std::vector<std::pair<std::string, double>> out;
    while (!header.empty()) {
        const auto comma = header.find(',');
        std::string_view item = header.substr(0, comma);
        header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        if (const auto at = item.find(sep); at != std::string_view::npos)
            out.emplace_back(std::string(item.substr(0, at)), parse(item.substr(at + sep.size())));
    }
    return out;
}

// build_metrics_record_from_headers for `phase` (the "server_" / "server-" prefixes renamed):
// arrival and last token from Start-End as listed, then first_scheduled / first_token /
// last_token as arrival + queue / ttft / e2e, each only when not set yet; `order` records
// the keys as they are set.
PhaseRecord rebuilt_phase(const Headers& h, std::string_view phase, std::string request_id)
{
    PhaseRecord p;
    p.request_id = std::move(request_id);
    TimingMetrics& t = p.timing_metrics;
    const auto set = [&](TimingKey k, std::optional<double>& field, double v) {
        if (field) return;  // setdefault for the derived ones; a repeated stamp keeps its place
        field = v;
        t.order.push_back(k);
    };
    for (const auto& [name, ts] : items(h.start_end, ";ts=")) {
        if (name == "server-start") set(TimingKey::arrival_time, t.arrival_time, ts);
        else if (name == "server-end") set(TimingKey::last_token_time, t.last_token_time, ts);
    }
    std::map<std::string, double> durations;
    for (const auto& [name, ms] : items(h.server_timing, ";dur="))
        if (name.rfind("server_", 0) == 0) durations[name.substr(7)] = ms / 1000;
    (void)phase;
    if (const auto arrival = t.arrival_time) {
        if (durations.count("queue"))
            set(TimingKey::first_scheduled_time, t.first_scheduled_time, *arrival + durations["queue"]);
        if (durations.count("ttft"))
            set(TimingKey::first_token_time, t.first_token_time, *arrival + durations["ttft"]);
        if (durations.count("e2e"))
            set(TimingKey::last_token_time, t.last_token_time, *arrival + durations["e2e"]);
    }
    return p;
}

// A worker of one disaggregated request (the stamps of TensorRT-LLM's perf-metrics unit test whose 12 time-breakdown spans last 1…12 ms), with the
// KV cache size its builder records.
TimingMetrics with_kv_cache_size(TimingMetrics t)
{
    t.kv_cache_size = 2048;
    return t;
}

PerfMetricsRecord disagg_record(PhaseRecord ctx, PhaseRecord gen)
{
    PerfMetricsRecord r;
    r.request_id = "1001";
    r.disagg_request_id = "1001";
    r.disagg = ref::disagg_server_phase();
    r.ctx = std::move(ctx);
    r.gen = std::move(gen);
    return r;
}

// TensorRT-LLM's line for disagg_record(rebuilt ctx, rebuilt gen).
constexpr std::string_view trtllm_disagg_line =
    R"({"ctx_server":"http://ctx0:8001","gen_server":"http://gen0:8002",)"
    R"("disagg_server_arrival_time":1000.0,"disagg_ctx_dispatch_time":1000.0005,)"
    R"("disagg_server_first_token_time":1000.078,"status":"complete",)"
    R"("ctx_perf_metrics":{"request_id":"ctx-1","perf_metrics":{"timing_metrics":{)"
    R"("arrival_time":1000.003,"last_token_time":1000.01,)"
    R"("first_scheduled_time":1000.0060000000001,"first_token_time":1000.01}}},)"
    R"("gen_perf_metrics":{"request_id":"gen-1","perf_metrics":{"timing_metrics":{)"
    R"("arrival_time":1000.028,"last_token_time":1000.2,)"
    R"("first_scheduled_time":1000.0550000000001,"first_token_time":1000.066}}},)"
    R"("disagg_request_id":1001})";

}  // namespace

TEST_CASE("A disagg record rebuilt from the workers' headers is written as TensorRT-LLM writes it",
          "[perf_metrics][trtllm_port]")
{
    const PhaseRecord ctx =
        rebuilt_phase(worker_headers(with_kv_cache_size(ref::ctx_worker_timing())), "ctx", "ctx-1");
    const PhaseRecord gen =
        rebuilt_phase(worker_headers(with_kv_cache_size(ref::gen_worker_timing())), "gen", "gen-1");
    CHECK(line_of(disagg_record(ctx, gen)) == trtllm_disagg_line);
}

TEST_CASE("A disagg record filled field by field takes the rebuild's timing order and ends with "
          "disagg_request_id",
          "[perf_metrics][trtllm_port]")
{
    // No order given: a ctx/gen phase is written in the order TensorRT-LLM's rebuild sets it.
    PhaseRecord ctx;
    ctx.request_id = "ctx-1";
    ctx.timing_metrics.first_token_time = 1000.01;
    ctx.timing_metrics.first_scheduled_time = 1000.0060000000001;
    ctx.timing_metrics.last_token_time = 1000.01;
    ctx.timing_metrics.arrival_time = 1000.003;
    PhaseRecord gen;
    gen.request_id = "gen-1";
    gen.timing_metrics.arrival_time = 1000.028;
    gen.timing_metrics.first_scheduled_time = 1000.0550000000001;
    gen.timing_metrics.first_token_time = 1000.066;
    gen.timing_metrics.last_token_time = 1000.2;
    CHECK(line_of(disagg_record(ctx, gen)) == trtllm_disagg_line);
}

TEST_CASE("A gen worker's own record with the kv transfer is written in its builder's key order",
          "[perf_metrics][trtllm_port]")
{
    // build_request_metrics_record: the four lifecycle stamps, the transfer stamps,
    // kv_cache_size, then the HTTP stamps; disagg_request_id last.
    PerfMetricsRecord r;
    r.request_id = "12";
    r.ctx_request_id = "7";
    r.disagg_request_id = "1001";
    PhaseRecord p;
    p.timing_metrics = with_kv_cache_size(ref::gen_worker_timing());
    p.first_iter = 812;
    p.last_iter = 860;
    p.kv_cache_metrics = ref::seed_kv_cache_metrics();
    p.speculative_decoding = jsonlw::SpeculativeDecoding{0.75, 3, 4};
    r.server = p;
    CHECK(line_of(r) ==
          R"({"request_id":12,"perf_metrics":{"timing_metrics":{"arrival_time":1000.028,)"
          R"("first_scheduled_time":1000.055,"first_token_time":1000.066,)"
          R"("last_token_time":1000.2,"kv_cache_transfer_start":1000.036,)"
          R"("kv_cache_transfer_end":1000.045,"kv_cache_size":2048,)"
          R"("server_arrival_time":1000.021,"server_first_token_time":1000.066},)"
          R"("first_iter":812,"last_iter":860,"kv_cache_metrics":{)"
          R"("num_total_allocated_blocks":5,"num_new_allocated_blocks":3,)"
          R"("num_reused_blocks":2,"num_missed_blocks":3},"speculative_decoding":{)"
          R"("acceptance_rate":0.75,"total_accepted_draft_tokens":3,"total_draft_tokens":4}},)"
          R"("ctx_request_id":7,"status":"complete","disagg_request_id":1001})");
}

TEST_CASE("Maps given in an order are written in that order, the keys not listed after them",
          "[perf_metrics][trtllm_port]")
{
    using jsonlw::KvCacheKey;
    using jsonlw::StepKey;
    using jsonlw::TimeBreakdownKey;
    PerfMetricsRecord r;
    r.request_id = "5";
    PhaseRecord p;
    p.timing_metrics.arrival_time = 1.5;
    p.timing_metrics.last_token_time = 2.5;
    p.timing_metrics.server_arrival_time = 1.25;
    p.timing_metrics.order = {TimingKey::server_arrival_time, TimingKey::last_token_time};
    jsonlw::KvCacheMetrics kv{.num_total_allocated_blocks = 5, .num_new_allocated_blocks = 3,
                              .num_reused_blocks = 2, .num_missed_blocks = 3};
    kv.order = {KvCacheKey::num_missed_blocks, KvCacheKey::num_reused_blocks};
    p.kv_cache_metrics = kv;
    jsonlw::TimeBreakdownMetrics tb;
    jsonlw::StepMetrics s;
    s.iter = 1;
    s.token_time = 5.5;
    s.gpu_forward_time = 1.5;
    s.order = {StepKey::token_time, StepKey::iter};
    tb.step_metrics.push_back(s);
    tb.ctx_gpu_forward_time = 6.0;
    tb.order = {TimeBreakdownKey::step_metrics};
    p.time_breakdown_metrics = tb;
    r.server = p;
    CHECK(line_of(r) ==
          R"({"request_id":5,"perf_metrics":{"timing_metrics":{"server_arrival_time":1.25,)"
          R"("last_token_time":2.5,"arrival_time":1.5},"kv_cache_metrics":{"num_missed_blocks":3,)"
          R"("num_reused_blocks":2,"num_total_allocated_blocks":5,"num_new_allocated_blocks":3}},)"
          R"("time_breakdown_metrics":{"step_metrics":[{"token_time":5.5,"iter":1,)"
          R"("gpu_forward_time":1.5}],"ctx_gpu_forward_time":6.0},"status":"complete"})");
}
