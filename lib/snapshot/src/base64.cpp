// Base64 with lookup tables built at compile time: encoding maps 12 bits to two characters at
// once (3 bytes -> 2 lookups), decoding maps a character to its 6 bits or to "invalid", so the
// hot loops have no branches but one per quantum for the error path.
#include <jsonlw/snapshot/base64.hpp>

#include <array>
#include <cstdint>
#include <cstring>

namespace jsonlw::snapshot {
namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<char, 8192> make_pairs()
{
    std::array<char, 8192> t{};
    for (int v = 0; v < 4096; ++v) {
        t[2 * v] = alphabet[v >> 6];
        t[2 * v + 1] = alphabet[v & 63];
    }
    return t;
}
constexpr std::array<char, 8192> pairs = make_pairs();

constexpr std::uint8_t invalid = 0xff;
constexpr std::array<std::uint8_t, 256> make_values()
{
    std::array<std::uint8_t, 256> t{};
    for (auto& v : t) v = invalid;
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::uint8_t>(i);
    return t;
}
constexpr std::array<std::uint8_t, 256> values = make_values();

void put_pair(char* out, std::uint32_t v12) noexcept { std::memcpy(out, &pairs[2 * v12], 2); }

// "'-' (0x2d)" for printable characters, "0x0a" otherwise.
std::string describe(char c)
{
    static constexpr char hex[] = "0123456789abcdef";
    const auto u = static_cast<unsigned char>(c);
    std::string s;
    if (u >= 0x20 && u < 0x7f) {
        s += '\'';
        s += c;
        s += "' (";
    }
    s += "0x";
    s += hex[u >> 4];
    s += hex[u & 15];
    if (u >= 0x20 && u < 0x7f) s += ')';
    return s;
}

bool fail(std::string& error, std::string what)
{
    error = "base64: " + std::move(what);
    return false;
}

bool bad_char(std::string& error, std::string_view text, std::size_t i)
{
    if (text[i] == '=')
        return fail(error, "'=' at offset " + std::to_string(i) +
                               " before the end (padding may only be the last 1 or 2 characters)");
    return fail(error, "invalid character " + describe(text[i]) + " at offset " + std::to_string(i));
}

}  // namespace

void base64_encode(std::span<const std::byte> in, char* out) noexcept
{
    const auto* p = reinterpret_cast<const unsigned char*>(in.data());
    std::size_t n = in.size();
    for (; n >= 3; n -= 3, p += 3, out += 4) {
        const std::uint32_t v = (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
        put_pair(out, v >> 12);
        put_pair(out + 2, v & 0xfffu);
    }
    if (n == 1) {
        const std::uint32_t v = std::uint32_t{p[0]} << 16;
        put_pair(out, v >> 12);
        out[2] = '=';
        out[3] = '=';
    } else if (n == 2) {
        const std::uint32_t v = (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8);
        put_pair(out, v >> 12);
        out[2] = alphabet[(v >> 6) & 63];
        out[3] = '=';
    }
}

void base64_append(std::string& out, std::span<const std::byte> in)
{
    const std::size_t at = out.size();
    out.resize(at + base64_encoded_size(in.size()));
    base64_encode(in, out.data() + at);
}

bool base64_decode(std::string_view text, std::vector<std::byte>& out, std::string& error)
{
    out.clear();
    if (text.size() % 4 != 0)
        return fail(error, "length " + std::to_string(text.size()) + " is not a multiple of 4");
    if (text.empty()) return true;

    std::size_t pad = 0;
    if (text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
    if (pad == 2 && text[text.size() - 3] == '=')
        return fail(error, "too much padding: '=' at offset " + std::to_string(text.size() - 3) +
                               " (at most 2)");
    out.resize(text.size() / 4 * 3 - pad);

    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    auto* o = reinterpret_cast<unsigned char*>(out.data());
    const std::size_t full = text.size() - (pad ? 4 : 0);  // quanta without padding
    for (std::size_t i = 0; i < full; i += 4, o += 3) {
        const std::uint32_t a = values[s[i]], b = values[s[i + 1]], c = values[s[i + 2]],
                            d = values[s[i + 3]];
        if ((a | b | c | d) & 0x80u) {  // only `invalid` has the high bit
            for (std::size_t j = i;; ++j)
                if (values[s[j]] == invalid) return bad_char(error, text, j);
        }
        const std::uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
        o[0] = static_cast<unsigned char>(v >> 16);
        o[1] = static_cast<unsigned char>(v >> 8);
        o[2] = static_cast<unsigned char>(v);
    }
    if (pad == 0) return true;

    // The padded last quantum: 2 or 3 data characters whose unused low bits must be zero.
    const std::size_t i = full;
    const std::size_t data_chars = 4 - pad;
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < data_chars; ++j) {
        const std::uint32_t x = values[s[i + j]];
        if (x == invalid) return bad_char(error, text, i + j);
        v = (v << 6) | x;
    }
    const std::uint32_t unused_mask = pad == 2 ? 0xfu : 0x3u;  // 12 bits -> 1 byte, 18 -> 2
    if (v & unused_mask) {
        const std::size_t at = i + data_chars - 1;
        return fail(error, "non-zero unused bits in " + describe(text[at]) + " at offset " +
                               std::to_string(at) + " before the padding (non-canonical encoding)");
    }
    if (pad == 2) {
        o[0] = static_cast<unsigned char>(v >> 4);
    } else {
        o[0] = static_cast<unsigned char>(v >> 10);
        o[1] = static_cast<unsigned char>(v >> 2);
    }
    return true;
}

}  // namespace jsonlw::snapshot
