// The order keys reference_row's passes compare (reference.cpp): a logit's value key and a
// (value key, id) heap key. Pure functions; any thread.
#pragma once

#include "half_bits.hpp"

#include <cstdint>
#include <limits>

namespace jsonlw::snapshot::detail::ref {

// The internal order key of a value: -magnitude for negatives, +magnitude otherwise, any NaN
// INT32_MAX. Signed, so the vector loops compare and take maxima natively; -0 and +0 are both
// 0. Same order as ordered_bits (reference.hpp), not the same numbers.
inline constexpr std::int32_t key_nan = std::numeric_limits<std::int32_t>::max();
inline constexpr std::int32_t key_posinf = 0x7f800000;
inline constexpr std::int32_t key_neginf = -0x7f800000;

inline std::int32_t value_key(float x) noexcept
{
    const std::uint32_t u = detail::f32_bits(x);
    const std::uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) return key_nan;
    const auto m = static_cast<std::int32_t>(mag);
    return (u >> 31) ? -m : m;
}

// Inverse of value_key for non-NaN keys (-0 comes back as +0, which is the same value).
inline float key_value(std::int32_t k) noexcept
{
    return detail::bits_f32(k >= 0 ? static_cast<std::uint32_t>(k)
                                   : 0x80000000u | static_cast<std::uint32_t>(-k));
}

// Larger = earlier: the key in the high half, ties to the smaller id (as order_key does).
inline std::uint64_t heap_key(std::int32_t key, std::int32_t id) noexcept
{
    return (std::uint64_t{static_cast<std::uint32_t>(key) ^ 0x80000000u} << 32) |
           (0xffffffffu - static_cast<std::uint32_t>(id));
}

}  // namespace jsonlw::snapshot::detail::ref
