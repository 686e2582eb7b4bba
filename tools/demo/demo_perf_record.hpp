// The perf-metrics record of one request of the demo's model, from the steady-clock stamps its
// server took (a zero stamp: unknown, written null) — built alike by the in-process demo and
// by `jsonlw serve`. Free function, no state.
#pragma once

#include <jsonlw/perf_metrics_record.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace jsonlw::tools {

struct RequestStamps {
    using time_point = std::chrono::steady_clock::time_point;
    time_point arrival{};             // HTTP arrival at the server
    time_point enqueued{};            // handed to the engine
    time_point scheduled{};           // first scheduled for a step
    time_point first_token{};         // the engine produced it
    time_point server_first_token{};  // the server sent it
    time_point last_token{};
};

inline PerfMetricsRecord demo_perf_record(std::string request_id, std::string status,
                                          const std::optional<TraceContext>& trace,
                                          const RequestStamps& t, std::int64_t tokens,
                                          std::uint32_t max_tokens)
{
    const auto s = [](RequestStamps::time_point x) -> std::optional<double> {
        if (x == RequestStamps::time_point{}) return std::nullopt;
        return std::chrono::duration<double>(x.time_since_epoch()).count();
    };
    PerfMetricsRecord rec;
    rec.request_id = std::move(request_id);
    rec.status = std::move(status);
    rec.trace_context = trace;
    PhaseRecord& p = rec.server.emplace();
    p.first_iter = 0;
    p.last_iter = tokens - 1;
    p.timing_metrics.arrival_time = s(t.enqueued);
    p.timing_metrics.server_arrival_time = s(t.arrival);
    p.timing_metrics.first_scheduled_time = s(t.scheduled);
    p.timing_metrics.first_token_time = s(t.first_token);
    p.timing_metrics.server_first_token_time = s(t.server_first_token);
    p.timing_metrics.last_token_time = s(t.last_token);
    // The synthetic model's KV cache: a 64-token block per 64 tokens asked for, plus one.
    const std::int64_t blocks = (std::int64_t(max_tokens) + 63) / 64 + 1;
    p.kv_cache_metrics = KvCacheMetrics{blocks, blocks, 0, blocks, std::nullopt};
    return rec;
}

}  // namespace jsonlw::tools
