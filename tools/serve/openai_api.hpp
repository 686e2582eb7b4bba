// The OpenAI wire format of `jsonlw serve` (docs/serving.md): a request body parsed and
// checked into a CompletionRequest, and the responses — a whole JSON body, Server-Sent Event
// chunks, usage, OpenAI-style error bodies — written from the tokens the engine generated and
// the snapshot stage's per-token data (the same TokenLogprob values the raw-output writer
// records). Field names follow the openai SDK's types (openai-node src/resources/completions.ts,
// src/resources/chat/completions/completions.ts) and vLLM's protocol.py. Free functions, no
// state: call them from any thread.
#pragma once

#include <jsonlw/raw_output_record.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace jsonlw::serve {

enum class Endpoint {
    completions,       // POST /v1/completions: "prompt", "logprobs": int
    chat_completions,  // POST /v1/chat/completions: "messages", "logprobs": bool, "top_logprobs"
};

// An error as the client receives it: the HTTP status and
// {"error":{"message","type","param","code"}} (error_body()).
struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::optional<std::string> param{};  // the offending field, e.g. "max_tokens"
    std::optional<std::string> code{};
};

// What the server accepts, from ServeOptions.
struct ApiLimits {
    std::string model = "jsonlw-demo";  // the one model served (GET /v1/models); a request
                                        // naming another gets 404 model_not_found
    int max_top_logprobs = 5;           // the snapshot stage's top-k: more is a 400
    std::uint32_t max_tokens = 4096;    // a larger max_tokens is a 400
    std::uint32_t default_max_tokens = 16;  // when the request gives none
};

// A checked request.
struct CompletionRequest {
    Endpoint endpoint = Endpoint::completions;
    std::string model;
    std::uint32_t max_tokens = 16;  // completions: max_tokens; chat: max_completion_tokens,
                                    // else max_tokens
    bool stream = false;
    bool include_usage = false;     // stream_options.include_usage (streaming only)
    bool logprobs = false;          // completions: "logprobs" is a number; chat: true
    int top_logprobs = 0;           // completions: that number; chat: "top_logprobs"
    std::uint32_t prompt_tokens = 0;  // count_prompt_tokens() of the prompt or messages' content
    std::optional<std::uint64_t> seed{};
    std::string user{};             // "user", when given
};

// Parses and checks a request body. Errors (status 400, param named): not JSON; not an
// object; a missing "prompt" (completions: a string or an array of strings) or "messages"
// (chat: a non-empty array of {"role": string, "content": string or array of text parts});
// a field of the wrong type; max_tokens < 1 or > limits.max_tokens; "n" other than 1;
// completions "logprobs" outside 0..limits.max_top_logprobs; chat "top_logprobs" outside
// 0..max_top_logprobs, or given without "logprobs": true; "echo": true; "best_of" > 1;
// "stream_options" without "stream": true. Status 404 (code "model_not_found") when "model"
// names another model. A field set to null counts as not given, and unknown fields are
// ignored, as OpenAI does.
std::variant<CompletionRequest, ApiError> parse_completion_request(Endpoint endpoint,
                                                                   std::string_view body,
                                                                   const ApiLimits& limits);

// The demo's tokenizer: a token id's text (a leading space and one of 64 words; ids past
// the list wrap around), and a prompt's length in tokens (whitespace-separated words, at
// least 1).
std::string_view token_text(std::int32_t id) noexcept;
std::uint32_t count_prompt_tokens(std::string_view text) noexcept;

// One generated token and, when the stage captured its step, its per-token data.
struct GeneratedToken {
    std::int32_t id = 0;
    const TokenLogprob* data = nullptr;  // null: the stage dropped the step (logprob null;
                                         // top_logprobs null in completions, [] in chat)
};

// Identity of one response, repeated on each of its chunks.
struct ResponseMeta {
    std::string_view id;       // "cmpl-..." or "chatcmpl-..."
    std::int64_t created = 0;  // Unix seconds
    std::string_view model;
};

struct Usage {
    std::uint32_t prompt_tokens = 0;
    std::uint32_t completion_tokens = 0;
};

// "stop" | "length" | null (a chunk before the last).
using FinishReason = std::optional<std::string_view>;

// The non-streaming body (application/json): one choice holding every token's text and,
// when req.logprobs, its logprobs in the endpoint's shape — completions: {"tokens",
// "token_logprobs", "top_logprobs" (a {text: logprob} object per position, at most
// req.top_logprobs entries), "text_offset"}; chat: {"content": [{"token", "logprob",
// "bytes", "top_logprobs": [{"token","logprob","bytes"}]}]}. Numbers are written as the
// raw-output writer writes them (shortest round-trip doubles; non-finite as null).
std::string completion_body(const CompletionRequest& req, const ResponseMeta& meta,
                            std::span<const GeneratedToken> tokens, FinishReason finish,
                            Usage usage);

// One streamed event, "data: {...}\n\n", appended to `out`: the tokens since the last event
// (completions: "text"; chat: "delta" with "content", and "role":"assistant" on the first
// chunk when first_chunk), with their logprobs in the same shape; `text_offset` is the
// character offset of the first of them in the whole output (completions' text_offset).
// finish set: the choice's finish_reason.
void append_chunk_event(std::string& out, const CompletionRequest& req, const ResponseMeta& meta,
                        std::span<const GeneratedToken> tokens, std::size_t text_offset,
                        bool first_chunk, FinishReason finish);
// The usage event of stream_options.include_usage ("choices": [] and "usage"), and the end.
void append_usage_event(std::string& out, const CompletionRequest& req, const ResponseMeta& meta,
                        Usage usage);
inline constexpr std::string_view done_event = "data: [DONE]\n\n";

// {"error":{"message":...,"type":...,"param":...,"code":...}} (null for absent fields).
std::string error_body(const ApiError& e);
// GET /v1/models: {"object":"list","data":[{"id":model,"object":"model","created":...,
// "owned_by":"jsonlw"}]}.
std::string models_body(std::string_view model, std::int64_t created);

}  // namespace jsonlw::serve
