// The bytes of one generation's answer as its tokens settle, and the HTTP framing they travel
// in: a stream's Server-Sent Events, each framed as an HTTP/1.1 chunk (the tokens settled since
// the last event, then the finish reason, the usage event when asked for, [DONE] and the
// chunked body's end), or the whole JSON response once every token is in. Owned by an
// HttpSession, which writes what it appends; called on the server's loop thread only.
#pragma once

#include "generation.hpp"
#include "openai_api.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::serve {

// "HTTP/1.1 <status> <reason>" and the headers of a response with a body of `length` bytes;
// `extra`: more header lines, each ending in CRLF.
std::string response_head(int status, std::string_view content_type, std::size_t length,
                          std::string_view extra, bool keep_alive);
// `data` as one HTTP/1.1 chunk (nothing for empty data: an empty chunk ends the body).
void append_chunk(std::string& out, std::string_view data);
inline constexpr std::string_view chunked_end = "0\r\n\r\n";

class GenerationResponse {
public:
    // A new generation: nothing of it sent yet.
    void reset() noexcept;
    // Appends to `out` what `g` has for its client now; returns true once the response is
    // whole (its last byte appended). A stream's events also go to g.streamed when
    // `record_stream` (the response trace); a whole body goes to `body` as well.
    bool progress(Generation& g, bool keep_alive, bool record_stream, std::string& out,
                  std::string& body);

private:
    bool stream_progress(Generation& g, bool record_stream, std::string& out);
    bool whole_progress(Generation& g, bool keep_alive, std::string& out, std::string& body);
    void collect(const Generation& g, std::size_t from, std::size_t to);

    std::size_t emitted_ = 0;             // tokens sent
    std::size_t text_offset_ = 0;         // their text's length (completions' text_offset)
    std::vector<GeneratedToken> tokens_;  // reused
    std::string event_;                   // reused
};

}  // namespace jsonlw::serve
