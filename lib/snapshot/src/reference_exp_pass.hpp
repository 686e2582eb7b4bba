// Pass 2 of reference_row (reference.cpp): the sums behind the log-sum-exp, which need pass 1's
// max first. exp_term is the fp32 exp(x - m) both lane counts compute bit for bit alike; exp_pass
// sums the terms into 16 id-indexed double lanes. Templates over the lane count N, instantiated
// by reference.cpp; any thread.
#pragma once

#include "reference_lanes.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace jsonlw::snapshot::detail::ref {

// exp(x - m) for x <= m in fp32, within 2 fp32 ulps (measured: 1.06 over [-86, 0]), and +0 for
// x - m < -86 (-inf included). x - m is carried exactly as t + tl (Knuth's two-sum), so the
// rounding of the subtraction does not count against the term. Then the usual reduction
// t = n ln2 + r, |r| <= ln2/2, with ln2 split so that n * C1 and t - n * C1 are exact, e^r by
// Cephes' degree-7 minimax polynomial (1 + r + r^2 * P(r), P of degree 5), and n added into
// the exponent bits: with t >= -86, n >= -124 and the result stays normal. Each statement is
// one IEEE operation, so the N = 4 and N = 8 versions agree bit for bit.
template <int N>
[[gnu::always_inline]] inline typename Lanes<N>::f32 exp_term(const typename Lanes<N>::f32& x,
                                                               float m) noexcept
{
    using f32 = typename Lanes<N>::f32;
    using u32 = typename Lanes<N>::u32;
    const f32 zero{};
    const f32 t = x - m;
    const f32 xs = t + m;  // two-sum: t + tl == x - m exactly
    const f32 ms = t - xs;
    const f32 dx = x - xs;
    const f32 dm = m + ms;
    const f32 tl = dx - dm;
    constexpr float shifter = 0x1.8p23f;  // adding it rounds to an integer in the low bits
    const f32 z = t * 1.44269504088896341f;
    const f32 kd = z + shifter;
    const f32 n = kd - shifter;
    const f32 nc1 = n * 0.693359375f;  // 9 significant bits: exact
    f32 r = t - nc1;                   // exact (Sterbenz)
    const f32 nc2 = n * -2.12194440e-4f;
    r = r - nc2;
    r = r + tl;
    f32 q = zero + 1.9875691500e-4f;
    q = q * r;
    q = q + 1.3981999507e-3f;
    q = q * r;
    q = q + 8.3334519073e-3f;
    q = q * r;
    q = q + 4.1665795894e-2f;
    q = q * r;
    q = q + 1.6666665459e-1f;
    q = q * r;
    q = q + 5.0000001201e-1f;
    const f32 r2 = r * r;
    q = q * r2;
    q = q + r;
    q = q + 1.0f;
    // kd's bits are those of the shifter plus n, and the shifter's shift out: n << 23.
    const u32 scale = vbits<u32>(kd) << 23;
    const f32 e = vbits<f32>(vbits<u32>(q) + scale);
    return t < -86.0f ? zero : e;
}

// An N-lane float vector widened to N doubles, as two N/2-lane halves. (GCC 12 lowers the
// generic 4 x float -> 4 x double conversion as two 2-lane ones and a shuffle, but 8 -> 8 as
// two vcvtps2pd.)
template <int N>
[[gnu::always_inline]] inline void widen(const typename Lanes<N>::f32& v,
                                         typename Lanes<N>::f64& lo,
                                         typename Lanes<N>::f64& hi) noexcept
{
    const auto w = __builtin_convertvector(v, typename Lanes<N>::f64w);
    std::memcpy(&lo, &w, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const unsigned char*>(&w) + sizeof lo, sizeof hi);
}

inline constexpr int sum_lanes = 16;

// Pass 2: sums[l] = the sum, in id order, of exp_term(x_i - m) over the ids i = l (mod 16),
// each term widened to double. The lane of an id does not depend on N.
template <int N>
[[gnu::always_inline]] inline void exp_pass(const float* x, std::int32_t vocab, float m,
                                            double* sums) noexcept
{
    using f32 = typename Lanes<N>::f32;
    using f64 = typename Lanes<N>::f64;
    constexpr int chunks = sum_lanes / N;
    f64 acc[2 * chunks] = {};
    std::int32_t i = 0;
    float pad[sum_lanes];
    for (;;) {
        const float* at = x + i;
        if (vocab - i < sum_lanes) {
            if (i == vocab) break;
            // The tail, padded with -inf, whose terms are +0 and change no sum.
            std::fill(pad, pad + sum_lanes, -std::numeric_limits<float>::infinity());
            std::memcpy(pad, at, static_cast<std::size_t>(vocab - i) * 4);
            at = pad;
            i = vocab - sum_lanes;
        }
#pragma GCC unroll 4
        for (int c = 0; c < chunks; ++c) {
            f32 v;
            std::memcpy(&v, at + c * N, sizeof v);
            const f32 e = exp_term<N>(v, m);
            f64 lo, hi;
            widen<N>(e, lo, hi);
            acc[2 * c] += lo;
            acc[2 * c + 1] += hi;
        }
        i += sum_lanes;
    }
    std::memcpy(sums, acc, sizeof acc);
}

}  // namespace jsonlw::snapshot::detail::ref
