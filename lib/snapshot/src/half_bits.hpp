// fp16 <-> fp32 by integer bit manipulation, inline so the row loops of the reference and the
// first_gen codec do not pay a call per element. Integer-only on purpose: the result does not
// depend on the FP environment (rounding mode, FTZ/DAZ) or on -ffast-math, and a CUDA kernel can
// reproduce it with the same integer steps. half.cpp exports these out of line.
#pragma once

#include <jsonlw/snapshot/types.hpp>  // JSONLW_SNAPSHOT_HD: kernels.cu uses these too

#include <cstdint>
#include <cstring>

namespace jsonlw::snapshot::detail {

JSONLW_SNAPSHOT_HD inline std::uint32_t f32_bits(float f) noexcept
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}

JSONLW_SNAPSHOT_HD inline float bits_f32(std::uint32_t u) noexcept
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

// Exact. A NaN keeps its sign and its payload shifted into the top of the fp32 mantissa (a
// signaling NaN stays signaling: no arithmetic touches it, as bf16's bits << 16 does not).
JSONLW_SNAPSHOT_HD inline float f16_to_f32_bits(std::uint16_t h) noexcept
{
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
    const std::uint32_t em = h & 0x7fffu;
    if (em >= 0x7c00u) return bits_f32(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
    if (em >= 0x0400u) return bits_f32(sign | ((em << 13) + (112u << 23)));
    // Zero or subnormal: em * 2^-24, exact in fp32 (em < 2^10).
    return bits_f32(sign | f32_bits(static_cast<float>(em) * 0x1p-24f));
}

// Round to nearest, ties to even. Finite values at or above 65520 (the midpoint between 65504
// and 2^16, which ties to the even 2^16) overflow to inf; values at or below 2^-25 become zero.
JSONLW_SNAPSHOT_HD inline std::uint16_t f32_to_f16_rne_bits(float x, bool& overflow) noexcept
{
    const std::uint32_t u = f32_bits(x);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7fffffffu;
    overflow = false;
    if (a >= 0x7f800000u) {
        if (a == 0x7f800000u) return sign | 0x7c00u;
        // Quiet NaN, sign and top payload bits kept (what x86 F16C and torch's CPU path do).
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    }
    if (a >= 0x477ff000u) {  // 65520
        overflow = true;
        return sign | 0x7c00u;
    }
    if (a >= 0x38800000u) {  // 2^-14: an fp16 normal. Rebias, then round 13 bits away; a
                             // mantissa carry moves into the exponent, which is still right.
        const std::uint32_t m = a - (112u << 23);
        return static_cast<std::uint16_t>(sign | ((m + 0xfffu + ((m >> 13) & 1u)) >> 13));
    }
    if (a <= 0x33000000u) return sign;  // <= 2^-25: the tie at 2^-25 goes to the even zero
    // fp16 subnormal: the value in units of 2^-24 is mant * 2^(e - 126), shift >= 14.
    const std::uint32_t e = a >> 23;
    const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - e;
    std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // q may reach 0x400, the smallest normal
    return static_cast<std::uint16_t>(sign | q);
}

}  // namespace jsonlw::snapshot::detail

namespace jsonlw::snapshot::detail {

// Test hooks of reference.cpp's row kernels. reference_row runs AVX2 kernels where the CPU
// has AVX2 and portable (SSE2 / NEON) ones otherwise; both give bit-identical results, and
// forcing the portable ones lets a test on an AVX2 machine check that. Process-wide.
void force_portable_row_kernels(bool on) noexcept;
bool wide_row_kernels_available() noexcept;

}  // namespace jsonlw::snapshot::detail
