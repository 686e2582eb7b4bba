// TraceContext: the W3C Trace Context `traceparent` value (trace id, parent/span id, flags),
// parsed from and formatted to its header text.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jsonlw {

// Why parse_traceparent() refused a header: the first rule broken, in the order
// docs/trace_context.md lists them.
enum class TraceparentError {
    bad_version,    // the version is not two lowercase hex digits, or it is the forbidden "ff"
    bad_separator,  // no '-' after the version, the trace id or the parent id; or, in a higher
                    // version, something other than '-' right after the flags
    wrong_length,   // version 00 not exactly 55 characters; a higher version shorter than 55
    bad_hex,        // the trace id, parent id or flags hold a character other than 0-9 a-f
    zero_trace_id,  // the trace id is all zeros
    zero_span_id,   // the parent id is all zeros
};

std::string_view to_string(TraceparentError e) noexcept;

// A plain value: any thread may parse, copy and format it; it owns no memory. Parsing and the
// char-array formatter never allocate; the std::string helpers do.
struct TraceContext {
    static constexpr std::uint8_t flag_sampled = 0x01;    // the caller may have recorded data
    static constexpr std::uint8_t flag_random_id = 0x02;  // the right 7 id bytes are random (L2)

    // The characters of a version 00 traceparent: 2 + 1 + 32 + 1 + 16 + 1 + 2.
    static constexpr std::size_t traceparent_size = 55;

    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};  // the header's parent-id
    std::uint8_t flags = 0;

    // The traceparent header's value, by the rules of spec/20-http_request_header_format.md in
    // github.com/w3c/trace-context ("traceparent Header Field Values", "Versioning of
    // traceparent"): `version-traceid-parentid-flags`, lowercase hex only. Version 00 must be
    // exactly 55 characters, and its flags are kept as sent. A higher version (not ff) keeps the
    // first four fields when the flags end the value or are followed by '-'; what follows is
    // ignored, and flags beyond flag_sampled and flag_random_id are cleared, since their
    // meaning may have changed (spec/30-processing-model.md, "A traceparent is Received"). Spaces
    // and tabs around the value are the HTTP field's optional whitespace (RFC 9110 section 5.5;
    // the spec's test suite, test/test.py test_traceparent_ows_handling) and are skipped.
    // Nullopt when invalid; then `*why` (if given) says which rule failed, else it is untouched.
    static std::optional<TraceContext> parse_traceparent(std::string_view header,
                                                         TraceparentError* why = nullptr) noexcept;

    // "00-<32 hex>-<16 hex>-<2 hex>", lowercase: always version 00, whatever version was
    // parsed. Exactly traceparent_size characters, no terminating NUL.
    void format_traceparent(char (&out)[traceparent_size]) const noexcept;
    std::string traceparent() const;

    std::string trace_id_hex() const;  // 32 lowercase hex digits
    std::string span_id_hex() const;   // 16 lowercase hex digits

    bool sampled() const noexcept { return (flags & flag_sampled) != 0; }

    friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

}  // namespace jsonlw
