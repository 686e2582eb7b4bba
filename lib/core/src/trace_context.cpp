#include <jsonlw/trace_context.hpp>

#include <jsonlw/detail/hex.hpp>

#include <cstddef>

namespace jsonlw {
namespace {

// Where the fields of a traceparent start: version 0, trace id 3, parent id 36, flags 53; the
// dashes between them at 2, 35 and 52 (spec/20-http_request_header_format.md).
constexpr std::size_t trace_id_at = 3;
constexpr std::size_t span_id_at = 36;
constexpr std::size_t flags_at = 53;

// A lowercase hex digit's value, or -1: HEXDIGLC excludes 'A'-'F'.
constexpr int hex_value(char c) noexcept
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Decodes 2 * N lowercase hex digits at `text` into `out`; false on any other character.
template <std::size_t N>
bool decode_hex(const char* text, std::array<std::uint8_t, N>& out) noexcept
{
    for (std::size_t i = 0; i < N; ++i) {
        const int hi = hex_value(text[2 * i]);
        const int lo = hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return true;
}

template <std::size_t N>
char* encode_hex(const std::array<std::uint8_t, N>& bytes, char* out) noexcept
{
    return detail::write_hex_lower(bytes.data(), N, out);
}

template <std::size_t N>
std::string hex_string(const std::array<std::uint8_t, N>& bytes)
{
    std::string out(2 * N, '\0');
    encode_hex(bytes, out.data());
    return out;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& bytes) noexcept
{
    for (const std::uint8_t b : bytes)
        if (b != 0) return false;
    return true;
}

// The whitespace an HTTP field value excludes at its ends (RFC 9110 sections 5.5, 5.6.3).
constexpr bool ows(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) noexcept
{
    while (!s.empty() && ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && ows(s.back())) s.remove_suffix(1);
    return s;
}

std::optional<TraceContext> refuse(TraceparentError e, TraceparentError* why) noexcept
{
    if (why) *why = e;
    return std::nullopt;
}

}  // namespace

std::string_view to_string(TraceparentError e) noexcept
{
    switch (e) {
    case TraceparentError::bad_version: return "bad_version";
    case TraceparentError::bad_separator: return "bad_separator";
    case TraceparentError::wrong_length: return "wrong_length";
    case TraceparentError::bad_hex: return "bad_hex";
    case TraceparentError::zero_trace_id: return "zero_trace_id";
    case TraceparentError::zero_span_id: return "zero_span_id";
    }
    return "?";
}

std::optional<TraceContext> TraceContext::parse_traceparent(std::string_view header,
                                                            TraceparentError* why) noexcept
{
    using E = TraceparentError;
    const std::string_view v = trim_ows(header);

    // "Versioning of traceparent": the version (2 hex digits and a dash) decides which length
    // is right, so it is read first.
    if (v.size() < 2) return refuse(E::bad_version, why);
    const int hi = hex_value(v[0]);
    const int lo = hex_value(v[1]);
    if (hi < 0 || lo < 0) return refuse(E::bad_version, why);
    const int version = hi << 4 | lo;
    if (version == 0xff) return refuse(E::bad_version, why);
    if (v.size() < 3 || v[2] != '-') return refuse(E::bad_separator, why);

    // Version 00 is exactly its four fields; a higher one may only add to them.
    if (version == 0 ? v.size() != traceparent_size : v.size() < traceparent_size)
        return refuse(E::wrong_length, why);
    if (v[trace_id_at - 1] != '-' || v[span_id_at - 1] != '-' || v[flags_at - 1] != '-')
        return refuse(E::bad_separator, why);
    if (v.size() > traceparent_size && v[traceparent_size] != '-')
        return refuse(E::bad_separator, why);

    TraceContext tc;
    std::array<std::uint8_t, 1> flag_byte{};
    if (!decode_hex(v.data() + trace_id_at, tc.trace_id) ||
        !decode_hex(v.data() + span_id_at, tc.span_id) || !decode_hex(v.data() + flags_at, flag_byte))
        return refuse(E::bad_hex, why);
    if (all_zero(tc.trace_id)) return refuse(E::zero_trace_id, why);
    if (all_zero(tc.span_id)) return refuse(E::zero_span_id, why);

    // A higher version's other flag bits may mean something else there; keep only ours.
    constexpr std::uint8_t known_flags = flag_sampled | flag_random_id;
    tc.flags = version == 0 ? flag_byte[0]
                            : static_cast<std::uint8_t>(flag_byte[0] & known_flags);
    return tc;
}

void TraceContext::format_traceparent(char (&out)[traceparent_size]) const noexcept
{
    char* p = out;
    *p++ = '0';
    *p++ = '0';
    *p++ = '-';
    p = encode_hex(trace_id, p);
    *p++ = '-';
    p = encode_hex(span_id, p);
    *p++ = '-';
    encode_hex(std::array<std::uint8_t, 1>{flags}, p);
}

std::string TraceContext::traceparent() const
{
    char buf[traceparent_size];
    format_traceparent(buf);
    return std::string(buf, traceparent_size);
}

std::string TraceContext::trace_id_hex() const { return hex_string(trace_id); }

std::string TraceContext::span_id_hex() const { return hex_string(span_id); }

}  // namespace jsonlw
