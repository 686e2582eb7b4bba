// The bytes of one generation's answer (generation_response.hpp).
#include "generation_response.hpp"

#include <boost/beast/http/status.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace jsonlw::serve {

std::string response_head(int status, std::string_view content_type, std::size_t length,
                          std::string_view extra, bool keep_alive)
{
    namespace http = boost::beast::http;
    return fmt::format("HTTP/1.1 {} {}\r\nServer: jsonlw\r\nContent-Type: {}\r\n"
                       "Content-Length: {}\r\n{}{}\r\n",
                       status, std::string_view(http::obsolete_reason(http::status(status))),
                       content_type, length, extra, keep_alive ? "" : "Connection: close\r\n");
}

void append_chunk(std::string& out, std::string_view data)
{
    if (data.empty()) return;
    fmt::format_to(std::back_inserter(out), "{:x}\r\n", data.size());
    out += data;
    out += "\r\n";
}

void GenerationResponse::reset() noexcept
{
    emitted_ = 0;
    text_offset_ = 0;
}

bool GenerationResponse::progress(Generation& g, bool keep_alive, bool record_stream,
                                  std::string& out, std::string& body)
{
    return g.request.stream ? stream_progress(g, record_stream, out)
                            : whole_progress(g, keep_alive, out, body);
}

void GenerationResponse::collect(const Generation& g, std::size_t from, std::size_t to)
{
    tokens_.clear();
    for (std::size_t i = from; i < to; ++i)
        tokens_.push_back(GeneratedToken{g.token_ids[i], g.data[i] ? &*g.data[i] : nullptr});
}

bool GenerationResponse::stream_progress(Generation& g, bool record_stream, std::string& out)
{
    const bool last = g.engine_done;
    if (emitted_ == g.settled && !last) return false;
    collect(g, emitted_, g.settled);
    std::size_t chars = 0;
    for (const GeneratedToken& t : tokens_) chars += token_text(t.id).size();
    event_.clear();
    bool first_chunk = emitted_ == 0;
    if (first_chunk && !tokens_.empty() && g.request.endpoint == Endpoint::chat_completions) {
        // The role alone first, as OpenAI and vLLM send it: the openai SDK's stream helper
        // takes the first chunk's logprobs as its list and appends every later chunk's to
        // it, so tokens on the role chunk would reach its final completion twice.
        append_chunk_event(event_, g.request, g.meta(), {}, 0, true, FinishReason{});
        first_chunk = false;
    }
    append_chunk_event(event_, g.request, g.meta(), tokens_, text_offset_, first_chunk,
                       last ? g.finish_reason() : FinishReason{});
    if (emitted_ == 0 && !tokens_.empty()) g.server_first_token = ServeClock::now();
    emitted_ = g.settled;
    text_offset_ += chars;
    if (last) {
        if (g.request.include_usage)
            append_usage_event(event_, g.request, g.meta(),
                               Usage{g.request.prompt_tokens, std::uint32_t(g.token_ids.size())});
        event_ += done_event;
    }
    append_chunk(out, event_);
    if (record_stream) {
        // The trace keeps the whole stream: sized once from the first event, not reallocated
        // on the way (a chat stream with logprobs is ~0.5 KB a token; at most 256 KiB ahead).
        if (g.streamed.empty())
            g.streamed.reserve(std::min<std::size_t>(
                (event_.size() + 64) * (g.request.max_tokens + 3), std::size_t{256} << 10));
        g.streamed += event_;
    }
    if (last) out += chunked_end;
    return last;
}

bool GenerationResponse::whole_progress(Generation& g, bool keep_alive, std::string& out,
                                        std::string& body)
{
    if (!g.engine_done) return false;
    collect(g, 0, g.token_ids.size());
    body = completion_body(g.request, g.meta(), tokens_, g.finish_reason(),
                           Usage{g.request.prompt_tokens, std::uint32_t(g.token_ids.size())});
    out += response_head(200, "application/json", body.size(),
                         fmt::format("x-request-id: {}\r\ntraceparent: {}\r\n", g.id,
                                     g.trace.traceparent()),
                         keep_alive);
    out += body;
    g.server_first_token = ServeClock::now();
    return true;
}

}  // namespace jsonlw::serve
