// One accepted completion request, from admission to the end of its response: what the
// engine generated (token ids, and each token's per-token data once its step's snapshot
// arrives, or its absence once it is known never to arrive), the times its perf-metrics
// record needs, and the listener (the HTTP session) told when there is more. Shared by the
// ModelServer, which fills it, and the session, which answers with it; both touch it on the
// server's loop thread only.
#pragma once

#include "openai_api.hpp"

#include <jsonlw/raw_output_record.hpp>
#include <jsonlw/request_trace_record.hpp>
#include <jsonlw/trace_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace jsonlw::serve {

using ServeClock = std::chrono::steady_clock;

// Told by the ModelServer (loop thread) that a generation has more settled tokens or ended.
class GenerationListener {
public:
    virtual void on_generation_progress() = 0;

protected:
    ~GenerationListener() = default;
};

// What one HTTP request was, as the request-trace writer records it.
struct RequestInfo {
    std::string method;
    std::string route;  // the target's path
    std::vector<TraceHeader> headers;
    std::string body;
    ServeClock::time_point arrival{};  // the request's first byte
    TraceContext trace{};              // the client's traceparent, or one made for it
    bool trace_from_client = false;
    std::string session;               // the body's "user", else the peer's address
};

struct Generation {
    std::uint64_t id = 0;
    CompletionRequest request;
    std::string response_id;  // "cmpl-<id>" / "chatcmpl-<id>"
    std::int64_t created = 0;
    std::string trace_id;     // the request-trace writer's "tr_..." id
    std::string session;
    TraceContext trace{};

    ServeClock::time_point arrival{}, enqueued{}, scheduled{}, first_token{}, last_token{};
    ServeClock::time_point server_first_token{};  // the first token was handed to the socket

    std::vector<std::int32_t> token_ids;
    std::vector<std::optional<TokenLogprob>> data;  // parallel to token_ids
    std::size_t settled = 0;      // tokens [0, settled) have their data or never will
    bool engine_done = false;     // every token generated and settled
    bool ended = false;           // the response ended (ModelServer::end); nothing more comes
    std::string streamed;         // the event stream as sent, for the response trace

    std::weak_ptr<GenerationListener> listener;

    ResponseMeta meta() const noexcept { return ResponseMeta{response_id, created, request.model}; }
    FinishReason finish_reason() const noexcept
    {
        return token_ids.size() >= request.max_tokens ? FinishReason("length") : FinishReason("stop");
    }
};

}  // namespace jsonlw::serve
