// The built-in load client of `jsonlw demo`: OpenAI-style requests over real loopback
// sockets to `jsonlw serve`, open loop (Poisson arrivals) or closed loop, each request
// stamped with its own traceparent so that the server's records can be joined to the
// client's view (client_join.hpp). run_load() blocks the calling thread and runs its own
// single-threaded io_context on it; it owns its sockets and closes them before returning.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::serve {

// What run_load() sends. Designated initializers; every field has a usable default.
struct LoadOptions {
    std::string host = "127.0.0.1";  // an IP address, or a name resolved once at start
    std::uint16_t port = 0;          // required: 0 fails every request
    std::uint64_t requests = 2000;
    // Poisson arrivals per second (open loop: a request is due at its arrival time whether or
    // not the previous ones finished). 0: closed loop, `connections` requests always in
    // flight.
    double rate = 500;
    // At most this many sockets open at once, kept alive and reused. A request that arrives
    // while every one is busy waits in a FIFO queue (LoadResult::queued counts them).
    std::size_t connections = 64;
    double stream_share = 0.5;  // share of requests with "stream": true
    double chat_share = 0.5;    // share sent to /v1/chat/completions, the rest /v1/completions
    // Every Nth streaming request (in index order) closes its socket as soon as its first
    // token arrived, as a client that went away. 0: never.
    std::uint64_t disconnect_every = 100;
    std::uint32_t min_tokens = 8, max_tokens = 64;  // max_tokens uniform in this range
    int top_logprobs = 5;  // alternatives per token asked for; < 0: no logprobs asked for
    // Seeds the workload (arrivals, endpoints, lengths, disconnects). Trace ids are not
    // seeded: two runs never send the same traceparent.
    std::uint64_t seed = 1;
    // From the moment a request is taken off the queue (connect included) to its last byte;
    // past it the socket is closed and the request failed.
    std::chrono::milliseconds request_timeout{30000};
};

// One request as the client saw it.
struct ClientResult {
    enum class Outcome {
        completed,               // a whole HTTP 200 response (streams: to the end of the body)
        disconnected_by_client,  // the client closed the socket after the first token, before
                                 // the response ended (LoadOptions::disconnect_every)
        failed,                  // connect/write/read error, timeout, non-200 status, or an
                                 // error event in the stream; `error` says which
    };

    std::uint64_t index = 0;
    std::string traceparent;        // the header sent: 00-<32 hex>-<16 hex>-01
    std::string response_id;        // the body's "id" (cmpl-… / chatcmpl-…); empty if none
    std::string server_request_id;  // the x-request-id response header; empty if none
    bool stream = false, chat = false;
    bool disconnect_planned = false;  // chosen to disconnect after its first token
    std::uint32_t max_tokens = 0;     // as sent
    int http_status = 0;              // 0: no response status line was read
    Outcome outcome = Outcome::failed;
    std::string error;  // why it failed; empty otherwise
    // intended: its arrival time (open loop) or when a slot freed (closed loop); sent: just
    // before its first byte was written (later than intended when it waited for a socket);
    // first_token: the first event carrying token text (streaming) / the whole body received
    // (not streaming); done: the response ended, the client closed, or the request failed.
    std::chrono::steady_clock::time_point intended{}, sent{}, first_token{}, done{};
    std::uint32_t tokens = 0;  // tokens received: logprob entries or, without, text pieces
                               // (non-streaming without logprobs: usage.completion_tokens)
    bool stream_well_formed = false;  // streaming: every event was JSON and [DONE] came last
};

struct LoadResult {
    std::vector<ClientResult> results;  // by index, one per request
    double seconds = 0;                 // first arrival to the last request's end
    std::uint64_t queued = 0;           // requests that waited for a free socket
    std::uint64_t max_queue_depth = 0;
    std::uint64_t connects = 0;         // sockets opened (a disconnect costs one more)
    std::uint64_t keepalive_retries = 0;  // resent once on a fresh socket: the kept-alive
                                          // one was closed by the server before any reply
};

// Sends opts.requests requests and returns when every one has its outcome. Never throws:
// a request that could not be made is `failed` with the reason.
LoadResult run_load(const LoadOptions& opts);

}  // namespace jsonlw::serve
