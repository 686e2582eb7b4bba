// Writing OpenAI responses (openai_api.hpp): bodies and Server-Sent Events written straight
// into a per-thread LineBuffer with JsonLine, so every string is escaped and every logprob
// spelled exactly as the raw-output writer writes it in its JSON Lines; and the demo
// tokenizer's texts.
#include "openai_api.hpp"

#include <jsonlw/json_line.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace jsonlw::serve {
namespace {

using namespace jsonlw::literals;

// The demo tokenizer's vocabulary; a token's text is its word after one space, so an output's
// text is its tokens' texts concatenated. None needs escaping in JSON.
constexpr std::array<std::string_view, 64> vocabulary = {
    " the",      " model",   " writes",     " records", " without", " blocking", " its",
    " loop",     " and",     " every",      " line",    " is",      " valid",    " JSON",
    " a",        " token",   " per",        " step",    " from",    " GPU",      " to",
    " disk",     " fast",    " batch",      " queue",   " never",   " loses",    " count",
    " drop",     " we",      " measure",    " what",    " matters", " latency",  " throughput",
    " in",       " order",   " on",         " time",    " with",    " care",     " so",
    " that",     " readers", " can",        " trust",   " files",   " later",    " .",
    " ,",        " !",       " ?",          " of",      " it",      " runs",     " here",
    " now",      " again",   " each",       " request", " gets",    " answer",   " done",
    " ok",
};

// The per-thread buffer every body is built in: a streamed token costs no allocation once it
// has grown to the largest event.
LineBuffer& scratch() noexcept
{
    thread_local LineBuffer buf;
    buf.clear();
    return buf;
}

std::string_view object_name(Endpoint e, bool chunk) noexcept
{
    if (e == Endpoint::completions) return "text_completion";  // OpenAI's chunks too
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

bool has_data(const GeneratedToken& t) noexcept { return t.data && t.data->known; }

std::size_t top_count(const CompletionRequest& req, const TokenLogprob& d) noexcept
{
    return std::min(std::size_t(std::max(req.top_logprobs, 0)), d.top.size());
}

void write_head(JsonLine& j, const ResponseMeta& meta, std::string_view object)
{
    j.begin_object()
        .field("id"_key, meta.id)
        .field("object"_key, object)
        .field("created"_key, meta.created)
        .field("model"_key, meta.model);
}

void write_text(JsonLine& j, std::span<const GeneratedToken> tokens)
{
    thread_local std::string text;
    text.clear();
    for (const GeneratedToken& t : tokens) text += token_text(t.id);
    j.string(text);
}

void write_finish(JsonLine& j, FinishReason finish)
{
    j.key("finish_reason"_key);
    if (finish) j.string(*finish);
    else j.null();
}

void write_usage(JsonLine& j, Usage u)
{
    j.key("usage"_key)
        .begin_object()
        .field("prompt_tokens"_key, u.prompt_tokens)
        .field("completion_tokens"_key, u.completion_tokens)
        .field("total_tokens"_key, std::uint64_t(u.prompt_tokens) + u.completion_tokens)
        .end_object();
}

// Completions' logprobs. A token without data (its step dropped, or not known) gets a null
// logprob and a null top_logprobs entry; two alternatives with the same text keep the first,
// the likelier, as the object cannot hold both.
void write_completion_logprobs(JsonLine& j, const CompletionRequest& req,
                               std::span<const GeneratedToken> tokens, std::size_t text_offset)
{
    j.begin_object();
    j.key("tokens"_key).begin_array();
    for (const GeneratedToken& t : tokens) j.string(token_text(t.id));
    j.end_array();
    j.key("token_logprobs"_key).begin_array();
    for (const GeneratedToken& t : tokens) {
        if (has_data(t)) write_logprob(j, t.data->logprob);
        else j.null();
    }
    j.end_array();
    j.key("top_logprobs"_key).begin_array();
    for (const GeneratedToken& t : tokens) {
        if (!has_data(t)) {
            j.null();
            continue;
        }
        const auto& top = t.data->top;
        const std::size_t n = top_count(req, *t.data);
        j.begin_object();
        for (std::size_t i = 0; i < n; ++i) {
            const std::string_view text = token_text(top[i].token_id);
            bool seen = false;
            for (std::size_t k = 0; k < i && !seen; ++k) seen = token_text(top[k].token_id) == text;
            if (seen) continue;
            j.key(text);
            write_logprob(j, top[i].logprob);
        }
        j.end_object();
    }
    j.end_array();
    j.key("text_offset"_key).begin_array();
    for (const GeneratedToken& t : tokens) {
        j.value(std::uint64_t(text_offset));
        text_offset += token_text(t.id).size();
    }
    j.end_array();
    j.end_object();
}

void write_bytes(JsonLine& j, std::string_view text)
{
    j.key("bytes"_key).begin_array();
    for (const char c : text) j.value(unsigned(static_cast<unsigned char>(c)));
    j.end_array();
}

// Chat's logprobs. OpenAI has no spelling for a token without data (its step dropped): it
// gets "logprob": null and "top_logprobs": [] rather than a made-up number like -9999.0.
void write_chat_logprobs(JsonLine& j, const CompletionRequest& req,
                         std::span<const GeneratedToken> tokens)
{
    j.begin_object().key("content"_key).begin_array();
    for (const GeneratedToken& t : tokens) {
        const std::string_view text = token_text(t.id);
        j.begin_object().field("token"_key, text).key("logprob"_key);
        if (has_data(t)) write_logprob(j, t.data->logprob);
        else j.null();
        write_bytes(j, text);
        j.key("top_logprobs"_key).begin_array();
        if (has_data(t)) {
            const std::size_t n = top_count(req, *t.data);
            for (std::size_t i = 0; i < n; ++i) {
                const TopLogprob& alt = t.data->top[i];
                const std::string_view alt_text = token_text(alt.token_id);
                j.begin_object().field("token"_key, alt_text).key("logprob"_key);
                write_logprob(j, alt.logprob);
                write_bytes(j, alt_text);
                j.end_object();
            }
        }
        j.end_array().end_object();
    }
    j.end_array().end_object();
}

void write_logprobs(JsonLine& j, const CompletionRequest& req,
                    std::span<const GeneratedToken> tokens, std::size_t text_offset)
{
    j.key("logprobs"_key);
    if (!req.logprobs) j.null();
    else if (req.endpoint == Endpoint::completions)
        write_completion_logprobs(j, req, tokens, text_offset);
    else write_chat_logprobs(j, req, tokens);
}

void append_event(std::string& out, const LineBuffer& buf)
{
    constexpr std::string_view prefix = "data: ", suffix = "\n\n";
    out.append(prefix).append(buf.data(), buf.size()).append(suffix);
}

// A response's or a chunk's object up to its one choice's index, and for /v1/completions the
// choice's text: true. For chat (false) the caller writes the message or the delta.
bool begin_choice(JsonLine& j, const CompletionRequest& req, const ResponseMeta& meta,
                  std::span<const GeneratedToken> tokens, bool chunk)
{
    write_head(j, meta, object_name(req.endpoint, chunk));
    j.key("choices"_key).begin_array().begin_object().field("index"_key, 0);
    if (req.endpoint != Endpoint::completions) return false;
    j.key("text"_key);
    write_text(j, tokens);
    return true;
}

}  // namespace

std::string_view token_text(std::int32_t id) noexcept
{
    if (id < 0) return {};
    return vocabulary[std::size_t(id) % vocabulary.size()];
}

std::string completion_body(const CompletionRequest& req, const ResponseMeta& meta,
                            std::span<const GeneratedToken> tokens, FinishReason finish,
                            Usage usage)
{
    LineBuffer& buf = scratch();
    JsonLine j(buf);
    if (!begin_choice(j, req, meta, tokens, false)) {
        j.key("message"_key).begin_object().field("role"_key, "assistant").key("content"_key);
        write_text(j, tokens);
        j.end_object();
    }
    write_logprobs(j, req, tokens, 0);
    write_finish(j, finish);
    j.end_object().end_array();
    write_usage(j, usage);
    j.end_object();
    return std::string(buf.data(), buf.size());
}

void append_chunk_event(std::string& out, const CompletionRequest& req, const ResponseMeta& meta,
                        std::span<const GeneratedToken> tokens, std::size_t text_offset,
                        bool first_chunk, FinishReason finish)
{
    LineBuffer& buf = scratch();
    JsonLine j(buf);
    if (!begin_choice(j, req, meta, tokens, true)) {
        // OpenAI's closing chunk has an empty delta; its first always carries the role.
        j.key("delta"_key).begin_object();
        if (first_chunk) j.field("role"_key, "assistant");
        if (first_chunk || !tokens.empty()) {
            j.key("content"_key);
            write_text(j, tokens);
        }
        j.end_object();
    }
    // A chunk without tokens (the role chunk, the closing one) has "logprobs": null, as
    // OpenAI's do.
    if (tokens.empty()) j.key("logprobs"_key).null();
    else write_logprobs(j, req, tokens, text_offset);
    write_finish(j, finish);
    j.end_object().end_array();
    // With include_usage every chunk has "usage", null until the usage event.
    if (req.include_usage) j.key("usage"_key).null();
    j.end_object();
    append_event(out, buf);
}

void append_usage_event(std::string& out, const CompletionRequest& req, const ResponseMeta& meta,
                        Usage usage)
{
    LineBuffer& buf = scratch();
    JsonLine j(buf);
    write_head(j, meta, object_name(req.endpoint, true));
    j.key("choices"_key).begin_array().end_array();
    write_usage(j, usage);
    j.end_object();
    append_event(out, buf);
}

std::string error_body(const ApiError& e)
{
    LineBuffer& buf = scratch();
    JsonLine j(buf);
    const auto optional_string = [&](const std::optional<std::string>& s) {
        if (s) j.string(*s);
        else j.null();
    };
    j.begin_object().key("error"_key).begin_object();
    j.field("message"_key, std::string_view(e.message)).field("type"_key, std::string_view(e.type));
    j.key("param"_key);
    optional_string(e.param);
    j.key("code"_key);
    optional_string(e.code);
    j.end_object().end_object();
    return std::string(buf.data(), buf.size());
}

std::string models_body(std::string_view model, std::int64_t created)
{
    LineBuffer& buf = scratch();
    JsonLine j(buf);
    j.begin_object().field("object"_key, "list").key("data"_key).begin_array();
    j.begin_object()
        .field("id"_key, model)
        .field("object"_key, "model")
        .field("created"_key, created)
        .field("owned_by"_key, "jsonlw")
        .end_object();
    j.end_array().end_object();
    return std::string(buf.data(), buf.size());
}

}  // namespace jsonlw::serve
