// A perf-metrics line with and without a W3C trace context (docs/writers.md, "Trace context on
// records"): without one, the line is TensorRT-LLM's, byte for byte (the golden lines of the
// reference); with one, the same bytes plus one "traceparent" key, last.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/perf_metrics_record.hpp>

#include "perf_metrics_reference.hpp"

#include <string>
#include <string_view>

namespace {

namespace ref = perf_metrics_reference;
using ref::line_of;

constexpr std::string_view traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

jsonlw::TraceContext context()
{
    auto tc = jsonlw::TraceContext::parse_traceparent(traceparent);
    REQUIRE(tc);
    return *tc;
}

// `line` with `,"traceparent":"<value>"` before its closing brace.
std::string with_key(std::string_view line)
{
    REQUIRE(line.ends_with('}'));
    return std::string(line.substr(0, line.size() - 1)) + R"(,"traceparent":")" +
           std::string(traceparent) + "\"}";
}

}  // namespace

TEST_CASE("A worker line without a trace context is the golden line; with one it ends with one "
          "traceparent key",
          "[perf_metrics][trace_context]")
{
    jsonlw::PerfMetricsRecord rec = ref::seed_worker_record();
    CHECK(line_of(rec) == ref::seed_worker_line);

    rec.trace_context = context();
    const std::string line = line_of(rec);
    CHECK(line == with_key(ref::seed_worker_line));
    CHECK(line.find("\"traceparent\"") == line.rfind("\"traceparent\""));  // one key

    rec.trace_context.reset();
    CHECK(line_of(rec) == ref::seed_worker_line);
}

TEST_CASE("A disagg-server line keeps disagg_request_id after gen_perf_metrics and the "
          "traceparent after it",
          "[perf_metrics][trace_context]")
{
    jsonlw::PerfMetricsRecord rec;
    rec.request_id = "1";
    rec.disagg = ref::disagg_server_phase();
    rec.disagg_request_id = "9001";
    constexpr std::string_view golden =
        R"({"ctx_server":"http://ctx0:8001","gen_server":"http://gen0:8002",)"
        R"("disagg_server_arrival_time":1000.0,"disagg_ctx_dispatch_time":1000.0005,)"
        R"("disagg_server_first_token_time":1000.078,"status":"complete","disagg_request_id":9001})";
    CHECK(line_of(rec) == golden);

    rec.trace_context = context();
    rec.trace_context->flags = 0;  // not sampled: the flags are written as they are
    CHECK(line_of(rec) ==
          R"({"ctx_server":"http://ctx0:8001","gen_server":"http://gen0:8002",)"
          R"("disagg_server_arrival_time":1000.0,"disagg_ctx_dispatch_time":1000.0005,)"
          R"("disagg_server_first_token_time":1000.078,"status":"complete","disagg_request_id":9001,)"
          R"("traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"})");
}

TEST_CASE("A malformed record stays malformed with a trace context", "[perf_metrics][trace_context]")
{
    jsonlw::PerfMetricsRecord rec;
    rec.request_id = "7";
    rec.trace_context = context();
    CHECK_THROWS_AS(line_of(rec), jsonlw::MalformedRecord);  // no server phase
}
