// check_json_grammar() (detail/json_grammar_check.hpp): simdjson's stage 2 grammar, as its
// tape builder applies it (simdjson 3.0.1, src/generic/stage2/json_iterator.h and
// tape_builder.h), over stage 1's structural indexes — the tape itself never written.
// tests/unit/json_grammar_check.cpp holds it to simdjson's own verdict.
#include <jsonlw/detail/json_grammar_check.hpp>

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace jsonlw::detail {

namespace {

// What may follow a number or literal inside a container: a subset of the bytes simdjson's
// atom parsers accept there (whitespace and structural characters), so nothing accepted here
// is refused there.
constexpr bool ends_atom(char c) noexcept
{
    return is_json_whitespace(c) || c == ',' || c == ']' || c == '}';
}

constexpr bool is_digit(char c) noexcept
{
    return c >= '0' && c <= '9';
}

// Whether [p, p + n) holds a quote or a backslash. Reads up to 15 bytes past p + n, which
// the caller's padding (simdjson's, 64 bytes) allows.
bool quote_or_backslash(const char* p, std::size_t n) noexcept
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    for (std::size_t i = 0; i < n; i += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        unsigned m = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
        if (n - i < 16) m &= (1u << (n - i)) - 1;
        if (m) return true;
    }
    return false;
#else
    return std::memchr(p, '"', n) || std::memchr(p, '\\', n);
#endif
}

// The number of decimal digits at p, at most `limit`, counted eight bytes at a time (p is
// readable 7 bytes past p + limit: the caller's padding).
std::size_t digit_run(const char* p, std::size_t limit) noexcept
{
    std::size_t n = 0;
    for (; n < limit; n += 8) {
        std::uint64_t v;
        std::memcpy(&v, p + n, 8);
        // A byte's high bit in `bad` is set unless the byte is '0'..'9' (little-endian lanes).
        const std::uint64_t lo = v - 0x3030303030303030ULL;         // c - '0' (borrows ignored)
        const std::uint64_t hi = v + 0x4646464646464646ULL;         // c + 0x46: >= 0x80 if c > '9'
        const std::uint64_t bad = (lo | hi | v) & 0x8080808080808080ULL;
        if (bad) return std::min(limit, n + (static_cast<std::size_t>(__builtin_ctzll(bad)) >> 3));
    }
    return limit;
}

// The value of four hex digits at p, or -1.
int hex4(const char* p) noexcept
{
    int v = 0;
    for (int i = 0; i < 4; ++i) {
        const char c = p[i];
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    return v;
}

// The string whose opening quote is at `open`, followed (after optional whitespace) by the
// structural at `next`: its closing quote is the last byte before that whitespace. Accepted
// when no unescaped quote lies inside and every escape is one of \" \\ \/ \b \f \n \r \t,
// \u and four hex digits naming a code point outside the surrogates, or a high surrogate's
// \u escape followed at once by a low one's (what every simdjson version decodes); a lone
// surrogate is left to simdjson.
bool string_ok(const char* buf, std::size_t open, std::size_t next) noexcept
{
    std::size_t close = next;
    while (close > open + 1 && is_json_whitespace(buf[close - 1])) --close;
    if (close <= open + 1 || buf[--close] != '"') return false;
    const char* body = buf + open + 1;
    const std::size_t n = close - open - 1;
    if (!quote_or_backslash(body, n)) return true;
    for (std::size_t i = 0; i < n; ++i) {
        if (body[i] == '"') return false;
        if (body[i] != '\\') continue;
        if (++i == n) return false;  // the backslash escapes the closing quote
        switch (body[i]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
        case 'u': {
            if (i + 5 > n) return false;
            const int cp = hex4(body + i + 1);
            i += 4;
            if (cp < 0) return false;
            if (cp < 0xD800 || cp > 0xDFFF) break;
            if (cp > 0xDBFF || i + 7 > n || body[i + 1] != '\\' || body[i + 2] != 'u')
                return false;
            const int low = hex4(body + i + 3);
            if (low < 0xDC00 || low > 0xDFFF) return false;
            i += 6;
            break;
        }
        default: return false;
        }
    }
    return true;
}

// A number at `at`, in JSON's grammar, with at most 18 digits before its exponent and an
// exponent of at most three digits that leaves it below 10^308: simdjson parses every such
// number without a big-integer, slow-path or range question (simdjson 3.0.1's parse_number()
// and write_float(), include/simdjson/generic/numberparsing.h: an integer past 19 or 20 digits
// and an infinite value are errors there). Anything else is left to simdjson.
bool number_ok(const char* buf, std::size_t at, std::size_t end) noexcept
{
    std::size_t i = at;
    if (buf[i] == '-') ++i;
    if (i >= end || !is_digit(buf[i])) return false;
    std::size_t digits = buf[i] == '0' ? 1 : digit_run(buf + i, end - i);
    i += digits;
    long scale = 0;  // the power of ten the digits' integer is scaled by
    if (i < end && buf[i] == '.') {
        ++i;
        const std::size_t fraction = digit_run(buf + i, end - i);
        if (fraction == 0) return false;
        i += fraction;
        digits += fraction;
        scale -= static_cast<long>(fraction);
    }
    if (digits > 18) return false;
    if (i < end && (buf[i] == 'e' || buf[i] == 'E')) {
        ++i;
        const bool negative = i < end && buf[i] == '-';
        if (i < end && (buf[i] == '-' || buf[i] == '+')) ++i;
        const std::size_t start = i;
        long e = 0;
        while (i < end && is_digit(buf[i]) && i - start < 4) e = e * 10 + (buf[i++] - '0');
        if (i == start || i - start > 3) return false;
        scale += negative ? -e : e;
        if (scale + 18 > 308) return false;  // below 10^18 * 10^scale
    }
    return i < end && ends_atom(buf[i]);
}

bool literal_ok(const char* buf, std::size_t at, std::size_t end) noexcept
{
    const auto is = [&](const char* word, std::size_t n) {
        return at + n < end && std::memcmp(buf + at, word, n) == 0 && ends_atom(buf[at + n]);
    };
    switch (buf[at]) {
    case 't': return is("true", 4);
    case 'f': return is("false", 5);
    case 'n': return is("null", 4);
    default: return false;
    }
}

}  // namespace

GrammarWalk check_json_grammar(const char* buf, const std::uint32_t* idx, std::uint32_t first,
                               std::uint32_t count, std::size_t end) noexcept
{
    // What the next structural may be.
    enum class Expect : std::uint8_t { key_or_close, key, colon, value_or_close, value, after_value };
    bool in_object[max_grammar_depth];  // per open container: an object (else an array)
    std::size_t depth = 0;
    bool root_object = false;
    Expect expect = Expect::value;
    for (std::uint32_t k = first; k < count; ++k) {
        const std::size_t at = idx[k];
        if (at >= end) return {};
        const char c = buf[at];
        switch (expect) {
        case Expect::key_or_close:
            if (c == '}') goto close;
            [[fallthrough]];
        case Expect::key:
            if (c != '"' || k + 1 >= count || !string_ok(buf, at, idx[k + 1])) return {};
            expect = Expect::colon;
            continue;
        case Expect::colon:
            if (c != ':') return {};
            expect = Expect::value;
            continue;
        case Expect::value_or_close:
            if (c == ']') goto close;
            [[fallthrough]];
        case Expect::value:
            if (c == '{' || c == '[') {
                if (depth == max_grammar_depth) return {};
                if (depth == 0) root_object = c == '{';
                in_object[depth++] = c == '{';
                expect = c == '{' ? Expect::key_or_close : Expect::value_or_close;
                continue;
            }
            if (depth == 0) return {};  // a scalar document: simdjson decides
            if (c == '"') {
                if (k + 1 >= count || !string_ok(buf, at, idx[k + 1])) return {};
            } else if (c == '-' || is_digit(c)) {
                if (!number_ok(buf, at, end)) return {};
            } else if (!literal_ok(buf, at, end)) {
                return {};
            }
            expect = Expect::after_value;
            continue;
        case Expect::after_value:
            if (c == ',') {
                expect = in_object[depth - 1] ? Expect::key : Expect::value;
                continue;
            }
            if (c == (in_object[depth - 1] ? '}' : ']')) goto close;
            return {};
        }
    close:
        if (--depth == 0)
            return {root_object ? GrammarVerdict::object : GrammarVerdict::array, k + 1};
        expect = Expect::after_value;
    }
    return {};
}

}  // namespace jsonlw::detail
