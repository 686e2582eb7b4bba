// The out-of-line fp16/bf16 conversions of reference.hpp; the bit work is in half_bits.hpp so the
// row loops can inline it.
#include <jsonlw/snapshot/reference.hpp>

#include "half_bits.hpp"

namespace jsonlw::snapshot {

float f16_to_f32(std::uint16_t bits) noexcept { return detail::f16_to_f32_bits(bits); }

std::uint16_t f32_to_f16_rne(float x, bool* overflow) noexcept
{
    bool o;
    const std::uint16_t h = detail::f32_to_f16_rne_bits(x, o);
    if (overflow) *overflow = o;
    return h;
}

std::uint16_t bf16_to_f16_compat(std::uint16_t bits, bool* overflow) noexcept
{
    // Every bf16 value is an fp32 value, so one rounding from the exact fp32 is the whole story.
    return f32_to_f16_rne(bf16_to_f32(bits), overflow);
}

}  // namespace jsonlw::snapshot
