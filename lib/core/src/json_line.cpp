#include <jsonlw/json_line.hpp>

#include <jsonlw/detail/otlp_record_form.hpp>

#include "line_bytes.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

namespace jsonlw {
namespace {

// 0: copy as is; 1: needs an escape; 2: starts a multi-byte UTF-8 sequence (or is invalid).
constexpr std::array<std::uint8_t, 256> byte_class = [] {
    std::array<std::uint8_t, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = 1;
    t['"'] = 1;
    t['\\'] = 1;
    for (int c = 0x80; c < 0x100; ++c) t[c] = 2;
    return t;
}();

// Length of the valid UTF-8 sequence at s[0] (>= 0x80), or 0 with `bad` set to the length of
// its maximal invalid subpart (at least 1), per Unicode table 3-7.
std::size_t utf8_sequence(const unsigned char* s, std::size_t avail, std::size_t& bad) noexcept
{
    const unsigned char c = s[0];
    std::size_t need;
    unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) need = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) need = 3;
    else if (c == 0xED) need = 3, hi = 0x9F;
    else if (c == 0xF0) need = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else if (c == 0xF4) need = 4, hi = 0x8F;
    else {
        bad = 1;
        return 0;
    }
    std::size_t i = 1;
    for (; i < need && i < avail; ++i) {
        const unsigned char b = s[i];
        const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) break;
    }
    if (i == need) return need;
    bad = i;
    return 0;
}

void append(LineBuffer& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }

using detail::commit;
using detail::copy_short;
using detail::reserve;
using detail::write_short_decimal;
using detail::write_uint;


// The first byte at or after i that is not copied as is (byte_class != 0: < 0x20, '"', '\\',
// >= 0x80), or n; 8 bytes at a time. A borrow in the word arithmetic only runs upwards from a
// byte that is itself flagged, so the lowest flagged byte is exact.
std::size_t next_special(const unsigned char* p, std::size_t i, std::size_t n) noexcept
{
    constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        const std::uint64_t ctl = (w - 0x2020202020202020ull) & ~w;  // byte < 0x20
        const std::uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        const std::uint64_t quote = (q - ones) & ~q, slash = (b - ones) & ~b;
        const std::uint64_t mask = ((ctl | quote | slash) & highs) | (w & highs);
        if (mask) {
            static_assert(std::endian::native == std::endian::little);
            return i + static_cast<std::size_t>(std::countr_zero(mask)) / 8;
        }
    }
    while (i < n && byte_class[p[i]] == 0) ++i;
    return i;
}

// Whether a name needs no escaping.
bool plain(std::string_view s) noexcept
{
    return next_special(reinterpret_cast<const unsigned char*>(s.data()), 0, s.size()) ==
           s.size();
}

void append_bytes(LineBuffer& out, const char* data, std::size_t n)
{
    char* p = reserve(out, n);
    std::memcpy(p, data, n);
    commit(out, p + n);
}

}  // namespace

JsonLine::JsonLine(LineBuffer& out, detail::OtlpRecordForm* otlp) noexcept
    : out_(&out), start_(out.size()), form_(otlp)
{
    if (otlp) otlp->begin_record(*this);
}

JsonLine& JsonLine::otlp_key(std::string_view name, bool needs_no_escape)
{
    last_key_ = name;
    if (otlp_->key(*this, name, needs_no_escape)) return *this;
    return key(name);  // not in OTLP mode any more
}

void JsonLine::separate()
{
    if (need_comma_) out_->push_back(',');
}

JsonLine& JsonLine::begin_object()
{
    if (otlp_) [[unlikely]]
        if (otlp_->begin_object(*this)) return *this;
    separate();
    out_->push_back('{');
    need_comma_ = false;
    return *this;
}
JsonLine& JsonLine::end_object()
{
    if (otlp_) [[unlikely]]
        if (otlp_->end_object(*this)) return *this;
    out_->push_back('}');
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::begin_array()
{
    if (otlp_) [[unlikely]]
        if (otlp_->begin_array(*this)) return *this;
    separate();
    out_->push_back('[');
    need_comma_ = false;
    return *this;
}
JsonLine& JsonLine::end_array()
{
    if (otlp_) [[unlikely]]
        if (otlp_->end_array(*this)) return *this;
    out_->push_back(']');
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::key(std::string_view name)
{
    if (otlp_) [[unlikely]]
        return otlp_key(name, plain(name));
    if (plain(name)) {
        plain_key(name);
    } else {
        separate();
        append_escaped(name);
        out_->push_back(':');
    }
    last_key_ = name;
    need_comma_ = false;
    return *this;
}
void JsonLine::plain_key(std::string_view name)
{
    char* p = reserve(*out_, name.size() + 4);
    if (need_comma_) *p++ = ',';
    *p++ = '"';
    copy_short(p, name.data(), name.size());
    p += name.size();
    *p++ = '"';
    *p++ = ':';
    commit(*out_, p);
}
JsonLine& JsonLine::string(std::string_view s)
{
    if (otlp_) [[unlikely]]
        if (otlp_->string(*this, s)) return *this;
    separate();
    append_escaped(s);
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::value(bool b)
{
    if (otlp_) [[unlikely]]
        if (otlp_->boolean(*this, b)) return *this;
    separate();
    append(*out_, b ? std::string_view("true") : std::string_view("false"));
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::null()
{
    if (otlp_) [[unlikely]]
        if (otlp_->null(*this)) return *this;
    separate();
    append(*out_, "null");
    need_comma_ = true;
    return *this;
}
// p: where the number goes, inside room reserve() made for 32 bytes.
[[gnu::always_inline]] inline void JsonLine::write_double(char* p, double d)
{
    if (char* end = write_short_decimal(p, d)) {
        commit(*out_, end);
        return;
    }
    commit(*out_, p);
    const std::size_t at = out_->size();
    fmt::format_to(fmt::appender(*out_), FMT_COMPILE("{}"), d);
    // Shortest round-trip, spelled as Python's repr(): an integral value keeps ".0", so a
    // float stays a float for every reader (1000.0, not 1000; 1e+16 as is).
    bool integral = true;
    for (std::size_t i = at; i < out_->size(); ++i) {
        const char c = (*out_)[i];
        if (c == '.' || c == 'e') {
            integral = false;
            break;
        }
    }
    if (integral) append(*out_, ".0");
}

JsonLine& JsonLine::value(double d)
{
    if (!std::isfinite(d)) [[unlikely]]
        non_finite(d);
    if (otlp_) [[unlikely]]
        if (otlp_->number(*this, d)) return *this;
    char* p = reserve(*out_, 32);  // ',' '-' 10 digits '.' 8 bytes of decimals
    if (need_comma_) *p++ = ',';
    need_comma_ = true;
    write_double(p, d);
    return *this;
}

JsonLine& JsonLine::plain_field(std::string_view name, double d)
{
    if (otlp_) [[unlikely]] {
        last_key_ = name;
        if (!std::isfinite(d)) [[unlikely]]
            non_finite(d);
        if (otlp_->number_field(*this, name, d)) return *this;
        otlp_key(name, true);
        return value(d);
    }
    last_key_ = name;
    if (!std::isfinite(d)) [[unlikely]]
        non_finite(d);
    char* p = reserve(*out_, name.size() + 36);
    if (need_comma_) *p++ = ',';
    *p++ = '"';
    copy_short(p, name.data(), name.size());
    p += name.size();
    *p++ = '"';
    *p++ = ':';
    need_comma_ = true;
    write_double(p, d);
    return *this;
}

JsonLine& JsonLine::plain_field(std::string_view name, std::int64_t v)
{
    if (otlp_) [[unlikely]] {
        if (otlp_->integer_field(*this, name, v)) return *this;
        otlp_key(name, true);
        return integer(v);
    }
    char* p = reserve(*out_, name.size() + 26);
    if (need_comma_) *p++ = ',';
    *p++ = '"';
    copy_short(p, name.data(), name.size());
    p += name.size();
    *p++ = '"';
    *p++ = ':';
    std::uint64_t u = static_cast<std::uint64_t>(v);
    if (v < 0) {
        *p++ = '-';
        u = ~u + 1;
    }
    commit(*out_, write_uint(p, u));
    last_key_ = name;
    need_comma_ = true;
    return *this;
}

void JsonLine::non_finite(double d) const
{
    const std::string_view what = std::isnan(d) ? "NaN" : (d > 0 ? "Infinity" : "-Infinity");
    if (last_key_.empty()) throw MalformedRecord(fmt::format("non-finite number {}", what));
    throw MalformedRecord(fmt::format("non-finite number {} for key '{}'", what, last_key_));
}


JsonLine& JsonLine::number_or_null(double d)
{
    if (!std::isfinite(d)) return null();
    return value(d);
}
JsonLine& JsonLine::integer(std::int64_t v)
{
    if (otlp_) [[unlikely]]
        if (otlp_->integer(*this, v)) return *this;
    char* p = reserve(*out_, 22);
    if (need_comma_) *p++ = ',';
    std::uint64_t u = static_cast<std::uint64_t>(v);
    if (v < 0) {
        *p++ = '-';
        u = ~u + 1;
    }
    commit(*out_, write_uint(p, u));
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::unsigned_integer(std::uint64_t v)
{
    if (otlp_) [[unlikely]]
        if (otlp_->unsigned_integer(*this, v)) return *this;
    char* p = reserve(*out_, 21);
    if (need_comma_) *p++ = ',';
    commit(*out_, write_uint(p, v));
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::raw(std::string_view json)
{
    if (otlp_) [[unlikely]]
        if (otlp_->raw(*this, json)) return *this;
    char* p = reserve(*out_, json.size() + 1);
    if (need_comma_) *p++ = ',';
    std::memcpy(p, json.data(), json.size());
    commit(*out_, p + json.size());
    need_comma_ = true;
    return *this;
}

void JsonLine::discard() noexcept
{
    out_->resize(start_);
    need_comma_ = false;
    if (form_) form_->begin_record(*this);
}

bool decoded_string_pieces(std::string_view s, void (*piece)(void*, std::string_view), void* ctx)
{
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    bool replaced = false;
    std::size_t run = 0;  // start of the pending run of valid bytes
    for (std::size_t i = 0; i < n;) {
        if (p[i] < 0x80) {
            ++i;
            continue;
        }
        std::size_t bad = 0;
        if (const std::size_t len = utf8_sequence(p + i, n - i, bad)) {
            i += len;
            continue;
        }
        if (i > run) piece(ctx, s.substr(run, i - run));
        piece(ctx, "\xEF\xBF\xBD");  // U+FFFD, as append_escaped() writes it
        replaced = true;
        i += bad;
        run = i;
    }
    if (n > run) piece(ctx, s.substr(run));
    return replaced;
}

void JsonLine::append_escaped(std::string_view s)
{
    static constexpr char hex[] = "0123456789abcdef";
    LineBuffer& out = *out_;
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    out.push_back('"');
    std::size_t run = 0;  // start of the pending run of bytes copied as is
    std::size_t i = 0;
    // Runs of bytes that need no escape are found a word at a time and copied at once.
    for (;;) {
        i = next_special(p, i, n);
        if (i >= n) break;
        if (byte_class[p[i]] == 2) {
            std::size_t bad = 0;
            const std::size_t len = utf8_sequence(p + i, n - i, bad);
            if (len != 0) {
                i += len;
                continue;
            }
            append_bytes(out, s.data() + run, i - run);
            append(out, "\xEF\xBF\xBD");  // U+FFFD
            sanitized_ = true;
            i += bad;
            run = i;
            continue;
        }
        append_bytes(out, s.data() + run, i - run);
        const unsigned char c = p[i];
        switch (c) {
        case '"': append(out, "\\\""); break;
        case '\\': append(out, "\\\\"); break;
        case '\b': append(out, "\\b"); break;
        case '\f': append(out, "\\f"); break;
        case '\n': append(out, "\\n"); break;
        case '\r': append(out, "\\r"); break;
        case '\t': append(out, "\\t"); break;
        default: {
            const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
            append_bytes(out, esc, 6);
        }
        }
        ++i;
        run = i;
    }
    char* q = reserve(out, n - run + 1);
    if (n != run) std::memcpy(q, s.data() + run, n - run);  // an empty view's data() may be null
    q += n - run;
    *q++ = '"';
    commit(out, q);
}

}  // namespace jsonlw
