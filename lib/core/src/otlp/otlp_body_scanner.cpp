// OtlpBodyScanner (see otlp_body_scanner.hpp). The AnyValue spellings are those of
// otlp_any_value.hpp's DOM path: an object a kvlistValue, an array an arrayValue, a string a
// stringValue (its escaped text copied as is: already valid JSON), an integer that fits int64 an
// intValue as a decimal string, a larger one a stringValue of its digits, any other number a
// doubleValue (its text copied: a valid JSON number), null {}.
#include "otlp_body_scanner.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cstdint>

namespace jsonlw::detail {

// Where the kvlist is written: a raw pointer into the LineBuffer, room checked before each
// piece (a few hundred small appends per record: fmt's append per piece was most of the cost).
struct OtlpBodyScanner::Out {
    LineBuffer& buf;
    char* w;
    char* end;

    explicit Out(LineBuffer& b, std::size_t expect) : buf(b)
    {
        const std::size_t at = buf.size();
        buf.resize(at + expect);
        w = buf.data() + at;
        end = buf.data() + buf.size();
    }
    // Room for n more bytes.
    void need(std::size_t n)
    {
        if (static_cast<std::size_t>(end - w) >= n) return;
        const auto at = static_cast<std::size_t>(w - buf.data());
        buf.resize(std::max(buf.size() * 2, at + n + 4096));
        w = buf.data() + at;
        end = buf.data() + buf.size();
    }
    // Appends s; the caller made room.
    template <std::size_t N>
    void lit(const char (&s)[N]) noexcept
    {
        std::memcpy(w, s, N - 1);
        w += N - 1;
    }
    void text(std::string_view s) noexcept
    {
        std::memcpy(w, s.data(), s.size());
        w += s.size();
    }
    void done() { buf.resize(static_cast<std::size_t>(w - buf.data())); }
};

struct OtlpBodyScanner::Cursor {
    const char* p;
    const char* end;

    bool at(char c) const noexcept { return p < end && *p == c; }
    // A string token starting at p ('"'): its text without the quotes; p after it.
    bool string(std::string_view& text) noexcept
    {
        if (!at('"')) return false;
        const char* s = ++p;
        // Most strings (keys, stamps) hold no escape: find the closing quote at once.
        if (const auto* q = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(end - p)))) {
            bool plain = true;
            for (const char* k = p; k < q; ++k)
                if (*k == '\\' || static_cast<unsigned char>(*k) < 0x20) {
                    plain = false;
                    break;
                }
            if (plain) {
                text = std::string_view(s, static_cast<std::size_t>(q - s));
                p = q + 1;
                return true;
            }
        }
        while (p < end) {
            const char c = *p;
            if (c == '"') {
                text = std::string_view(s, static_cast<std::size_t>(p - s));
                ++p;
                return true;
            }
            if (c == '\\') {
                if (++p == end) return false;
            } else if (static_cast<unsigned char>(c) < 0x20) {
                return false;
            }
            ++p;
        }
        return false;
    }
    bool literal(std::string_view word) noexcept
    {
        if (static_cast<std::size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word)
            return false;
        p += word.size();
        return true;
    }
    // A number token: its text, and whether it is an integer (no fraction, no exponent).
    bool number(std::string_view& text, bool& integer) noexcept
    {
        const char* s = p;
        integer = true;
        if (at('-')) ++p;
        if (p == end || *p < '0' || *p > '9') return false;
        if (*p == '0') ++p;
        else
            while (p < end && *p >= '0' && *p <= '9') ++p;
        if (at('.')) {
            integer = false;
            ++p;
            if (p == end || *p < '0' || *p > '9') return false;
            while (p < end && *p >= '0' && *p <= '9') ++p;
        }
        if (at('e') || at('E')) {
            integer = false;
            ++p;
            if (at('+') || at('-')) ++p;
            if (p == end || *p < '0' || *p > '9') return false;
            while (p < end && *p >= '0' && *p <= '9') ++p;
        }
        text = std::string_view(s, static_cast<std::size_t>(p - s));
        return true;
    }
};

std::vector<std::string> OtlpBodyScanner::pointer_tokens(std::string_view ptr)
{
    std::vector<std::string> tokens;
    std::size_t at = 0;
    while (at < ptr.size() && ptr[at] == '/') {
        const std::size_t next = ptr.find('/', at + 1);
        std::string token(ptr.substr(at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1));
        // RFC 6901 escapes: ~1 is '/', ~0 is '~'.
        for (std::size_t i = 0; (i = token.find('~', i)) != std::string::npos; ++i)
            if (i + 1 < token.size()) token.replace(i, 2, token[i + 1] == '1' ? "/" : "~");
        tokens.push_back(std::move(token));
        at = next == std::string_view::npos ? ptr.size() : next;
    }
    return tokens;
}

OtlpBodyScanner::OtlpBodyScanner(const std::vector<std::string>& pointers)
{
    for (const std::string& ptr : pointers) pointers_.push_back(pointer_tokens(ptr));
    found_.resize(pointers_.size());
}

void OtlpBodyScanner::note(std::string_view value, int depth)
{
    if (in_array_) return;
    for (std::size_t i = 0; i < pointers_.size(); ++i) {
        const auto& tokens = pointers_[i];
        if (tokens.size() != static_cast<std::size_t>(depth) || !found_[i].empty()) continue;
        bool same = true;
        for (int d = 0; same && d < depth; ++d) same = tokens[d] == path_[d];
        if (same) found_[i] = value;
    }
}

bool OtlpBodyScanner::scan(std::string_view line, LineBuffer& buf)
{
    const std::size_t mark = buf.size();
    for (auto& f : found_) f = {};
    trace_.reset();
    path_.clear();
    in_array_ = false;
    Cursor c{line.data(), line.data() + line.size()};
    Out out(buf, 4 * line.size() + 256);
    out.lit(R"({"kvlistValue":{"values":[)");
    if (!object_members(c, 1, out) || c.p != c.end) {
        buf.resize(mark);
        return false;
    }
    out.need(4);
    out.lit("]}}");
    out.done();
    return true;
}

bool OtlpBodyScanner::object_members(Cursor& c, int depth, Out& out)
{
    if (depth > max_depth || !c.at('{')) return false;
    ++c.p;
    bool first = true;
    if (c.at('}')) {
        ++c.p;
        return true;
    }
    for (;;) {
        std::string_view key;
        if (!c.string(key) || !c.at(':')) return false;
        ++c.p;
        const char* value_start = c.p;
        // The top-level traceparent, when valid, becomes the record's traceId/spanId/flags.
        if (depth == 1 && key == "traceparent" && c.at('"')) {
            std::string_view text;
            if (!c.string(text)) return false;
            if ((trace_ = TraceContext::parse_traceparent(text))) {
                if (c.at(',')) {
                    ++c.p;
                    continue;
                }
                if (!c.at('}')) return false;
                ++c.p;
                return true;
            }
            c.p = value_start;
        }
        out.need(key.size() + 24);
        if (!first) out.lit(",");
        first = false;
        out.lit(R"({"key":")");
        out.text(key);
        out.lit(R"(","value":)");
        if (static_cast<int>(path_.size()) < depth) path_.resize(static_cast<std::size_t>(depth));
        path_[static_cast<std::size_t>(depth - 1)] = key;
        if (!value(c, depth, out)) return false;
        note(std::string_view(value_start, static_cast<std::size_t>(c.p - value_start)), depth);
        out.need(1);
        out.lit("}");
        if (c.at(',')) {
            ++c.p;
            continue;
        }
        if (!c.at('}')) return false;
        ++c.p;
        return true;
    }
}

bool OtlpBodyScanner::value(Cursor& c, int depth, Out& out)
{
    if (c.p == c.end) return false;
    // 40 bytes cover every constant piece below; a token's own text is added to it.
    out.need(40);
    switch (*c.p) {
    case '{': {
        out.lit(R"({"kvlistValue":{"values":[)");
        if (!object_members(c, depth + 1, out)) return false;
        out.need(4);
        out.lit("]}}");
        return true;
    }
    case '[': {
        if (depth >= max_depth) return false;
        ++c.p;
        out.lit(R"({"arrayValue":{"values":[)");
        const bool outer = in_array_;
        in_array_ = true;
        bool first = true;
        if (c.at(']')) {
            ++c.p;
        } else {
            for (;;) {
                if (!first) {
                    out.need(1);
                    out.lit(",");
                }
                first = false;
                if (!value(c, depth + 1, out)) return false;
                if (c.at(',')) {
                    ++c.p;
                    continue;
                }
                if (!c.at(']')) return false;
                ++c.p;
                break;
            }
        }
        in_array_ = outer;
        out.need(4);
        out.lit("]}}");
        return true;
    }
    case '"': {
        std::string_view text;
        if (!c.string(text)) return false;
        out.need(text.size() + 24);
        out.lit(R"({"stringValue":")");
        out.text(text);
        out.lit("\"}");
        return true;
    }
    case 't':
        if (!c.literal("true")) return false;
        out.lit(R"({"boolValue":true})");
        return true;
    case 'f':
        if (!c.literal("false")) return false;
        out.lit(R"({"boolValue":false})");
        return true;
    case 'n':
        if (!c.literal("null")) return false;
        out.lit("{}");
        return true;
    default: {
        std::string_view text;
        bool integer;
        if (!c.number(text, integer)) return false;
        out.need(text.size() + 24);
        if (!integer) {
            out.lit(R"({"doubleValue":)");
            out.text(text);
            out.lit("}");
            return true;
        }
        // Up to 18 digits always fit int64; longer ones are checked.
        bool fits = text.size() <= 18;
        if (!fits) {
            std::int64_t v;
            const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            fits = ec == std::errc{} && ptr == text.data() + text.size();
        }
        if (fits) out.lit(R"({"intValue":")");
        else out.lit(R"({"stringValue":")");
        out.text(text == "-0" ? std::string_view("0") : text);
        out.lit("\"}");
        return true;
    }
    }
}

bool OtlpBodyScanner::any_value(std::string_view text, LineBuffer& buf)
{
    const std::size_t mark = buf.size();
    Cursor c{text.data(), text.data() + text.size()};
    const bool outer = in_array_;
    in_array_ = true;  // nothing inside an attribute value is noted
    Out out(buf, 4 * text.size() + 64);
    const bool ok = value(c, 1, out) && c.p == c.end;
    in_array_ = outer;
    if (ok) out.done();
    else buf.resize(mark);
    return ok;
}

}  // namespace jsonlw::detail
