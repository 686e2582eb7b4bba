#include <jsonlw/json_line.hpp>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <array>
#include <cmath>
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

}  // namespace

void JsonLine::separate()
{
    if (need_comma_) out_->push_back(',');
}

JsonLine& JsonLine::begin_object()
{
    separate();
    out_->push_back('{');
    need_comma_ = false;
    return *this;
}
JsonLine& JsonLine::end_object()
{
    out_->push_back('}');
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::begin_array()
{
    separate();
    out_->push_back('[');
    need_comma_ = false;
    return *this;
}
JsonLine& JsonLine::end_array()
{
    out_->push_back(']');
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::key(std::string_view name)
{
    separate();
    append_escaped(name);
    out_->push_back(':');
    last_key_ = name;
    need_comma_ = false;
    return *this;
}
JsonLine& JsonLine::string(std::string_view s)
{
    separate();
    append_escaped(s);
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::value(bool b)
{
    separate();
    append(*out_, b ? std::string_view("true") : std::string_view("false"));
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::null()
{
    separate();
    append(*out_, "null");
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::value(double d)
{
    if (!std::isfinite(d)) [[unlikely]] {
        const std::string_view what = std::isnan(d) ? "NaN" : (d > 0 ? "Infinity" : "-Infinity");
        if (last_key_.empty()) throw MalformedRecord(fmt::format("non-finite number {}", what));
        throw MalformedRecord(fmt::format("non-finite number {} for key '{}'", what, last_key_));
    }
    separate();
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
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::number_or_null(double d)
{
    if (!std::isfinite(d)) return null();
    return value(d);
}
JsonLine& JsonLine::integer(std::int64_t v)
{
    separate();
    const fmt::format_int digits(v);
    out_->append(digits.data(), digits.data() + digits.size());
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::unsigned_integer(std::uint64_t v)
{
    separate();
    const fmt::format_int digits(v);
    out_->append(digits.data(), digits.data() + digits.size());
    need_comma_ = true;
    return *this;
}
JsonLine& JsonLine::raw(std::string_view json)
{
    separate();
    append(*out_, json);
    need_comma_ = true;
    return *this;
}

void JsonLine::discard() noexcept
{
    out_->resize(start_);
    need_comma_ = false;
}

void JsonLine::append_escaped(std::string_view s)
{
    static constexpr char hex[] = "0123456789abcdef";
    LineBuffer& out = *out_;
    out.push_back('"');
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::size_t run = 0;  // start of the pending run of bytes copied as is
    std::size_t i = 0;
    // Most keys and many values need no escape: one tight scan, then one copy.
    while (i < n && byte_class[p[i]] == 0) ++i;
    while (i < n) {
        const std::uint8_t cls = byte_class[p[i]];
        if (cls == 0) {
            ++i;
            continue;
        }
        if (cls == 2) {
            std::size_t bad = 0;
            const std::size_t len = utf8_sequence(p + i, n - i, bad);
            if (len != 0) {
                i += len;
                continue;
            }
            out.append(s.data() + run, s.data() + i);
            append(out, "\xEF\xBF\xBD");  // U+FFFD
            sanitized_ = true;
            i += bad;
            run = i;
            continue;
        }
        out.append(s.data() + run, s.data() + i);
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
            out.append(esc, esc + 6);
        }
        }
        ++i;
        run = i;
    }
    out.append(s.data() + run, s.data() + n);
    out.push_back('"');
}

}  // namespace jsonlw
