// What fast_row's kernels (fast_row_scalar.cpp, fast_row_avx2.cpp, fast_row_avx512.cpp) share:
// the row's arguments, the per-block log-sum-exp bookkeeping, and the rank mode of a block.
// A kernel walks the row once in blocks of fast_block logits; for each block it reads the logits
// once from memory and computes, at its SIMD width: the block's max, the count of logits above
// the sampled one, and the sum of exp(x - m_ref) for the m_ref of the blocks before; the rare
// block that must be looked at again (its max beat the top-k gate, or m_ref) is re-read from L1.
// Called from fast_row.cpp only, on any thread, with one FastRowState per row.
#pragma once

#include "topk_candidates.hpp"

#include <jsonlw/snapshot/types.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

namespace jsonlw::snapshot::detail {

// Logits per block: small enough that a re-read comes from L1 (4 KiB of fp32), large enough that
// the per-block work (two horizontal reductions, the checks below) is a few percent.
inline constexpr std::int32_t fast_block = 1024;
// exp(x - m) is computed as exp(max(x - m, -86)): e^-86 (~4e-38) is still a normal fp32, so no
// term is ever subnormal (a subnormal result costs a microcode assist per vector on x86), and a
// -inf logit gives e^-86 instead of 0, which no sum >= 1 can see.
inline constexpr float fast_exp_floor = -86.0f;
// A block whose max is more than this above m_ref is summed again with its own max as m_ref:
// below it, every term is at most e^60 and a block's fp32 sum stays far from overflow.
inline constexpr float fast_stale_limit = 60.0f;

struct FastRowArgs {
    const unsigned char* p = nullptr;  // the row, element-aligned only
    std::int32_t vocab = 0;
    std::int32_t s_at = 0;  // the sampled id (0 when it is invalid)
    float s_x = 0;          // its logit; +inf when the id is invalid, so nothing counts as above
};

// Which comparison counts "above the sampled logit" for a block: before the sampled id a tie
// counts (it has the smaller id), from the sampled id on only a larger value does.
enum class RankMode : std::uint8_t { ge, gt, mixed };
inline RankMode rank_mode(std::int32_t base, std::int32_t n, std::int32_t s_at) noexcept
{
    if (base + n <= s_at) return RankMode::ge;
    if (base >= s_at) return RankMode::gt;
    return RankMode::mixed;
}

// The online log-sum-exp: sum = sum over the blocks so far of exp(x - m_ref), m_ref the largest
// block max seen, kept unless a block's max beats it by more than fast_stale_limit (a stale
// m_ref costs nothing: lse = m_ref + log(sum) whatever m_ref is, as long as no term overflows).
struct LseState {
    static constexpr float neg_inf = -std::numeric_limits<float>::infinity();

    float m_ref = neg_inf;  // -inf until a block with a finite logit
    double sum = 0;

    enum class Step : std::uint8_t { keep, redo, special };

    // The offset a block's terms are computed against: m_ref, or any finite value while m_ref
    // is -inf (those terms are thrown away, but a NaN must still come out as NaN).
    float exp_offset() const noexcept { return m_ref > neg_inf ? m_ref : FLT_MAX; }

    // After a block's first pass. block_max ignores NaN; block_sum is NaN when the block holds
    // a NaN (the kernels make sure of that), so a NaN or +inf row always ends as `special`.
    Step after_block(float block_max, double block_sum) noexcept
    {
        if (block_max == std::numeric_limits<float>::infinity()) return Step::special;
        if (block_max > m_ref + fast_stale_limit) {  // m_ref -inf: any finite block max
            sum *= std::exp(static_cast<double>(m_ref) - static_cast<double>(block_max));
            m_ref = block_max;
            return Step::redo;
        }
        if (!(block_sum <= DBL_MAX)) return Step::special;
        if (m_ref > neg_inf) sum += block_sum;  // else the block is all -inf: its terms are 0
        return Step::keep;
    }
    // After a `redo` block's sum against the new m_ref; false: the block holds a NaN.
    bool after_redo(double block_sum) noexcept
    {
        if (!(block_sum <= DBL_MAX)) return false;
        sum += block_sum;
        return true;
    }
    // Both steps of a block, as every kernel's row takes them: false when the row must go to
    // reference_row. resum(m_ref) sums the block again against the new m_ref (a redo only).
    template <class Resum>
    bool take_block(float block_max, double block_sum, Resum&& resum) noexcept
    {
        switch (after_block(block_max, block_sum)) {
        case Step::special: return false;
        case Step::redo: return after_redo(resum(m_ref));
        case Step::keep: break;
        }
        return true;
    }
};

struct FastRowState {
    explicit FastRowState(int k) noexcept : top(k) {}

    LseState lse;
    TopCandidates top;
    std::uint32_t above = 0;  // logits that come before the sampled one in the total order
};

// A kernel's walks for one dtype (each file's row, read_all and exp_sum templates).
struct DTypeKernel {
    // The row: false when it must go to reference_row (a NaN or a +inf in it).
    bool (*row)(const FastRowArgs& a, FastRowState& st) noexcept;
    // The bench passes of fast_row.hpp: every logit read once; one block's sum of exp(x - m).
    double (*read_all)(const unsigned char* p, std::int32_t vocab) noexcept;
    double (*exp_sum)(const unsigned char* p, std::int64_t base, std::int32_t n,
                      float m) noexcept;
};

// A SIMD path's kernel: its walks per dtype. fast_row.cpp picks the path, then the dtype, so
// the three files export a table each and no dispatch of their own.
struct RowKernel {
    DTypeKernel f32, f16, bf16;

    const DTypeKernel& of(LogitDType dtype) const noexcept
    {
        switch (dtype) {
        case LogitDType::f32: return f32;
        case LogitDType::f16: return f16;
        default: return bf16;
        }
    }
};

// A file's table, from its Walks<dt>::walks: the DTypeKernel of its templates at dtype dt.
template <template <LogitDType> class Walks>
inline constexpr RowKernel row_kernel{Walks<LogitDType::f32>::walks, Walks<LogitDType::f16>::walks,
                                      Walks<LogitDType::bf16>::walks};

const RowKernel& scalar_kernel() noexcept;
const RowKernel& avx2_kernel() noexcept;    // not x86: scalar_kernel()
const RowKernel& avx512_kernel() noexcept;  // not x86: scalar_kernel()

// exp's polynomial: e^r ~ 1 + r + r^2 (c2 + c3 r + c4 r^2 + c5 r^3) on |r| <= ln2 / 2, fitted
// here for the smallest relative error with 1 + r exact (so e^0 is exactly 1 and a row of equal
// logits sums exactly): at most 1.05e-7 in exact arithmetic, 1.64e-7 (2.7 * 2^-24) evaluated
// by fp32 FMA Horner over 400,001 points of the interval.
inline constexpr float exp_c5 = 8.312502876e-3f;
inline constexpr float exp_c4 = 4.189033434e-2f;
inline constexpr float exp_c3 = 1.666711569e-1f;
inline constexpr float exp_c2 = 4.999923110e-1f;
inline constexpr float exp_log2e = 1.44269504088896341f;
inline constexpr float exp_ln2 = 0.693147180559945309f;

// The offer scan's unit: a kernel keeps the max of every `fast_sub` logits of a block and looks
// again only at those whose max beats the top-k gate.
inline constexpr std::int32_t fast_sub = 128;
static_assert(fast_block % fast_sub == 0);

}  // namespace jsonlw::snapshot::detail
