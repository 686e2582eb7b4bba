#include <jsonlw/path_component.hpp>

#include <cstdint>

namespace jsonlw {
namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

bool plain(unsigned char c) noexcept
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
}

// FNV-1a: stable across runs and platforms, so a long key maps to the same file every time.
std::uint64_t fnv1a(std::string_view s) noexcept
{
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

}  // namespace

std::string safe_path_component(std::string_view key)
{
    if (key.empty()) return "%";
    std::string out;
    out.reserve(key.size() + 8);
    for (std::size_t i = 0; i < key.size(); ++i) {
        const auto c = static_cast<unsigned char>(key[i]);
        if (plain(c) && !(i == 0 && c == '.')) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex_digits[c >> 4]);
            out.push_back(hex_digits[c & 0xF]);
        }
    }
    if (out.size() <= max_path_component) return out;
    // Cut at a byte boundary of the encoded form: never in the middle of a %XX.
    constexpr std::size_t keep = max_path_component - 17;
    std::size_t cut = keep;
    if (out[cut - 1] == '%') cut -= 1;
    else if (cut >= 2 && out[cut - 2] == '%') cut -= 2;
    out.resize(cut);
    out.push_back('~');
    std::uint64_t h = fnv1a(key);
    char digits[16];
    for (int i = 15; i >= 0; --i, h >>= 4) digits[i] = hex_digits[h & 0xF];
    out.append(digits, 16);
    return out;
}

}  // namespace jsonlw
