// check_json_grammar(): whether one JSON document that simdjson's stage 1 has indexed (its
// structural indexes; stage 1 has also checked UTF-8, control bytes inside strings and
// unclosed strings) is one simdjson's stage 2 accepts — decided without building stage 2's
// tape, which is most of a DOM parse's cost (docs/embedding.md, "How full validation decides").
// Conservative: it answers `unsure` for whatever it does not check itself (a lone surrogate's
// \u escape, a number of more than 18 digits or with a large exponent, a scalar at the root,
// nesting deeper than max_grammar_depth, any error), and the caller then parses the text with
// simdjson, whose verdict and message stand. A pure function: any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jsonlw::detail {

enum class GrammarVerdict : std::uint8_t {
    object,  // one valid JSON object
    array,   // one valid JSON array
    unsure,  // not decided here: parse the text with simdjson
};

struct GrammarWalk {
    GrammarVerdict verdict = GrammarVerdict::unsure;
    // Index of the first structural after the document's last one (its closing bracket).
    std::uint32_t next = 0;
};

// JSON's insignificant whitespace (RFC 8259): what may stand between tokens, and all that
// minifying a valid text removes.
constexpr bool is_json_whitespace(char c) noexcept
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Containers nested deeper than this are left to simdjson (whose parsers here allow more).
inline constexpr std::size_t max_grammar_depth = 256;

// The document whose first structural is idx[first], in buf (stage 1's input), walked over
// idx[first..count); each of its bytes — its structurals and the ends of its strings and
// atoms — must lie before byte `end` (the record's end), or the answer is `unsure`. `buf` is
// readable up to `end`.
GrammarWalk check_json_grammar(const char* buf, const std::uint32_t* idx, std::uint32_t first,
                               std::uint32_t count, std::size_t end) noexcept;

}  // namespace jsonlw::detail
