// Capture: how much of a record's content the raw-output and request-trace writers keep
// (RawOutputOptions::capture, RequestTraceOptions::capture; docs/writers.md, "Content
// capture").
#pragma once

#include <optional>
#include <string_view>

namespace jsonlw {

enum class Capture {
    // The content itself (default): every line as the writer's schema has it.
    full,
    // No content: the generated text, frames and token ids, the request and response bodies
    // are each replaced by their length and the SHA-256 of the bytes a full line would hold,
    // so a later full capture of the same content can be matched; every other field is
    // written as with full. Lines written so are counted (metadata_captured).
    metadata,
};

constexpr std::string_view to_string(Capture c) noexcept
{
    return c == Capture::metadata ? "metadata" : "full";
}

// "full" or "metadata"; anything else: nullopt.
constexpr std::optional<Capture> parse_capture(std::string_view s) noexcept
{
    if (s == "full") return Capture::full;
    if (s == "metadata") return Capture::metadata;
    return std::nullopt;
}

}  // namespace jsonlw
