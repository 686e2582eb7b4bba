#include "client_events.hpp"

#include <algorithm>
#include <chrono>

namespace jsonlw::serve {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// The tokens one completion object carries (a streamed chunk or a whole body): its logprob
// entries when it has them, else one piece per non-empty text. The text sits in "text"
// (completions), "delta.content" (a chat chunk) or "message.content" (a chat body).
std::uint32_t tokens_of(object choice, bool chat, bool streamed) noexcept
{
    object logprobs;
    array entries;
    if (choice["logprobs"].get(logprobs) == simdjson::SUCCESS &&
        logprobs[chat ? "content" : "tokens"].get(entries) == simdjson::SUCCESS)
        return static_cast<std::uint32_t>(entries.size());
    std::string_view text;
    if (!chat) {
        if (choice["text"].get(text) != simdjson::SUCCESS) return 0;
    } else {
        object holder;
        if (choice[streamed ? "delta" : "message"].get(holder) != simdjson::SUCCESS ||
            holder["content"].get(text) != simdjson::SUCCESS)
            return 0;
    }
    return text.empty() ? 0 : 1;
}

void take_id(object root, ClientResult& r)
{
    std::string_view id;
    if (r.response_id.empty() && root["id"].get(id) == simdjson::SUCCESS) r.response_id = id;
}

}  // namespace

element ResponseReader::parse(std::string_view json, bool& ok)
{
    // The parser reads up to SIMDJSON_PADDING bytes past the end: give it a padded copy
    // in a buffer that keeps its capacity between calls rather than let it allocate one.
    scratch_.assign(json);
    scratch_.reserve(json.size() + simdjson::SIMDJSON_PADDING);
    element root;
    ok = parser_.parse(scratch_.data(), scratch_.size(), false).get(root) == simdjson::SUCCESS;
    return root;
}

void ResponseReader::feed(EventStream& s, std::string_view bytes, ClientResult& r)
{
    // Most pieces hold whole events: parse them where they lie and keep only a torn tail.
    std::string_view in = bytes;
    const bool buffered = !s.pending.empty();
    if (buffered) {
        s.pending.append(bytes);
        in = s.pending;
    }
    std::size_t at = 0;
    for (;;) {
        const std::size_t end = in.find("\n\n", at);
        if (end == std::string_view::npos) break;
        const std::string_view event = in.substr(at, end - at);
        at = end + 2;
        // An event is lines of "field: value"; only data lines matter here, and the server
        // sends one per event.
        std::string_view data;
        bool has_data = false;
        std::string joined;
        for (std::size_t line_at = 0; line_at <= event.size();) {
            std::size_t nl = event.find('\n', line_at);
            if (nl == std::string_view::npos) nl = event.size();
            std::string_view line = event.substr(line_at, nl - line_at);
            line_at = nl + 1;
            if (!line.starts_with("data:")) continue;  // a comment or another field
            line.remove_prefix(5);
            if (line.starts_with(' ')) line.remove_prefix(1);
            if (!has_data) {
                data = line;
                has_data = true;
            } else {  // several data lines make one value joined by '\n' (the SSE rule)
                if (joined.empty()) joined.assign(data);
                joined.append("\n").append(line);
                data = joined;
            }
        }
        if (has_data) on_event(s, data, r);
    }
    if (buffered)
        s.pending.erase(0, at);
    else
        s.pending.assign(in.substr(at));
}

void ResponseReader::on_event(EventStream& s, std::string_view data, ClientResult& r)
{
    if (s.done_seen) {  // nothing may follow [DONE]
        s.malformed = true;
        return;
    }
    if (data == "[DONE]") {
        s.done_seen = true;
        return;
    }
    bool ok = false;
    const element root = parse(data, ok);
    object obj;
    if (!ok || root.get(obj) != simdjson::SUCCESS) {
        s.malformed = true;
        return;
    }
    object err;
    if (obj["error"].get(err) == simdjson::SUCCESS) {
        s.error_event = true;
        std::string_view msg;
        if (r.error.empty())
            r.error = "error event: " +
                      std::string(err["message"].get(msg) == simdjson::SUCCESS ? msg : "?");
        return;
    }
    take_id(obj, r);
    array choices;
    object choice;
    // The usage event has "choices": []; a chunk holds one choice (n is always 1).
    if (obj["choices"].get(choices) != simdjson::SUCCESS || choices.size() == 0 ||
        choices.at(0).get(choice) != simdjson::SUCCESS)
        return;
    const std::uint32_t n = tokens_of(choice, s.chat, true);
    if (n > 0 && r.tokens == 0) r.first_token = std::chrono::steady_clock::now();
    r.tokens += n;
}

bool ResponseReader::finish(const EventStream& s) noexcept
{
    return s.done_seen && !s.malformed && s.pending.empty();
}

bool ResponseReader::read_body(std::string_view body, bool chat, ClientResult& r)
{
    bool ok = false;
    const element root = parse(body, ok);
    object obj, choice;
    array choices;
    if (!ok || root.get(obj) != simdjson::SUCCESS ||
        obj["choices"].get(choices) != simdjson::SUCCESS || choices.size() == 0 ||
        choices.at(0).get(choice) != simdjson::SUCCESS) {
        r.error = "not a completion body: " + std::string(body.substr(0, 120));
        return false;
    }
    take_id(obj, r);
    object logprobs;
    const bool has_logprobs = choice["logprobs"].get(logprobs) == simdjson::SUCCESS;
    r.tokens = tokens_of(choice, chat, false);
    object usage;
    std::uint64_t completion_tokens = 0;
    // Without logprobs the body is one text piece; usage says how many tokens it holds.
    if (!has_logprobs && obj["usage"].get(usage) == simdjson::SUCCESS &&
        usage["completion_tokens"].get(completion_tokens) == simdjson::SUCCESS)
        r.tokens = static_cast<std::uint32_t>(completion_tokens);
    return true;
}

std::string ResponseReader::error_message(std::string_view body)
{
    bool ok = false;
    const element root = parse(body, ok);
    std::string_view msg;
    if (ok && root["error"]["message"].get(msg) == simdjson::SUCCESS) return std::string(msg);
    return std::string(body.substr(0, 120));
}

}  // namespace jsonlw::serve
