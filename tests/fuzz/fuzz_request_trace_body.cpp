// libFuzzer target: the request-trace body path. Any bytes as a request body (and as a JSON
// response body) → one valid JSON line; a body simdjson accepts as one JSON document is
// written as that value (parsed, minified) without body_parse_error; anything else is written
// as a string — the body with invalid UTF-8 replaced by U+FFFD — with body_parse_error.
#include "fuzz_support.hpp"

#include <jsonlw/request_trace_writer.hpp>

#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

// `body` of the one line in `line` against what the body text should become.
void check(simdjson::dom::parser& parser, const std::string& line, std::string_view body_key_path,
           const std::string& body)
{
    if (line.empty() || line.back() != '\n' || line.find('\n') != line.size() - 1) std::abort();
    // What the body should be: parse it first (the parser's document is replaced below).
    simdjson::dom::element want;
    const bool valid = parser.parse(body).get(want) == simdjson::SUCCESS;
    const std::string want_text = valid ? simdjson::minify(want) : jsonlw_fuzz::sanitize_utf8(body);

    simdjson::dom::element doc;
    if (parser.parse(line.data(), line.size() - 1).get(doc) != simdjson::SUCCESS) std::abort();
    simdjson::dom::element holder = doc;
    if (body_key_path == "response")
        if (doc["response"].get(holder) != simdjson::SUCCESS) std::abort();
    simdjson::dom::element got;
    if (holder["body"].get(got) != simdjson::SUCCESS) std::abort();
    const bool has_error = holder["body_parse_error"].error() == simdjson::SUCCESS;
    if (valid) {
        if (has_error || simdjson::minify(got) != want_text) std::abort();
    } else {
        std::string_view s;
        if (!has_error || got.get_string().get(s) != simdjson::SUCCESS || s != want_text)
            std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static auto* h = new jsonlw_fuzz::Harness<jsonlw::RequestTraceWriter>;  // lives for the process
    static simdjson::dom::parser parser;
    const std::string body(reinterpret_cast<const char*>(data), size);
    const auto t = jsonlw::WallClock::time_point(std::chrono::hours(500'000));

    jsonlw::RequestTrace q;
    q.trace_id = "tr_fuzz";
    q.session = body.substr(0, 40);
    q.recorded_at = t;
    q.route = "/v1/completions";
    q.headers = {{"Authorization", body}, {body.substr(0, 16), "v"}};
    q.body = body;
    h->sink->data.clear();
    if (h->writer.record_request(std::move(q)) != jsonlw::SubmitResult::accepted) std::abort();
    jsonlw_fuzz::settle(h->loop, h->io, h->writer);
    if (h->writer.stats().written == 0) std::abort();
    check(parser, h->sink->data, "", body);

    jsonlw::ResponseTrace r;
    r.trace_id = "tr_fuzz";
    r.finished_at = t;
    r.response = {jsonlw::ResponseKind::json, body};
    h->sink->data.clear();
    if (h->writer.record_response(std::move(r)) != jsonlw::SubmitResult::accepted) std::abort();
    jsonlw_fuzz::settle(h->loop, h->io, h->writer);
    check(parser, h->sink->data, "response", body);
    return 0;
}
