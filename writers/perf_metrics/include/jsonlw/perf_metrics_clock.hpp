// From std::chrono::steady_clock stamps to the seconds the perf-metrics schema wants, and a
// worker record built from the stamps a server takes while it serves one request.
#pragma once

#include <jsonlw/perf_metrics_record.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace jsonlw {

// Steady-clock seconds, as every *_time field of the perf-metrics schema (and
// RequestTrace::server_arrival_time, its join key) holds them: `t.time_since_epoch()` in
// seconds. A default-constructed time point (the clock's epoch) means "not measured" and
// gives nullopt, so it is written as null / left out, never as 0.
inline std::optional<double> steady_seconds(std::chrono::steady_clock::time_point t) noexcept
{
    if (t == std::chrono::steady_clock::time_point{}) return std::nullopt;
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The stamps of one request on one worker. Leave a stamp default-constructed when it was
// not taken: it is written as null (arrival, last token) or left out (the others).
struct WorkerTimes {
    std::chrono::steady_clock::time_point server_arrival{};      // HTTP request received
    std::chrono::steady_clock::time_point arrival{};             // handed to the engine
    std::chrono::steady_clock::time_point first_scheduled{};     // first forward pass
    std::chrono::steady_clock::time_point first_token{};         // first token produced
    std::chrono::steady_clock::time_point server_first_token{};  // first token sent
    std::chrono::steady_clock::time_point last_token{};          // last token produced
};

// A worker record (the `server` phase only) from the stamps; set the iterations, KV-cache
// and speculative-decoding fields on rec.server afterwards if you have them.
inline PerfMetricsRecord worker_record(std::string request_id, const WorkerTimes& t,
                                       std::string status = "complete")
{
    PerfMetricsRecord rec;
    rec.request_id = std::move(request_id);
    rec.status = std::move(status);
    TimingMetrics& m = rec.server.emplace().timing_metrics;
    m.server_arrival_time = steady_seconds(t.server_arrival);
    m.arrival_time = steady_seconds(t.arrival);
    m.first_scheduled_time = steady_seconds(t.first_scheduled);
    m.first_token_time = steady_seconds(t.first_token);
    m.server_first_token_time = steady_seconds(t.server_first_token);
    m.last_token_time = steady_seconds(t.last_token);
    return rec;
}

}  // namespace jsonlw
