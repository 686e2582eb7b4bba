// libFuzzer target: the request path of `jsonlw serve` (tools/serve/http_session.cpp), from
// the bytes a client sends to the JSON the server answers with. The input after its first
// byte arrives in two reads, split where the first byte says, and goes through Beast's
// request_parser configured and fed as HttpSession feeds it (header_limit 16384, body_limit
// 1 MiB, eager; put() over the bytes held, consume, stop on need_more); each request that
// completes (keep-alive: the next one starts on the bytes left) has its target, headers and
// traceparent read as HttpSession reads them, and its body parsed for both endpoints
// (parse_completion_request). An accepted request gets a whole body, a stream's events and
// the usage event written from tokens with and without per-token data, and a rejected one
// its error body: every one must be JSON that simdjson accepts, with the tokens' text in
// it. Never a crash, never a hang.
#include "openai_api.hpp"

#include <jsonlw/request_trace_record.hpp>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace {

namespace http = boost::beast::http;
namespace serve = jsonlw::serve;
using Parser = http::request_parser<http::string_body>;

constexpr std::size_t header_limit = 16 * 1024;  // ServeOptions' defaults
constexpr std::size_t body_limit = 1024 * 1024;

simdjson::dom::parser& json_parser()
{
    static simdjson::dom::parser p;
    return p;
}

simdjson::dom::element parse_or_abort(std::string_view text)
{
    simdjson::dom::element doc;
    if (json_parser().parse(text.data(), text.size()).get(doc) != simdjson::SUCCESS) std::abort();
    return doc;
}

// Per-token data as the snapshot stage makes it, with the values that must become null.
std::vector<jsonlw::TokenLogprob> token_data()
{
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<jsonlw::TokenLogprob> v(4);
    v[0] = {7, -0.25, 1, {{7, -0.25}, {8, -1.5}, {71, -1.5}, {9, -2.0}, {10, -3.0}}};
    v[1] = {-3, -inf, std::nullopt, {{-3, -inf}, {0, nan}}};
    v[2] = {4095, nan, 3, {{1, -0.5}, {2, -1e-300}, {4095, nan}}};
    v[3] = {0, 0.0, std::nullopt, {}, false};  // not known: written as a token without data
    return v;
}

// The text every token list below must come out as, on both endpoints.
std::string text_of(const std::vector<serve::GeneratedToken>& tokens)
{
    std::string s;
    for (const auto& t : tokens) s += serve::token_text(t.id);
    return s;
}

void check_event(std::string_view event)
{
    constexpr std::string_view prefix = "data: ", suffix = "\n\n";
    if (event.size() < prefix.size() + suffix.size() || !event.starts_with(prefix) ||
        !event.ends_with(suffix))
        std::abort();
    parse_or_abort(event.substr(prefix.size(), event.size() - prefix.size() - suffix.size()));
}

// An accepted request answered from tokens with and without data, as the session does.
void answer(const serve::CompletionRequest& req, std::uint8_t seed)
{
    static const std::vector<jsonlw::TokenLogprob> data = token_data();
    std::vector<serve::GeneratedToken> tokens;
    const std::int32_t ids[] = {0, 1, 63, 64, std::int32_t(seed) * 37, -1,
                                std::numeric_limits<std::int32_t>::max()};
    for (std::size_t i = 0; i < std::size(ids); ++i)
        tokens.push_back({ids[i], (seed >> (i % 8)) & 1 ? nullptr : &data[i % data.size()]});
    const serve::ResponseMeta meta{req.endpoint == serve::Endpoint::completions ? "cmpl-1"
                                                                                : "chatcmpl-1",
                                   1'700'000'000, req.model};
    const serve::Usage usage{req.prompt_tokens, std::uint32_t(tokens.size())};
    const std::string want = text_of(tokens);

    const std::string body = serve::completion_body(req, meta, tokens, "length", usage);
    simdjson::dom::element doc = parse_or_abort(body);
    std::string_view text;
    const bool chat = req.endpoint == serve::Endpoint::chat_completions;
    const auto choice = doc["choices"].at(0);
    if ((chat ? choice["message"]["content"] : choice["text"]).get(text) != simdjson::SUCCESS ||
        text != want)
        std::abort();
    std::uint64_t completion_tokens = 0;
    if (doc["usage"]["completion_tokens"].get(completion_tokens) != simdjson::SUCCESS ||
        completion_tokens != tokens.size())
        std::abort();
    if (req.logprobs) {
        simdjson::dom::array positions;
        const auto lp = choice["logprobs"];
        if ((chat ? lp["content"] : lp["tokens"]).get(positions) != simdjson::SUCCESS ||
            positions.size() != tokens.size())
            std::abort();
    }

    // A stream: a chunk of no token (chat's role chunk), a chunk per token (the first marked
    // first, as completions sends it), the closing one, the usage event.
    std::string event;
    serve::append_chunk_event(event, req, meta, {}, 0, true, serve::FinishReason{});
    check_event(event);
    std::size_t offset = 0;
    for (std::size_t i = 0; i <= tokens.size(); ++i) {
        event.clear();
        const bool last = i == tokens.size();
        const std::span<const serve::GeneratedToken> some =
            last ? std::span<const serve::GeneratedToken>{}
                 : std::span<const serve::GeneratedToken>(&tokens[i], 1);
        serve::append_chunk_event(event, req, meta, some, offset, i == 0,
                                  last ? serve::FinishReason("stop") : serve::FinishReason{});
        check_event(event);
        if (!last) offset += serve::token_text(tokens[i].id).size();
    }
    event.clear();
    serve::append_usage_event(event, req, meta, usage);
    check_event(event);
}

// One request Beast has parsed whole, read as HttpSession::request_info() and dispatch() do.
void handle(Parser& p, std::uint8_t seed)
{
    auto& req = p.get();
    const std::string_view target = req.target();
    const std::string route(target.substr(0, target.find('?')));
    std::vector<jsonlw::TraceHeader> headers;
    for (const auto& f : req) headers.push_back({std::string(f.name_string()), std::string(f.value())});
    const jsonlw::HeaderTraceContext tc = jsonlw::trace_context_of(headers);
    if (tc.context && tc.context->traceparent().size() != jsonlw::TraceContext::traceparent_size)
        std::abort();
    (void)req.keep_alive();

    const serve::ApiLimits limits;
    for (const serve::Endpoint e : {serve::Endpoint::completions, serve::Endpoint::chat_completions}) {
        auto parsed = serve::parse_completion_request(e, req.body(), limits);
        if (const auto* err = std::get_if<serve::ApiError>(&parsed)) {
            if (err->status != 400 && err->status != 404) std::abort();
            parse_or_abort(serve::error_body(*err));
            continue;
        }
        const auto& creq = std::get<serve::CompletionRequest>(parsed);
        if (creq.endpoint != e || creq.model != limits.model || creq.max_tokens < 1 ||
            creq.max_tokens > limits.max_tokens || creq.top_logprobs < 0 ||
            creq.top_logprobs > limits.max_top_logprobs || creq.prompt_tokens < 1 ||
            (creq.include_usage && !creq.stream))
            std::abort();
        answer(creq, seed);
    }
}

// HttpSession::await_request(): a new parser per request (Beast's parsers do not restart).
void fresh(std::optional<Parser>& p)
{
    p.emplace();
    p->header_limit(std::uint32_t(header_limit));
    p->body_limit(body_limit);
    p->eager(true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t split = input.size() * data[0] / 255;
    const std::string_view reads[] = {input.substr(0, split), input.substr(split)};

    boost::beast::flat_buffer buffer;
    std::optional<Parser> parser;
    fresh(parser);
    for (const std::string_view bytes : reads) {
        if (bytes.empty()) continue;
        auto space = buffer.prepare(bytes.size());
        std::memcpy(space.data(), bytes.data(), bytes.size());
        buffer.commit(bytes.size());
        // HttpSession::parse(): each turn consumes bytes, completes a request, or stops.
        for (std::size_t turns = 0; buffer.size() != 0; ++turns) {
            if (turns > 2 * size + 16) std::abort();  // no progress: a hang
            boost::system::error_code ec;
            const std::size_t held = buffer.size();
            const std::size_t n = parser->put(buffer.data(), ec);
            if (n > held) std::abort();
            buffer.consume(n);
            if (ec == http::error::need_more) break;
            if (ec) return 0;  // answered 400/413/431 and closed
            if (parser->is_done()) {
                handle(*parser, data[0]);
                if (!parser->get().keep_alive()) return 0;
                fresh(parser);  // the next request, on the bytes left
                continue;
            }
            if (n == 0) break;
        }
    }
    return 0;
}
