#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "trace_support.hpp"

#include <cmath>
#include <limits>
#include <set>

using namespace jsonlw_test;
using jsonlw::RequestTrace;
using jsonlw::ResponseTrace;

namespace {

const auto t_1405 = utc(2026, 9, 3, 14, 5, 9, 123456);

}  // namespace

TEST_CASE("A request line carries every field in TensorRT-LLM's order, credentials redacted "
          "and the body minified",
          "[request_trace]")
{
    TraceRig rig;
    RequestTrace r;
    r.trace_id = "tr_0123456789abcdef0123456789abcdef";
    r.session = " user@example.com ";
    r.recorded_at = t_1405;
    r.server_arrival_time = 1234.5;
    r.route = "/v1/chat/completions";
    r.headers = {{"Authorization", "Bearer sk-secret"},
                 {"PROXY-AUTHORIZATION", "Basic abc"},
                 {"Cookie", "sid=1"},
                 {"set-cookie", "sid=2"},
                 {"X-Api-Key", "k1"},
                 {"x_API_KEY_2", "k2"},
                 {"OpenAI-ApiKey", "k3"},
                 {"X-Auth-Token", "t"},
                 {"Client-Secret", "s"},
                 {"X-Password-Hint", "p"},
                 {"Content-Type", "application/json"},
                 {"X-Tag", "a"},
                 {"X-Tag", "b"}};
    r.body = "{ \"model\" : \"m\",\n  \"messages\" : [ {\"role\": \"user\", "
             "\"content\": \"h\u00e9llo \u2603 \U0001F600\"} ] }";
    rig.w().start();
    rig.loop.start();
    REQUIRE(rig.w().record_request(r) == jsonlw::SubmitResult::accepted);
    const auto report = close(rig.w());

    const auto file = rig.root() / "2026-09-03T14" / ("requests" + pid_suffix() + ".jsonl");
    REQUIRE(rig.w().requests_file(t_1405) == file);
    const auto lines = read_lines(file);
    REQUIRE(lines.size() == 1);
    // The whole line, byte for byte: compact, unicode kept raw, the body minified.
    CHECK(lines[0] ==
          R"({"event":"request","trace_id":"tr_0123456789abcdef0123456789abcdef",)"
          R"("session":"user_example.com","recorded_at":"2026-09-03T14:05:09.123456+00:00",)"
          R"("server_arrival_time":1234.5,"route":"/v1/chat/completions","status":"accepted",)"
          R"("headers":[["Authorization","[redacted]"],["PROXY-AUTHORIZATION","[redacted]"],)"
          R"(["Cookie","[redacted]"],["set-cookie","[redacted]"],["X-Api-Key","[redacted]"],)"
          R"(["x_API_KEY_2","[redacted]"],["OpenAI-ApiKey","[redacted]"],)"
          R"(["X-Auth-Token","[redacted]"],["Client-Secret","[redacted]"],)"
          R"(["X-Password-Hint","[redacted]"],["Content-Type","application/json"],)"
          R"(["X-Tag","a"],["X-Tag","b"]],)"
          "\"body\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
          "\"h\u00e9llo \u2603 \U0001F600\"}]}}");

    Json j(lines[0]);
    CHECK(j.keys() == std::vector<std::string>{"event", "trace_id", "session", "recorded_at",
                                               "server_arrival_time", "route", "status",
                                               "headers", "body"});
    CHECK(str(j["event"]) == "request");
    CHECK(str(j["trace_id"]) == r.trace_id);
    CHECK(str(j["session"]) == "user_example.com");
    CHECK(str(j["recorded_at"]) == "2026-09-03T14:05:09.123456+00:00");
    CHECK(dbl(j["server_arrival_time"]) == 1234.5);
    CHECK(str(j["route"]) == "/v1/chat/completions");
    CHECK(str(j["status"]) == "accepted");
    simdjson::dom::array headers;
    REQUIRE(j["headers"].get_array().get(headers) == simdjson::SUCCESS);
    REQUIRE(headers.size() == r.headers.size());
    std::size_t i = 0;
    for (simdjson::dom::element pair : headers) {
        simdjson::dom::array a;
        REQUIRE(pair.get_array().get(a) == simdjson::SUCCESS);
        REQUIRE(a.size() == 2);
        CHECK(str(a.at(0).value()) == r.headers[i].name);
        const bool secret = i < 10;
        CHECK(str(a.at(1).value()) == (secret ? "[redacted]" : r.headers[i].value));
        ++i;
    }
    CHECK(str(j["body"], "model") == "m");
    CHECK(str(j["body"]["messages"].at(0)["content"].value()) ==
          "h\u00e9llo \u2603 \U0001F600");

    CHECK(report.drained);
    CHECK(report.stats.written == 1);
    CHECK(invariant_holds(report.stats));
    CHECK(rig.logs.count(jsonlw::LogLevel::info, "Recording request traces to " +
                                                     rig.root().native()) == 1);
    CHECK(rig.seam->fsync_count() == 0);  // not durable
    CHECK_FALSE(std::filesystem::exists(rig.root() / "_writer"));
}

TEST_CASE("A rejected request carries its validation errors after the body", "[request_trace]")
{
    TraceRig rig;
    RequestTrace r = request("tr_rejected", t_1405, R"({"messages":[]})");
    r.status = jsonlw::RequestTraceStatus::rejected_400;
    r.validation_errors = std::vector<jsonlw::TraceValidationError>{
        {{"body", "model"}, "missing", "Field required"},
        {{"body", "messages", "0"}, "too_short", "List should have at least 1 item"}};
    rig.w().start();
    rig.loop.start();
    rig.w().record_request(r);
    close(rig.w());

    const auto lines = read_lines(rig.w().requests_file(t_1405));
    REQUIRE(lines.size() == 1);
    Json j(lines[0]);
    CHECK(j.keys() == std::vector<std::string>{"event", "trace_id", "session", "recorded_at",
                                               "server_arrival_time", "route", "status",
                                               "headers", "body", "validation_errors"});
    CHECK(str(j["status"]) == "rejected_400");
    CHECK(j["server_arrival_time"].is_null());
    CHECK(minified(j["headers"]) == "[]");
    CHECK(minified(j["body"]) == R"({"messages":[]})");
    CHECK(minified(j["validation_errors"]) ==
          R"([{"loc":["body","model"],"type":"missing","msg":"Field required"},)"
          R"({"loc":["body","messages","0"],"type":"too_short",)"
          R"("msg":"List should have at least 1 item"}])");
}

TEST_CASE("A response line carries every field of its schema; unknown ids are null and "
          "optional fields appear only when set",
          "[request_trace]")
{
    TraceRig rig;
    const auto t = utc(2026, 9, 3, 14, 7, 0, 1);

    ResponseTrace full;
    full.trace_id = "tr_full";
    full.session = "chat/42";
    full.finished_at = t;
    full.status = jsonlw::ResponseTraceStatus::client_disconnected;
    full.client_id = 7;
    full.ctx_request_id = 9007199254740993;  // 2^53 + 1: an int64, exact
    full.http_status = 200;
    full.termination = jsonlw::TraceTermination{"cancelled", std::nullopt};
    full.response = {jsonlw::ResponseKind::sse_text,
                     "data: {\"x\":\"\u00fc\"}\n\ndata: [DONE]\n\n"};
    full.response_status = "incomplete";
    full.incomplete_reason = "max_output_tokens";
    full.error_code = "server_error";

    ResponseTrace minimal = response("tr_min", t, "{ \"id\" : \"cmpl-1\", \"n\" : [1, 2.5] }");

    ResponseTrace text = response("tr_text", t, "plain \"text\"");
    text.response.kind = jsonlw::ResponseKind::text;
    text.status = jsonlw::ResponseTraceStatus::error;
    text.termination = jsonlw::TraceTermination{"exception", "RuntimeError: boom"};

    ResponseTrace bad_json = response("tr_badjson", t, "{\"id\": ");
    bad_json.status = jsonlw::ResponseTraceStatus::unknown;

    rig.w().start();
    rig.loop.start();
    for (const auto* r : {&full, &minimal, &text, &bad_json})
        REQUIRE(rig.w().record_response(*r) == jsonlw::SubmitResult::accepted);
    const auto report = close(rig.w());
    CHECK(report.stats.written == 4);

    const auto file = rig.root() / "2026-09-03T14" / ("responses" + pid_suffix() + ".jsonl");
    REQUIRE(rig.w().responses_file(t) == file);
    const auto lines = read_lines(file);
    REQUIRE(lines.size() == 4);

    CHECK(lines[0] ==
          R"({"event":"response","trace_id":"tr_full","session":"chat_42",)"
          R"("finished_at":"2026-09-03T14:07:00.000001+00:00","status":"client_disconnected",)"
          R"("client_id":7,"disagg_request_id":null,"ctx_request_id":9007199254740993,)"
          R"("http_status":200,"termination":{"cause":"cancelled","detail":null},)"
          R"("response":{"kind":"sse_text","body":"data: {\"x\":\")"
          "\u00fc"
          R"(\"}\n\ndata: [DONE]\n\n"},"response_status":"incomplete",)"
          R"("incomplete_reason":"max_output_tokens","error_code":"server_error"})");
    {
        Json j(lines[0]);
        CHECK(j.keys() == std::vector<std::string>{"event", "trace_id", "session",
                                                   "finished_at", "status", "client_id",
                                                   "disagg_request_id", "ctx_request_id",
                                                   "http_status", "termination", "response",
                                                   "response_status", "incomplete_reason",
                                                   "error_code"});
        CHECK(str(j["event"]) == "response");
        CHECK(str(j["session"]) == "chat_42");
        CHECK(str(j["finished_at"]) == "2026-09-03T14:07:00.000001+00:00");
        CHECK(str(j["status"]) == "client_disconnected");
        CHECK(i64(j["client_id"]) == 7);
        CHECK(j["disagg_request_id"].is_null());
        CHECK(i64(j["ctx_request_id"]) == 9007199254740993);
        CHECK(i64(j["http_status"]) == 200);
        CHECK(str(j["termination"], "cause") == "cancelled");
        CHECK(j["termination"]["detail"].is_null());
        CHECK(str(j["response"], "kind") == "sse_text");
        CHECK(str(j["response"], "body") == full.response.body);
        CHECK(str(j["response_status"]) == "incomplete");
        CHECK(str(j["incomplete_reason"]) == "max_output_tokens");
        CHECK(str(j["error_code"]) == "server_error");
    }
    {
        Json j(lines[1]);
        CHECK(j.keys() == std::vector<std::string>{"event", "trace_id", "session",
                                                   "finished_at", "status", "client_id",
                                                   "disagg_request_id", "ctx_request_id",
                                                   "response"});
        CHECK(str(j["trace_id"]) == "tr_min");
        CHECK(str(j["status"]) == "completed");
        CHECK(j["client_id"].is_null());
        CHECK(j["disagg_request_id"].is_null());
        CHECK(j["ctx_request_id"].is_null());
        CHECK(Json::keys_of(j["response"]) == std::vector<std::string>{"kind", "body"});
        CHECK(str(j["response"], "kind") == "json");
        CHECK(minified(j["response"]["body"]) == R"({"id":"cmpl-1","n":[1,2.5]})");
        CHECK(lines[1].find(R"("body":{"id":"cmpl-1","n":[1,2.5]})") != std::string::npos);
    }
    {
        Json j(lines[2]);
        CHECK(str(j["status"]) == "error");
        CHECK(str(j["termination"], "cause") == "exception");
        CHECK(str(j["termination"], "detail") == "RuntimeError: boom");
        CHECK(str(j["response"], "kind") == "text");
        CHECK(str(j["response"], "body") == "plain \"text\"");
    }
    {
        Json j(lines[3]);
        CHECK(str(j["status"]) == "unknown");
        CHECK(Json::keys_of(j["response"]) ==
              std::vector<std::string>{"kind", "body", "body_parse_error"});
        CHECK(str(j["response"], "kind") == "json");
        CHECK(str(j["response"], "body") == "{\"id\": ");
        CHECK(str(j["response"], "body_parse_error").rfind("invalid JSON: ", 0) == 0);
    }
}

TEST_CASE("A request body that is not JSON is kept as a string with body_parse_error",
          "[request_trace]")
{
    TraceRig rig;
    const std::vector<std::string> bodies = {
        "not json", "{\"a\":1} trailing", "", "{\"a\":", "[1,2,]", "\xff\xfe{}", "  42  "};
    rig.w().start();
    rig.loop.start();
    for (std::size_t i = 0; i < bodies.size(); ++i)
        rig.w().record_request(request("tr_" + std::to_string(i), t_1405, bodies[i]));
    const auto report = close(rig.w());

    const auto lines = read_lines(rig.w().requests_file(t_1405));
    REQUIRE(lines.size() == bodies.size());
    for (std::size_t i = 0; i < 5; ++i) {
        INFO("body: " << bodies[i]);
        Json j(lines[i]);
        CHECK(str(j["trace_id"]) == "tr_" + std::to_string(i));
        CHECK(j.keys().back() == "body_parse_error");
        CHECK(str(j["body"]) == bodies[i]);
        const std::string err = str(j["body_parse_error"]);
        if (bodies[i].empty()) CHECK(err == "empty body");
        else CHECK(err.rfind("invalid JSON: ", 0) == 0);
    }
    // Invalid UTF-8 is not JSON either; as a string it is sanitized (U+FFFD), and counted.
    {
        Json j(lines[5]);
        CHECK(str(j["body"]) == "\xEF\xBF\xBD\xEF\xBF\xBD{}");
        CHECK(str(j["body_parse_error"]).rfind("invalid JSON: ", 0) == 0);
    }
    // Any JSON value is a valid body: a bare number, whitespace trimmed.
    {
        Json j(lines[6]);
        CHECK_FALSE(j.has("body_parse_error"));
        CHECK(i64(j["body"]) == 42);
        CHECK(lines[6].find(R"("body":42})") != std::string::npos);
    }
    CHECK(report.stats.written == bodies.size());
    CHECK(report.stats.sanitized == 1);
    CHECK(invariant_holds(report.stats));
}

TEST_CASE("Session keys are sanitized: unsafe characters replaced, trimmed, capped at 128, "
          "empty or dot-leading ones become _no_session",
          "[request_trace]")
{
    using jsonlw::sanitize_session;
    CHECK(sanitize_session("abc.DEF_1-2") == "abc.DEF_1-2");
    CHECK(sanitize_session("  user@example.com\t\n") == "user_example.com");
    CHECK(sanitize_session("a b/c\\d:e") == "a_b_c_d_e");
    CHECK(sanitize_session("\u00e9\u65e5\U0001F600x") == "___x");  // one '_' per character
    CHECK(sanitize_session("") == "_no_session");
    CHECK(sanitize_session("   ") == "_no_session");
    CHECK(sanitize_session(".hidden") == "_no_session");
    CHECK(sanitize_session("../etc/passwd") == "_no_session");
    CHECK(sanitize_session("_x") == "_x");
    CHECK(sanitize_session(" .x") == "_no_session");
    CHECK(sanitize_session(std::string(200, 'x')) == std::string(128, 'x'));
    CHECK(sanitize_session(std::string(127, 'x') + "\u00e9\u00e9") == std::string(127, 'x') + "_");

    // And in the file.
    TraceRig rig;
    rig.w().start();
    rig.loop.start();
    const std::vector<std::string> raw = {"", ".dot", " ok-1 ", "a/b"};
    for (std::size_t i = 0; i < raw.size(); ++i) {
        RequestTrace r = request("tr_s" + std::to_string(i), t_1405);
        r.session = raw[i];
        rig.w().record_request(r);
    }
    close(rig.w());
    const auto lines = read_lines(rig.w().requests_file(t_1405));
    REQUIRE(lines.size() == 4);
    const std::vector<std::string> want = {"_no_session", "_no_session", "ok-1", "a_b"};
    for (std::size_t i = 0; i < lines.size(); ++i) {
        Json j(lines[i]);
        CHECK(str(j["trace_id"]) == "tr_s" + std::to_string(i));
        CHECK(str(j["session"]) == want[i]);
    }
}

TEST_CASE("Credential headers are recognized by exact name or name fragment, in any case",
          "[request_trace]")
{
    using jsonlw::is_credential_header;
    for (const char* n : {"authorization", "Authorization", "AUTHORIZATION", "proxy-authorization",
                          "Proxy-Authorization", "cookie", "COOKIE", "set-cookie", "Set-Cookie",
                          "x-api-key", "X-API-KEY", "my_api_key", "ApiKey", "x-apikey-2",
                          "token", "X-Auth-Token", "access_TOKEN", "client-secret", "SECRET",
                          "password", "X-Password"})
        CHECK(is_credential_header(n));
    for (const char* n : {"content-type", "accept", "x-request-id", "cookies-policy-x",
                          "authorization-hint", "user-agent", "api", "key", "tok-en", ""})
        CHECK_FALSE(is_credential_header(n));
}

TEST_CASE("new_trace_id gives tr_ and 32 lowercase hex digits, a new one every call",
          "[request_trace]")
{
    std::set<std::string> seen;
    for (int i = 0; i < 2000; ++i) {
        const std::string id = jsonlw::new_trace_id();
        REQUIRE(id.size() == 35);
        REQUIRE(id.rfind("tr_", 0) == 0);
        for (char c : id.substr(3)) REQUIRE(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
        seen.insert(id);
    }
    CHECK(seen.size() == 2000);
    // Another thread has its own generator (and does not repeat this one's ids).
    std::string other;
    std::thread([&] { other = jsonlw::new_trace_id(); }).join();
    CHECK(seen.count(other) == 0);
}

TEST_CASE("A request and its response land in different hour folders when their timestamps "
          "straddle an hour",
          "[request_trace]")
{
    TraceRig rig;
    const auto before = utc(2026, 9, 3, 14, 59, 59, 999999);
    const auto after = utc(2026, 9, 3, 15, 0, 0, 0);
    const auto next_day = utc(2026, 9, 4, 0, 0, 1);
    rig.w().start();
    rig.loop.start();
    rig.w().record_request(request("tr_h", before));
    rig.w().record_response(response("tr_h", after));
    rig.w().record_response(response("tr_d", next_day));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 3);
    CHECK(report.stats.batches == 3);  // one batch, three (hour, kind) groups

    const auto req = rig.root() / "2026-09-03T14" / ("requests" + pid_suffix() + ".jsonl");
    const auto resp = rig.root() / "2026-09-03T15" / ("responses" + pid_suffix() + ".jsonl");
    const auto resp2 = rig.root() / "2026-09-04T00" / ("responses" + pid_suffix() + ".jsonl");
    CHECK_FALSE(std::filesystem::exists(rig.root() / "2026-09-03T15" /
                                        ("requests" + pid_suffix() + ".jsonl")));
    CHECK_FALSE(std::filesystem::exists(rig.root() / "2026-09-03T14" /
                                        ("responses" + pid_suffix() + ".jsonl")));
    const auto a = read_lines(req), b = read_lines(resp), c = read_lines(resp2);
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 1);
    REQUIRE(c.size() == 1);
    Json ja(a[0]), jb(b[0]), jc(c[0]);
    CHECK(str(ja["event"]) == "request");
    CHECK(str(ja["trace_id"]) == "tr_h");
    CHECK(str(ja["recorded_at"]) == "2026-09-03T14:59:59.999999+00:00");
    CHECK(str(jb["event"]) == "response");
    CHECK(str(jb["trace_id"]) == "tr_h");
    CHECK(str(jb["finished_at"]) == "2026-09-03T15:00:00.000000+00:00");
    CHECK(str(jc["trace_id"]) == "tr_d");
    CHECK(str(jc["finished_at"]) == "2026-09-04T00:00:01.000000+00:00");
}

TEST_CASE("70 queued records are appended as one write per (hour, kind) group of each "
          "32-record batch",
          "[request_trace]")
{
    TraceRig rig;
    rig.w().start();
    // Queued before the loop runs: the drain then takes them 32 at a time.
    for (int i = 0; i < 70; ++i) {
        const std::string id = "tr_" + std::to_string(i);
        if (i % 2 == 0)
            REQUIRE(rig.w().record_request(request(id, t_1405)) == jsonlw::SubmitResult::accepted);
        else
            REQUIRE(rig.w().record_response(response(id, t_1405)) ==
                    jsonlw::SubmitResult::accepted);
    }
    rig.loop.start();
    const auto report = close(rig.w());

    CHECK(rig.seam->successful_write_lines() == std::vector<std::size_t>{16, 16, 16, 16, 3, 3});
    CHECK(rig.seam->fsync_count() == 0);
    CHECK(report.stats.submitted == 70);
    CHECK(report.stats.written == 70);
    CHECK(report.stats.batches == 6);  // successful appends
    CHECK(report.stats.pending == 0);
    CHECK(invariant_holds(report.stats));

    const auto req = read_lines(rig.w().requests_file(t_1405));
    const auto resp = read_lines(rig.w().responses_file(t_1405));
    REQUIRE(req.size() == 35);
    REQUIRE(resp.size() == 35);
    for (std::size_t k = 0; k < 35; ++k) {
        Json a(req[k]), b(resp[k]);
        CHECK(str(a["event"]) == "request");
        CHECK(str(a["trace_id"]) == "tr_" + std::to_string(2 * k));
        CHECK(str(a["session"]) == "s1");
        CHECK(str(a["recorded_at"]) == "2026-09-03T14:05:09.123456+00:00");
        CHECK(str(a["body"], "model") == "m");
        CHECK(str(b["event"]) == "response");
        CHECK(str(b["trace_id"]) == "tr_" + std::to_string(2 * k + 1));
        CHECK(str(b["response"]["body"], "id") == "cmpl-1");
    }
}

TEST_CASE("A record without a trace_id is dropped alone, with one warning, and counted",
          "[request_trace]")
{
    TraceRig rig;
    rig.w().start();
    rig.w().record_request(request("tr_a", t_1405));
    rig.w().record_request(request("", t_1405));
    rig.w().record_response(response("", t_1405));
    rig.w().record_request(request("tr_b", t_1405));
    rig.loop.start();
    const auto report = close(rig.w());

    CHECK(report.stats.submitted == 4);
    CHECK(report.stats.written == 2);
    CHECK(report.stats.dropped.malformed == 2);
    CHECK(invariant_holds(report.stats));
    // Rate-limited per reason: the first malformed record is logged, the second is not.
    CHECK(rig.logs.count(jsonlw::LogLevel::warning, "Dropped malformed request trace record") == 1);
    CHECK(rig.logs.count(jsonlw::LogLevel::warning,
                         "Dropped malformed request trace record: request line without a "
                         "trace_id") == 1);
    CHECK(rig.logs.count(jsonlw::LogLevel::error) == 0);
    const auto lines = read_lines(rig.w().requests_file(t_1405));
    REQUIRE(lines.size() == 2);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_a");
    CHECK(str(Json(lines[1])["trace_id"]) == "tr_b");
    // The response group had only the malformed record: no file was created for it.
    CHECK_FALSE(std::filesystem::exists(rig.w().responses_file(t_1405)));
}

TEST_CASE("An unknown or non-finite server_arrival_time is written as null", "[request_trace]")
{
    TraceRig rig;
    rig.w().start();
    rig.loop.start();
    const std::vector<std::optional<double>> values = {
        std::nullopt, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(), 0.25, 1000.0};
    for (std::size_t i = 0; i < values.size(); ++i) {
        RequestTrace r = request("tr_n" + std::to_string(i), t_1405);
        r.server_arrival_time = values[i];
        rig.w().record_request(r);
    }
    const auto report = close(rig.w());
    CHECK(report.stats.written == values.size());
    const auto lines = read_lines(rig.w().requests_file(t_1405));
    REQUIRE(lines.size() == values.size());
    for (std::size_t i = 0; i < 3; ++i) {
        Json j(lines[i]);
        CHECK(str(j["trace_id"]) == "tr_n" + std::to_string(i));
        CHECK(j["server_arrival_time"].is_null());
    }
    CHECK(dbl(Json(lines[3])["server_arrival_time"]) == 0.25);
    CHECK(lines[4].find(R"("server_arrival_time":1000.0,)") != std::string::npos);
    CHECK(dbl(Json(lines[4])["server_arrival_time"]) == 1000.0);
}

TEST_CASE("Invalid UTF-8 in a header, route or session is replaced and the record counted as "
          "sanitized",
          "[request_trace]")
{
    TraceRig rig;
    rig.w().start();
    rig.loop.start();
    RequestTrace r = request("tr_u", t_1405);
    r.route = "/v1/\xC3(";
    r.headers = {{"X-Name", "caf\xE9"}};
    r.session = "ok";
    rig.w().record_request(r);
    const auto report = close(rig.w());
    CHECK(report.stats.written == 1);
    CHECK(report.stats.sanitized == 1);
    const auto lines = read_lines(rig.w().requests_file(t_1405));
    REQUIRE(lines.size() == 1);
    Json j(lines[0]);
    CHECK(str(j["route"]) == "/v1/\xEF\xBF\xBD(");
    CHECK(str(j["headers"].at(0).at(1).value()) == "caf\xEF\xBF\xBD");
}

TEST_CASE("A record without a timestamp is stamped when it is recorded", "[request_trace]")
{
    TraceRig rig;
    rig.w().start();
    rig.loop.start();
    const auto before = jsonlw::WallClock::now();
    RequestTrace q = request("tr_now", {});
    ResponseTrace p = response("tr_now", {});
    rig.w().record_request(q);
    rig.w().record_response(p);
    const auto after = jsonlw::WallClock::now();
    close(rig.w());
    // Both lines are in the folder of the hour they were recorded in.
    std::vector<std::string> req, resp;
    for (const auto t : {before, after}) {
        if (req.empty() && std::filesystem::exists(rig.w().requests_file(t)))
            req = read_lines(rig.w().requests_file(t));
        if (resp.empty() && std::filesystem::exists(rig.w().responses_file(t)))
            resp = read_lines(rig.w().responses_file(t));
    }
    REQUIRE(req.size() == 1);
    REQUIRE(resp.size() == 1);
    const std::string at = str(Json(req[0])["recorded_at"]);
    CHECK(at >= jsonlw::utc_iso8601(before));
    CHECK(at <= jsonlw::utc_iso8601(after));
    const std::string fin = str(Json(resp[0])["finished_at"]);
    CHECK(fin >= jsonlw::utc_iso8601(before));
    CHECK(fin <= jsonlw::utc_iso8601(after));
}

TEST_CASE("Without a directory the writer is inert: nothing is created and records are "
          "refused as disabled",
          "[request_trace]")
{
    LogCapture logs;
    IoRunner io;
    jsonlw::RequestTraceOptions o;
    o.log = logs.sink();
    o.durable = true;
    jsonlw::RequestTraceWriter w(io.executor(), o);
    w.start();
    io.start();
    CHECK(w.record_request(request("tr_x", t_1405)) == jsonlw::SubmitResult::disabled);
    CHECK(w.record_response(response("tr_x", t_1405)) == jsonlw::SubmitResult::disabled);
    const auto report = close(w);
    CHECK(report.stats == jsonlw::WriterStats{});
    CHECK(w.generation().empty());
    CHECK(w.sidecar_path().empty());
    CHECK(logs.size() == 0);
}

TEST_CASE("A directory that cannot be created disables the writer with one error",
          "[request_trace]")
{
    Harness h;
    write_file(h.dir / "file", "x");
    auto o = trace_options(h, h.dir / "file" / "traces");
    o.durable = true;
    {
        jsonlw::RequestTraceWriter w(h.executor(), o);
        w.start();
        w.start();
        h.loop.start();
        CHECK(w.record_request(request("tr_x", t_1405)) == jsonlw::SubmitResult::disabled);
        close(w);
        CHECK(w.stats().submitted == 0);
    }
    // TensorRT-LLM's wording, not the core's "Disabling request trace JSONL output".
    CHECK(h.logs.count(jsonlw::LogLevel::error, "Disabling request trace output: ") == 1);
    CHECK(h.logs.count(jsonlw::LogLevel::info) == 0);
    CHECK(h.logs.size() == 1);
}

TEST_CASE("A writer suffix replaces -<pid> in the file names", "[request_trace]")
{
    Harness h;
    auto o = trace_options(h, h.dir.path());
    o.writer_suffix = "-node7-rank0";
    jsonlw::RequestTraceWriter w(h.executor(), o);
    h.start(w);
    w.record_request(request("tr_sfx", t_1405));
    close(w);
    CHECK(w.writer_suffix() == "-node7-rank0");
    const auto file = h.dir / "2026-09-03T14" / "requests-node7-rank0.jsonl";
    CHECK(w.requests_file(t_1405) == file);
    const auto lines = read_lines(file);
    REQUIRE(lines.size() == 1);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_sfx");
}

TEST_CASE("A torn last line in an existing shard gets a newline before new lines, also without "
          "durable mode",
          "[request_trace]")
{
    TraceRig rig;
    const auto file = rig.w().responses_file(t_1405);
    std::filesystem::create_directories(file.parent_path());
    write_file(file, R"({"event":"response","trace_id":"tr_old"})" "\n" R"({"event":"resp)");
    rig.w().start();
    rig.loop.start();
    rig.w().record_response(response("tr_new", t_1405));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 1);
    CHECK(invariant_holds(report.stats));
    const auto lines = read_lines(file);
    REQUIRE(lines.size() == 3);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_old");
    CHECK(lines[1] == R"({"event":"resp)");
    Json j(lines[2]);
    CHECK(str(j["event"]) == "response");
    CHECK(str(j["trace_id"]) == "tr_new");
    CHECK(str(j["response"]["body"], "id") == "cmpl-1");
}
