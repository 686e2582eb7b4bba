// The request trace's W3C trace context (docs/writers.md, "Trace context on records"): the
// request line takes it from its traceparent header (an invalid or repeated one ignored and
// counted, per class of the spec's rules), the response line from the caller, both as one last
// "traceparent" key; without one, both lines are the lines as before, byte for byte.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "trace_support.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace jsonlw_test;
using jsonlw::TraceContext;
using jsonlw::TraceHeader;

namespace {

const auto t_req = utc(2026, 9, 3, 14, 5, 9, 123456);
const auto t_resp = utc(2026, 9, 3, 14, 5, 10, 1);
constexpr std::string_view valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

constexpr std::string_view request_golden =
    R"({"event":"request","trace_id":"tr_a","session":"s1",)"
    R"("recorded_at":"2026-09-03T14:05:09.123456+00:00","server_arrival_time":null,)"
    R"("route":"/v1/completions","status":"accepted",)"
    R"("headers":[["Content-Type","application/json"]],"body":{"model":"m"}})";
constexpr std::string_view response_golden =
    R"({"event":"response","trace_id":"tr_a","session":"s1",)"
    R"("finished_at":"2026-09-03T14:05:10.000001+00:00","status":"completed","client_id":null,)"
    R"("disagg_request_id":null,"ctx_request_id":null,"response":{"kind":"json","body":{"id":"cmpl-1"}}})";

jsonlw::RequestTrace request_with(std::vector<TraceHeader> headers, std::string id = "tr_a")
{
    jsonlw::RequestTrace r = request(std::move(id), t_req);
    r.headers = std::move(headers);
    return r;
}

// Each class of invalid traceparent value, in the order of docs/trace_context.md's rules.
const std::vector<std::pair<std::string, std::string_view>> invalid_values = {
    {"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "bad_version"},
    {"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "bad_separator"},
    {"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "wrong_length"},
    {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "bad_hex"},
    {"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "zero_trace_id"},
    {"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "zero_span_id"},
};

// A started writer on a running loop.
struct Running : TraceRig {
    Running()
    {
        w().start();
        loop.start();
    }
};

}  // namespace

TEST_CASE("Without a traceparent the request and response lines are the lines as before, byte "
          "for byte",
          "[request_trace][trace_context]")
{
    Running rig;
    rig.w().record_request(request_with({{"Content-Type", "application/json"}}));
    rig.w().record_response(response("tr_a", t_resp));
    close(rig.w());
    CHECK(read_lines(rig.w().requests_file(t_req)) == std::vector<std::string>{std::string(request_golden)});
    CHECK(read_lines(rig.w().responses_file(t_resp)) == std::vector<std::string>{std::string(response_golden)});
    CHECK(rig.w().invalid_traceparents() == 0);
}

TEST_CASE("A valid traceparent header, its name in any case, is the request line's last key; "
          "the response line carries the context its caller passes",
          "[request_trace][trace_context]")
{
    Running rig;
    const std::vector<TraceHeader> headers = {{"Content-Type", "application/json"},
                                              {"TraceParent", " " + std::string(valid) + "\t"}};
    const jsonlw::HeaderTraceContext h = jsonlw::trace_context_of(headers);
    REQUIRE(h.context);
    CHECK(h.refused.empty());
    CHECK(h.context->traceparent() == valid);
    rig.w().record_request(request_with(headers));
    jsonlw::ResponseTrace resp = response("tr_a", t_resp);
    resp.trace_context = h.context;
    rig.w().record_response(std::move(resp));
    close(rig.w());

    const auto requests = read_lines(rig.w().requests_file(t_req));
    REQUIRE(requests.size() == 1);
    CHECK(requests[0] ==
          R"({"event":"request","trace_id":"tr_a","session":"s1",)"
          R"("recorded_at":"2026-09-03T14:05:09.123456+00:00","server_arrival_time":null,)"
          R"("route":"/v1/completions","status":"accepted",)"
          R"("headers":[["Content-Type","application/json"],)"
          R"(["TraceParent"," 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\t"]],)"
          R"("body":{"model":"m"},)"
          R"("traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})");
    const auto responses = read_lines(rig.w().responses_file(t_resp));
    REQUIRE(responses.size() == 1);
    CHECK(responses[0] ==
          std::string(response_golden.substr(0, response_golden.size() - 1)) +
              R"(,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})");
    CHECK(rig.w().invalid_traceparents() == 0);
    CHECK(rig.logs.count(jsonlw::LogLevel::warning) == 0);
}

TEST_CASE("Each class of invalid traceparent, and a repeated header, is ignored and counted: 7 "
          "requests, 7 counted, one warning",
          "[request_trace][trace_context]")
{
    // The rule each one breaks, as trace_context_of() names it.
    for (const auto& [value, rule] : invalid_values) {
        INFO(value);
        const jsonlw::HeaderTraceContext h = jsonlw::trace_context_of({{"traceparent", value}});
        CHECK_FALSE(h.context);
        CHECK(h.refused == rule);
    }
    const std::vector<TraceHeader> repeated = {{"traceparent", std::string(valid)},
                                               {"TRACEPARENT", std::string(valid)}};
    CHECK(jsonlw::trace_context_of(repeated).refused == "repeated");
    CHECK_FALSE(jsonlw::trace_context_of(repeated).context);

    Running rig;
    int n = 0;
    for (const auto& [value, rule] : invalid_values)
        rig.w().record_request(request_with({{"traceparent", value}}, "tr_" + std::to_string(n++)));
    rig.w().record_request(request_with(repeated, "tr_" + std::to_string(n++)));
    // A context the caller sets is used as given: the header is not read, nor counted.
    jsonlw::RequestTrace given = request_with({{"traceparent", "garbage"}}, "tr_given");
    given.trace_context = TraceContext::parse_traceparent(valid);
    rig.w().record_request(std::move(given));
    const auto report = close(rig.w());

    CHECK(report.stats.written == 8);
    CHECK(rig.w().invalid_traceparents() == 7);
    const auto lines = read_lines(rig.w().requests_file(t_req));
    REQUIRE(lines.size() == 8);
    for (std::size_t i = 0; i < 7; ++i) {
        INFO(lines[i]);
        CHECK(lines[i].ends_with(R"("body":{"model":"m"}})"));  // no traceparent key
    }
    CHECK(lines[7].ends_with(R"("body":{"model":"m"},"traceparent":")" + std::string(valid) + "\"}"));
    CHECK(rig.logs.matching(jsonlw::LogLevel::warning, "traceparent") ==
          std::vector<std::string>{
              "Ignored 1 invalid traceparent header(s) of traced requests (this one: bad_version)"});
}

TEST_CASE("Invalid traceparents are logged at the first and every 1000th", "[request_trace][trace_context]")
{
    Running rig;
    for (int i = 0; i < 1001; ++i)  // the queue holds 1024
        REQUIRE(rig.w().record_request(request_with({{"traceparent", "00-zz"}}, "tr_x")) ==
                jsonlw::SubmitResult::accepted);
    close(rig.w());
    CHECK(rig.w().invalid_traceparents() == 1001);
    CHECK(rig.logs.count(jsonlw::LogLevel::warning, "invalid traceparent") == 2);
    CHECK(rig.logs.count(jsonlw::LogLevel::warning, "Ignored 1000 invalid traceparent") == 1);
}
