// How the load client (load_client.cpp) reads a response body: a Server-Sent Event stream
// fed in pieces as the socket delivers them, or a whole JSON body, into a ClientResult's
// id, token count, first-token time and well-formedness. One ResponseReader per client
// thread (it owns the JSON parser); one EventStream per response in flight.
#pragma once

#include "load_client.hpp"

#include <simdjson.h>

#include <string>
#include <string_view>

namespace jsonlw::serve {

// The parse state of one streamed response. reset() keeps the buffer's memory, so a
// connection can reuse one for every response it carries.
struct EventStream {
    std::string pending;  // bytes of an event whose "\n\n" has not arrived yet
    bool chat = false;
    bool done_seen = false;   // "data: [DONE]" arrived
    bool malformed = false;   // an event was not JSON, or data came after [DONE]
    bool error_event = false; // an event carried {"error": ...}

    void reset(bool is_chat)
    {
        pending.clear();
        chat = is_chat;
        done_seen = malformed = error_event = false;
    }
};

class ResponseReader {
public:
    // Consumes `bytes` of an event stream: every complete event ("\n\n"-terminated) is
    // parsed; tokens are added to r.tokens, the first event with a token sets r.first_token
    // (now), the first "id" sets r.response_id, an error event sets r.error. Events are
    // "data: <json>" lines; comment lines (":…") and other fields are skipped.
    void feed(EventStream& s, std::string_view bytes, ClientResult& r);
    // At the end of the body: true when the stream was well formed (every event JSON,
    // [DONE] received and last, nothing left over).
    static bool finish(const EventStream& s) noexcept;

    // A whole application/json completion: sets r.response_id and r.tokens. False (and
    // r.error) when it is not the expected JSON.
    bool read_body(std::string_view body, bool chat, ClientResult& r);

    // error.message of an OpenAI error body, or the body's first bytes when it is not one.
    std::string error_message(std::string_view body);

private:
    simdjson::dom::element parse(std::string_view json, bool& ok);
    void on_event(EventStream& s, std::string_view data, ClientResult& r);

    simdjson::dom::parser parser_;
    std::string scratch_;  // a padded copy of what parse() reads
};

}  // namespace jsonlw::serve
