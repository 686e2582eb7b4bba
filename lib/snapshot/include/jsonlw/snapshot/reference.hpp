// The CPU reference: the exact semantics every backend must match (docs/snapshot.md).
// Pure functions, no allocation per row once a RowScratch has grown; safe to call from any
// number of threads with one scratch each. Also what the CPU backend runs.
#pragma once

#include <jsonlw/snapshot/types.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace jsonlw::snapshot {

// --- exact widening to fp32 ---------------------------------------------------------------
inline float bf16_to_f32(std::uint16_t bits) noexcept
{
    const std::uint32_t u = std::uint32_t{bits} << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
float f16_to_f32(std::uint16_t bits) noexcept;  // IEEE binary16, subnormals included

// Element i of a row of the given dtype, widened exactly.
inline float load_logit(const void* row, LogitDType dtype, std::int64_t i) noexcept
{
    switch (dtype) {
    case LogitDType::f32: {
        float f;
        std::memcpy(&f, static_cast<const char*>(row) + i * 4, 4);
        return f;
    }
    case LogitDType::bf16: {
        std::uint16_t b;
        std::memcpy(&b, static_cast<const char*>(row) + i * 2, 2);
        return bf16_to_f32(b);
    }
    default: {
        std::uint16_t b;
        std::memcpy(&b, static_cast<const char*>(row) + i * 2, 2);
        return f16_to_f32(b);
    }
    }
}

// --- narrowing, as the first_gen_logits compat mode needs --------------------------------
// fp32 -> fp16, round to nearest even (what CUDA's __float2half_rn does). A finite input that
// rounds past 65504 becomes inf and sets *overflow; NaN stays NaN (quiet, sign kept).
std::uint16_t f32_to_f16_rne(float x, bool* overflow) noexcept;
// bf16 -> fp16 through the exact fp32 value: torch's tensor.to(torch.float16).
std::uint16_t bf16_to_f16_compat(std::uint16_t bits, bool* overflow) noexcept;

// --- the total order --------------------------------------------------------------------
// NaN (any payload or sign) > +inf > finite > -inf; -0 == +0. Monotone in that order.
JSONLW_SNAPSHOT_HD inline std::uint32_t ordered_bits(float x) noexcept
{
#if defined(__CUDA_ARCH__)
    std::uint32_t u = __float_as_uint(x);
#else
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
#endif
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;  // NaN
    if (u == 0x80000000u) u = 0;                              // -0 -> +0
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
// Larger key = earlier in the order; equal values tie to the smaller id.
JSONLW_SNAPSHOT_HD inline std::uint64_t order_key(float x, std::int32_t id) noexcept
{
    return (std::uint64_t{ordered_bits(x)} << 32) |
           (0xffffffffu - static_cast<std::uint32_t>(id));
}
JSONLW_SNAPSHOT_HD inline std::int32_t key_id(std::uint64_t key) noexcept
{
    return static_cast<std::int32_t>(0xffffffffu - static_cast<std::uint32_t>(key));
}

// Reused buffers of one thread; grows to the largest vocab seen, then never allocates.
struct RowScratch {
    std::vector<std::uint64_t> keys;
    std::vector<float> widened;  // an fp16/bf16 row widened once, for the lse pass
};

// Computes out's sampled_*, lse, nan/posinf counts, status_flags, k and top-k arrays for one
// row of `vocab` logits (request_id, seq_index, step and row_flags are left as they are):
//  - every logit is widened exactly to fp32 (bf16: bits << 16; fp16: IEEE, subnormals
//    included, NaN payload shifted up unquieted) and ordered by order_key: NaN > +inf >
//    finite > -inf, -0 == +0, ties to the smaller id;
//  - k is clamped to 1..64; the top-k are the first min(k, vocab) keys in descending order,
//    topk_logits their exact fp32 bits. k > vocab: out.k = k, the tail is id -1, logit and
//    logprob quiet NaN, and flags::k_padded is set;
//  - sampled_rank = 1 + #{j : key(j) > key(sampled)} (vLLM counts >=, so ties differ). A
//    sampled id outside [0, vocab) sets flags::invalid_sampled_id, sampled_logit/logprob NaN,
//    rank 0, and is never read;
//  - lse = m + log(S), m the largest finite logit and S = sum_j exp(x_j - m), computed so:
//    each term in fp32 from the exact difference x_j - m, within 2 fp32 ulps of the true
//    exp (terms below e^-86, -inf ones included, are 0); widened to double and added into 16
//    double partial sums, id j into sum j mod 16, in increasing id order; the 16 folded
//    pairwise in a fixed order; m + log(S) in double, stored as float. Special rows: any
//    NaN -> lse NaN, flags::has_nan; else any +inf -> lse +inf, flags::has_posinf; else no
//    finite logit (all -inf, or vocab <= 0) -> lse -inf, flags::fully_masked. nan_count and
//    posinf_count are always counted;
//  - every logprob is (float)((double)x - lse_double), with the unrounded double lse. IEEE
//    subtraction then gives the special rows their rule: all NaN with a NaN; NaN for +inf
//    entries and -inf for the rest with lse +inf; all NaN when fully masked; -inf for a -inf
//    entry of an ordinary row. flags::sampled_nonfinite is set when sampled_logprob is not
//    finite (an invalid id included).
// Why fp32 terms are enough: a relative error of at most 2 fp32 ulps (<= 2^-22) in every
// term is at most that in S, so lse is off by at most ~2.4e-7 absolute, under one fp32 ulp
// of lse once |lse| >= 2 (an ulp is ~1e-6 at |lse| ~ 10); the double sums add nothing
// visible. Measured: terms within 1.06 ulp over [-86, 0]; the stored lse within 0.5 fp32 ulp
// of a long-double brute force on the property rows. The value is deterministic for a build
// and row; on x86-64 the AVX2 kernels (chosen at run time) and the portable SSE2 ones give
// the same bits. Backends match ids, logits, rank, counts and flags exactly; lse
// and logprobs within 1e-4 + 1e-5 |ref|. Cost: two passes over the row, no allocation once
// scratch has grown (fp16/bf16 rows keep their widened copy in scratch.widened for the
// second pass).
void reference_row(const void* row, LogitDType dtype, std::int32_t vocab,
                   std::int32_t sampled_id, int k, TokenSnapshot& out, RowScratch& scratch);

}  // namespace jsonlw::snapshot
