// The N-lane vocabulary of reference_row's passes (reference_key_pass.hpp,
// reference_exp_pass.hpp): GNU vectors of N lanes, bit casts, lane tests, and the exact widening
// of N logits (or one, for tails) to fp32 bits and to value keys. Written once for N = 4 and
// N = 8; the N = 8 forms are inlined only into functions built for AVX2 (reference.cpp).
// Pure functions; any thread.
#pragma once

#include "half_bits.hpp"
#include "reference_keys.hpp"

#include <jsonlw/snapshot/reference.hpp>

#include <cstdint>
#include <cstring>

// The N = 8 helpers return 32-byte vectors (and take them by reference); they are always
// inlined into the AVX2 functions, so the pre-AVX ABI the warning is about is never used.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace jsonlw::snapshot::detail::ref {

// N lanes of T as a GNU vector (GCC and Clang). A typedef in a class template, because GCC
// drops a dependent vector_size from an alias declaration.
template <class T, int N>
struct Vec {
    typedef T type __attribute__((vector_size(sizeof(T) * N)));
};

// N-lane vectors: f64 holds N/2 doubles in the same N * 4 bytes, f64w all N.
template <int N>
struct Lanes {
    using u16 = typename Vec<std::uint16_t, N>::type;
    using u32 = typename Vec<std::uint32_t, N>::type;
    using i32 = typename Vec<std::int32_t, N>::type;
    using f32 = typename Vec<float, N>::type;
    using f64 = typename Vec<double, N / 2>::type;
    using f64w = typename Vec<double, N>::type;
    using u64 = typename Vec<std::uint64_t, N / 2>::type;
};
static_assert(sizeof(Lanes<4>::u16) == 8 && sizeof(Lanes<8>::f64w) == 64);

template <class To, class From>
[[gnu::always_inline]] inline To vbits(const From& v) noexcept
{
    static_assert(sizeof(To) == sizeof(From));
    To t;
    std::memcpy(&t, &v, sizeof t);
    return t;
}

template <class V>
[[gnu::always_inline]] inline V vmax(const V& a, const V& b) noexcept
{
    return a > b ? a : b;
}

// Whether any lane of a comparison result (lanes 0 or all ones) is true.
template <int N>
[[gnu::always_inline]] inline bool any_lane(const typename Lanes<N>::i32& mask) noexcept
{
    const auto w = vbits<typename Lanes<N>::u64>(mask);
    if constexpr (N == 4) return (w[0] | w[1]) != 0;
    else return ((w[0] | w[1]) | (w[2] | w[3])) != 0;
}

// N logits from element i on, as the bits of their exact fp32 values.
template <int N, LogitDType dtype>
[[gnu::always_inline]] inline typename Lanes<N>::u32 load_bits(const unsigned char* p,
                                                               std::int64_t i) noexcept
{
    using L = Lanes<N>;
    typename L::u32 u;
    if constexpr (dtype == LogitDType::f32) {
        std::memcpy(&u, p + i * 4, sizeof u);
        return u;
    }
    typename L::u16 h;
    std::memcpy(&h, p + i * 2, sizeof h);
    u = __builtin_convertvector(h, typename L::u32);
    if constexpr (dtype == LogitDType::bf16) return u << 16;
    // fp16, as detail::f16_to_f32_bits with the three cases as lane masks.
    const typename L::u32 sign = (u & 0x8000u) << 16;
    const typename L::u32 em = u & 0x7fffu;
    const auto emi = vbits<typename L::i32>(em);  // < 2^15: signed compares are native
    const typename L::u32 infnan = (em << 13) | 0x7f800000u;
    const typename L::u32 normal = (em << 13) + (112u << 23);
    const typename L::f32 sub_f = __builtin_convertvector(emi, typename L::f32) * 0x1p-24f;
    const auto sub = vbits<typename L::u32>(sub_f);
    using i32 = typename L::i32;
    const auto r = vbits<typename L::u32>(emi >= 0x7c00   ? vbits<i32>(infnan)
                                          : emi >= 0x0400 ? vbits<i32>(normal)
                                                          : vbits<i32>(sub));
    return sign | r;
}

// One logit widened exactly, for the scalar tail and the heap.
template <LogitDType dtype>
float load1(const unsigned char* p, std::int64_t i) noexcept
{
    if constexpr (dtype == LogitDType::f32) {
        float f;
        std::memcpy(&f, p + i * 4, 4);
        return f;
    }
    std::uint16_t h;
    std::memcpy(&h, p + i * 2, 2);
    if constexpr (dtype == LogitDType::bf16) return bf16_to_f32(h);
    return detail::f16_to_f32_bits(h);
}

// value_key, lane by lane.
template <int N>
[[gnu::always_inline]] inline typename Lanes<N>::i32 value_keys(
    const typename Lanes<N>::u32& u) noexcept
{
    using i32 = typename Lanes<N>::i32;
    const auto mag = vbits<i32>(u & 0x7fffffffu);
    const i32 s = vbits<i32>(u) >> 31;
    const i32 k = (mag ^ s) - s;
    return mag > 0x7f800000 ? i32{} + key_nan : k;
}

}  // namespace jsonlw::snapshot::detail::ref
