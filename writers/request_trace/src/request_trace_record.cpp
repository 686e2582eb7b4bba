#include <jsonlw/request_trace_record.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>

namespace jsonlw {
namespace {

constexpr std::size_t session_max = 128;

bool session_char(unsigned char c) noexcept
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

bool space(unsigned char c) noexcept
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

bool iequals(std::string_view a, std::string_view b) noexcept
{
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != b[i]) return false;
    return true;
}

// `needle` is lowercase.
bool icontains(std::string_view hay, std::string_view needle) noexcept
{
    if (needle.size() > hay.size()) return false;
    for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
        if (iequals(hay.substr(i, needle.size()), needle)) return true;
    return false;
}

}  // namespace

std::string new_trace_id()
{
    // One random_device read per thread; after that a plain PRNG step per id.
    thread_local std::mt19937_64 gen([] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
        return std::mt19937_64(seq);
    }());
    static constexpr char hex[] = "0123456789abcdef";
    std::string id(3 + 32, '\0');
    id[0] = 't';
    id[1] = 'r';
    id[2] = '_';
    for (int half = 0; half < 2; ++half) {
        std::uint64_t v = gen();
        for (int i = 0; i < 16; ++i, v >>= 4) id[3 + half * 16 + i] = hex[v & 0xF];
    }
    return id;
}

std::string sanitize_session(std::string_view raw)
{
    std::size_t b = 0, e = raw.size();
    while (b < e && space(static_cast<unsigned char>(raw[b]))) ++b;
    while (e > b && space(static_cast<unsigned char>(raw[e - 1]))) --e;
    std::string out;
    out.reserve(std::min(e - b, session_max));
    for (std::size_t i = b; i < e && out.size() < session_max; ++i) {
        const auto c = static_cast<unsigned char>(raw[i]);
        if (c < 0x80) {
            out.push_back(session_char(c) ? static_cast<char>(c) : '_');
            continue;
        }
        // One '_' per character, as the Python original (which works on code points): a
        // lead byte takes its continuation bytes with it.
        out.push_back('_');
        if (c >= 0xC0)
            while (i + 1 < e && (static_cast<unsigned char>(raw[i + 1]) & 0xC0) == 0x80) ++i;
    }
    if (out.empty() || out.front() == '.') return "_no_session";
    return out;
}

bool is_credential_header(std::string_view name) noexcept
{
    static constexpr std::array<std::string_view, 4> exact = {
        "authorization", "proxy-authorization", "cookie", "set-cookie"};
    static constexpr std::array<std::string_view, 6> parts = {
        "api-key", "api_key", "apikey", "token", "secret", "password"};
    for (std::string_view x : exact)
        if (iequals(name, x)) return true;
    for (std::string_view p : parts)
        if (icontains(name, p)) return true;
    return false;
}

HeaderTraceContext trace_context_of(const std::vector<TraceHeader>& headers) noexcept
{
    const TraceHeader* found = nullptr;
    for (const TraceHeader& h : headers) {
        if (!iequals(h.name, "traceparent")) continue;
        if (found) return {.context = std::nullopt, .refused = "repeated"};
        found = &h;
    }
    if (!found) return {};
    TraceparentError why{};
    if (auto tc = TraceContext::parse_traceparent(found->value, &why)) return {.context = tc};
    return {.context = std::nullopt, .refused = to_string(why)};
}

std::string_view to_string(RequestTraceStatus s) noexcept
{
    switch (s) {
    case RequestTraceStatus::accepted: return "accepted";
    case RequestTraceStatus::rejected_400: return "rejected_400";
    }
    return "unknown";
}

std::string_view to_string(ResponseTraceStatus s) noexcept
{
    switch (s) {
    case ResponseTraceStatus::completed: return "completed";
    case ResponseTraceStatus::client_disconnected: return "client_disconnected";
    case ResponseTraceStatus::error: return "error";
    case ResponseTraceStatus::unknown: return "unknown";
    }
    return "unknown";
}

std::string_view to_string(ResponseKind k) noexcept
{
    switch (k) {
    case ResponseKind::sse_text: return "sse_text";
    case ResponseKind::text: return "text";
    case ResponseKind::json: return "json";
    }
    return "text";
}

}  // namespace jsonlw
