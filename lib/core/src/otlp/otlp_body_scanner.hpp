// OtlpBodyScanner: the fast path of OtlpLogsEncoder — one pass over a compact JSON object line
// (as the writers' encoders write it) that writes its members as an OTLP kvlist, copying keys,
// strings and numbers verbatim, and notes where the values the log record needs are (time
// fields, attributes, the traceparent, the event-name field). Owned by one OtlpLogsEncoder, on
// its sink's I/O thread. A line it does not take (whitespace between tokens, not an object,
// nesting past max_depth, anything malformed) is left to the DOM path, which handles any JSON.
#pragma once

#include <jsonlw/json_line.hpp>
#include <jsonlw/trace_context.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::detail {

class OtlpBodyScanner {
public:
    static constexpr int max_depth = 64;

    // The JSON pointers (object members only: "/a/b") whose values scan() notes, in order.
    explicit OtlpBodyScanner(const std::vector<std::string>& pointers);

    // A JSON pointer's reference tokens, RFC 6901 escapes (~1 '/', ~0 '~') undone.
    static std::vector<std::string> pointer_tokens(std::string_view pointer);

    // Appends `{"kvlistValue":{"values":[…]}}` for `line` to `out` and notes the pointed-to
    // values (found(i)); a top-level "traceparent" that parses is left out of the body and
    // returned by trace(). False (and `out` as it was) when the line is not for this path.
    bool scan(std::string_view line, LineBuffer& out);

    // The raw JSON text of pointer i's value in the last scanned line (empty: absent).
    std::string_view found(std::size_t i) const noexcept { return found_[i]; }
    const std::optional<TraceContext>& trace() const noexcept { return trace_; }

    // Writes the AnyValue for one raw compact JSON value (a value found() returned). False
    // (and nothing written) when the text is not one such value.
    bool any_value(std::string_view value, LineBuffer& out);

private:
    struct Cursor;
    struct Out;
    bool value(Cursor& c, int depth, Out& out);
    bool object_members(Cursor& c, int depth, Out& out);
    void note(std::string_view value, int depth);

    std::vector<std::vector<std::string>> pointers_;
    std::vector<std::string_view> found_;
    std::vector<std::string_view> path_;  // keys of the members being read (raw text)
    bool in_array_ = false;
    std::optional<TraceContext> trace_;
};

}  // namespace jsonlw::detail
