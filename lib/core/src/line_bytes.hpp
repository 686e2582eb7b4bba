// The byte-level writers JsonLine and its OTLP mode share: room in a LineBuffer written through
// a raw pointer, short copies, decimal integers and the common doubles. Free functions for
// lib/core's line builders (json_line.cpp, otlp/otlp_record_form.cpp); thread-safe.
#pragma once

#include <jsonlw/json_line.hpp>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace jsonlw::detail {

// Room for n more bytes at the end of `out`; the caller writes them and calls commit().
// Growing is kept out of line, so the common path saves no registers.
[[gnu::noinline]] inline void grow(LineBuffer& out, std::size_t capacity) { out.try_reserve(capacity); }
[[gnu::always_inline]] inline char* reserve(LineBuffer& out, std::size_t n)
{
    const std::size_t need = out.size() + n;
    if (need > out.capacity()) [[unlikely]]
        grow(out, need);
    return out.data() + out.size();
}
[[gnu::always_inline]] inline void commit(LineBuffer& out, const char* end) noexcept
{
    const auto size = static_cast<std::size_t>(end - out.data());
    if (size > out.capacity()) __builtin_unreachable();  // within what reserve() made room for
    out.try_resize(size);
}

inline constexpr char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// Copies n bytes with a few fixed-size moves (the keys and numbers here are short), reading
// and writing only [src, src + n) and [dst, dst + n).
inline void copy_short(char* dst, const char* src, std::size_t n) noexcept
{
    if (n >= 8) {
        if (n > 32) {
            std::memcpy(dst, src, n);
        } else if (n > 16) {
            std::memcpy(dst, src, 16);
            std::memcpy(dst + n - 16, src + n - 16, 16);
        } else {
            std::memcpy(dst, src, 8);
            std::memcpy(dst + n - 8, src + n - 8, 8);
        }
    } else if (n >= 4) {
        std::memcpy(dst, src, 4);
        std::memcpy(dst + n - 4, src + n - 4, 4);
    } else if (n > 0) {
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
    }
}

template <class U>
[[gnu::always_inline]] inline unsigned count_digits(U v) noexcept
{
    unsigned n = 1;
    for (;;) {
        if (v < 10) return n;
        if (v < 100) return n + 1;
        if (v < 1000) return n + 2;
        if (v < 10000) return n + 3;
        v /= 10000;
        n += 4;
    }
}

// Writes v in decimal at p; returns the end. (A 32-bit U divides faster.)
template <class U>
[[gnu::always_inline]] inline char* write_uint(char* p, U v) noexcept
{
    char* const end = p + count_digits(v);
    char* q = end;
    while (v >= 100) {
        q -= 2;
        std::memcpy(q, digit_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) std::memcpy(q - 2, digit_pairs + 2 * v, 2);
    else q[-1] = static_cast<char>('0' + v);
    return end;
}

// The shortest round-trip form of d, as fmt's "{}" spells it plus Python's ".0", for doubles
// with at most 6 decimals and 1e-4 <= |d| < 2^51 / 10^6 (timestamps in seconds, durations
// in ms): the usual values, without Dragonbox. Returns nullptr for any other d (use fmt).
//
// Why it is exact: m = round(|d| * 10^6) is checked by m / 10^6 == |d| (both exact, one
// correctly rounded division), so the decimal m * 10^-6 reads back as d. Below 2^51 the
// interval of reals that round to d is narrower than 10^-6 / 2, so m is the only decimal with
// at most 6 decimals that does; the shortest form is therefore m without its trailing zeros,
// the digits Dragonbox finds, and |d| >= 1e-4 is where fmt writes them in fixed notation.
[[gnu::always_inline]] inline char* write_short_decimal(char* p, double d) noexcept
{
    const bool neg = std::signbit(d);
    const double a = neg ? -d : d;
    if (!(a >= 1e-4 && a < 2251799813.0) && a != 0.0) return nullptr;
    const auto m = static_cast<std::int64_t>(a * 1e6 + 0.5);
    if (static_cast<double>(m) / 1e6 != a) return nullptr;
    const auto whole = static_cast<std::uint32_t>(static_cast<std::uint64_t>(m) / 1000000);
    const auto frac = static_cast<std::uint32_t>(m - std::int64_t{whole} * 1000000);
    if (neg) *p++ = '-';
    p = write_uint(p, whole);
    *p++ = '.';
    if (frac == 0) {
        *p++ = '0';
        return p;
    }
    // The 6 decimals as one word (first digit in the lowest byte), built in a register and
    // stored whole; the end moves past them less their trailing zeros (the highest '0's).
    static_assert(std::endian::native == std::endian::little);
    const auto pair = [](std::uint32_t v) {
        std::uint16_t two;
        std::memcpy(&two, digit_pairs + 2 * v, 2);
        return std::uint64_t{two};
    };
    const std::uint64_t word =
        pair(frac / 10000) | pair(frac / 100 % 100) << 16 | pair(frac % 100) << 32;
    const std::uint64_t nonzero = (word ^ 0x0000303030303030ull) << 16;  // frac != 0: not 0
    std::memcpy(p, &word, 8);
    return p + 6 - std::countl_zero(nonzero) / 8;
}

}  // namespace jsonlw::detail
