// Lowercase hexadecimal of bytes, two digits per byte: how a TraceContext's ids, the content
// capture's SHA-256 digests and the line chain's values are spelled. Any thread; no state.
#pragma once

#include <cstddef>

namespace jsonlw::detail {

// Writes 2 * n digits at `out` and returns the end.
inline char* write_hex_lower(const unsigned char* bytes, std::size_t n, char* out) noexcept
{
    constexpr char digits[] = "0123456789abcdef";
    for (std::size_t i = 0; i < n; ++i) {
        *out++ = digits[bytes[i] >> 4];
        *out++ = digits[bytes[i] & 0x0f];
    }
    return out;
}

}  // namespace jsonlw::detail
