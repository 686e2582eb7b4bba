// RequestTraceOptions::capture (docs/writers.md, "Content capture"): with metadata, bodies
// become body_len + body_sha256 and nothing else changes; full (the default) writes what a
// writer without the option writes; the digests match those recomputed from a full line.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "sha256.hpp"
#include "trace_support.hpp"

#include <optional>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::Capture;
using jsonlw::RequestTrace;
using jsonlw::ResponseKind;
using jsonlw::ResponseTrace;

namespace {

const auto t_1405 = utc(2026, 9, 3, 14, 5, 9, 123456);

// The records every scenario writes: a JSON request with a credential header, a rejected
// request whose body is not JSON, an event-stream response, a JSON response, a text response
// with invalid UTF-8.
struct Traces {
    std::vector<RequestTrace> requests;
    std::vector<ResponseTrace> responses;
};

Traces traces()
{
    Traces t;
    RequestTrace a = request("tr_a", t_1405, "{ \"prompt\" : \"hello\" }");
    a.headers = {{"Authorization", "Bearer sk-secret"}, {"Content-Type", "application/json"}};
    t.requests.push_back(a);
    RequestTrace b = request("tr_b", t_1405, "hello");
    b.status = jsonlw::RequestTraceStatus::rejected_400;
    b.validation_errors = std::vector<jsonlw::TraceValidationError>{
        {{"body"}, "json_invalid", "Invalid JSON"}};
    t.requests.push_back(b);
    ResponseTrace c = response("tr_a", t_1405);
    c.http_status = 200;
    c.response = {ResponseKind::sse_text, "hello"};
    t.responses.push_back(c);
    t.responses.push_back(response("tr_c", t_1405, R"({"id": "cmpl-1"})"));
    ResponseTrace e = response("tr_e", t_1405);
    e.response = {ResponseKind::text, "h\xFFllo"};
    t.responses.push_back(e);
    return t;
}

struct Written {
    std::vector<std::string> requests, responses;
    jsonlw::CloseReport report;
    std::uint64_t metadata_captured = 0;
};

// Writes traces() with `capture` (nullopt: options that do not name it) and reads them back.
Written write(std::optional<Capture> capture)
{
    Harness h;
    jsonlw::RequestTraceOptions o = trace_options(h, h.dir.path() / "traces");
    if (capture) o.capture = *capture;
    jsonlw::RequestTraceWriter w(h.executor(), std::move(o));
    h.start(w);
    const Traces t = traces();
    for (const auto& r : t.requests) REQUIRE(w.record_request(r) == jsonlw::SubmitResult::accepted);
    for (const auto& r : t.responses) REQUIRE(w.record_response(r) == jsonlw::SubmitResult::accepted);
    Written out;
    out.report = close(w);
    out.metadata_captured = w.metadata_captured();
    out.requests = read_lines(w.requests_file(t_1405));
    out.responses = read_lines(w.responses_file(t_1405));
    return out;
}

// The body's bytes as a full line holds it: a string's decoded value, else the JSON text.
std::string body_bytes(simdjson::dom::element body)
{
    std::string_view s;
    if (body.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
    return minified(body);
}

}  // namespace

TEST_CASE("With capture metadata, request and response bodies are replaced by body_len and "
          "body_sha256 of the bytes a full line holds, everything else kept and counted",
          "[request_trace][capture]")
{
    const Written m = write(Capture::metadata);
    REQUIRE(m.requests.size() == 2);
    REQUIRE(m.responses.size() == 3);
    const std::string head = R"("session":"s1","recorded_at":"2026-09-03T14:05:09.123456+00:00",)"
                             R"("server_arrival_time":null,"route":"/v1/completions",)";
    // The minified body {"prompt":"hello"}: 18 bytes.
    CHECK(m.requests[0] ==
          R"({"event":"request","trace_id":"tr_a",)" + head +
              R"("status":"accepted","headers":[["Authorization","[redacted]"],)"
              R"(["Content-Type","application/json"]],"capture":"metadata","body_len":18,)"
              R"("body_sha256":"8a44725210b9dcd4fefd9f0eca07b70ae45e69274a3105fb25eb426a2cf8bbf4"})");
    // Not JSON: the string "hello", whose SHA-256 is the well-known vector.
    Json b(m.requests[1]);
    CHECK(m.requests[1] ==
          R"({"event":"request","trace_id":"tr_b",)" + head +
              R"("status":"rejected_400","headers":[],"capture":"metadata","body_len":5,)"
              R"("body_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",)"
              R"("body_parse_error":")" + str(b["body_parse_error"]) +
              R"(","validation_errors":[{"loc":["body"],"type":"json_invalid","msg":"Invalid JSON"}]})");
    CHECK(str(b["body_parse_error"]).rfind("invalid JSON: ", 0) == 0);
    const std::string rhead = R"("session":"s1","finished_at":"2026-09-03T14:05:09.123456+00:00",)"
                              R"("status":"completed","client_id":null,"disagg_request_id":null,)"
                              R"("ctx_request_id":null,)";
    CHECK(m.responses[0] ==
          R"({"event":"response","trace_id":"tr_a",)" + rhead +
              R"("http_status":200,"capture":"metadata","response":{"kind":"sse_text","body_len":5,)"
              R"("body_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}})");
    CHECK(m.responses[1] ==
          R"({"event":"response","trace_id":"tr_c",)" + rhead +
              R"("capture":"metadata","response":{"kind":"json","body_len":15,)"
              R"("body_sha256":"ee17a6778b6c3da9ce0164b1568e3a65bc181bf08d4dd2275bba22b3e0f2fb61"}})");
    // Invalid UTF-8: digested as the full line holds it, "h\u{FFFD}llo" (7 bytes), counted
    // as sanitized.
    CHECK(m.responses[2] ==
          R"({"event":"response","trace_id":"tr_e",)" + rhead +
              R"("capture":"metadata","response":{"kind":"text","body_len":7,)"
              R"("body_sha256":"d72aaa93df5ea3243dc9ef496dde80ffff659a2e6b7164af2d7591f763edabf4"}})");
    CHECK(m.report.stats.written == 5);
    CHECK(m.report.stats.sanitized == 1);
    CHECK(m.metadata_captured == 5);
    for (const auto* lines : {&m.requests, &m.responses})
        for (const std::string& line : *lines) {
            CHECK(line.find("hello") == std::string::npos);
            CHECK(line.find("cmpl-1") == std::string::npos);
            CHECK(line.find("\"body\":") == std::string::npos);
        }
}

TEST_CASE("With capture full, the default, the lines are byte for byte those of a writer "
          "whose options do not name it, and nothing is counted as metadata",
          "[request_trace][capture]")
{
    const Written unnamed = write(std::nullopt);
    const Written full = write(Capture::full);
    CHECK(full.requests == unnamed.requests);
    CHECK(full.responses == unnamed.responses);
    CHECK(full.metadata_captured == 0);
    CHECK(unnamed.metadata_captured == 0);
    REQUIRE(full.responses.size() == 3);
    CHECK(full.responses[0] ==
          R"({"event":"response","trace_id":"tr_a","session":"s1",)"
          R"("finished_at":"2026-09-03T14:05:09.123456+00:00","status":"completed",)"
          R"("client_id":null,"disagg_request_id":null,"ctx_request_id":null,"http_status":200,)"
          R"("response":{"kind":"sse_text","body":"hello"}})");
    REQUIRE(full.requests.size() == 2);
    CHECK(full.requests[0].find(R"("headers":[["Authorization","[redacted]"],)"
                                R"(["Content-Type","application/json"]],"body":{"prompt":"hello"}})") !=
          std::string::npos);
}

TEST_CASE("Each metadata line's body_len and body_sha256 are those recomputed from the body of "
          "the full line of the same record",
          "[request_trace][capture]")
{
    const Written full = write(Capture::full);
    const Written meta = write(Capture::metadata);
    REQUIRE(full.requests.size() == meta.requests.size());
    REQUIRE(full.responses.size() == meta.responses.size());
    const auto same = [](const std::string& f, const std::string& m, bool response) {
        Json fj(f), mj(m);
        const simdjson::dom::element fb = response ? fj["response"]["body"].value() : fj["body"];
        const simdjson::dom::element mo = response ? mj["response"] : mj.root();
        const std::string bytes = body_bytes(fb);
        INFO(f << "\n" << m);
        CHECK(u64(mo, "body_len") == bytes.size());
        CHECK(str(mo, "body_sha256") == sha256_hex(bytes));
    };
    for (std::size_t i = 0; i < full.requests.size(); ++i)
        same(full.requests[i], meta.requests[i], false);
    for (std::size_t i = 0; i < full.responses.size(); ++i)
        same(full.responses[i], meta.responses[i], true);
}
