// reference_row: the semantics of reference.hpp in two passes over the row. Pass 1 widens each
// logit once and does everything that needs only keys (counts, the max, the sampled rank, the
// top-k through a k-element min-heap that only sees blocks whose max beats its current k-th
// best); pass 2 is the log-sum-exp, which needs the max first. No allocation: the heap is on
// the stack.
//
// Both passes are written once over N-lane GNU vectors and compiled twice: N = 4 (SSE2 on
// x86-64, NEON on arm64; the portable kernels) and, on x86, N = 8 in functions built for AVX2
// and chosen at run time. The two give bit-identical results: the integer work is exact, and
// the float work is the same sequence of IEEE operations per element in every lane. Neither
// kernel set is built with FMA enabled, so the compiler cannot contract a multiply and an add
// in one and not in the other; the double lane sums are indexed by id, not by vector lane.
//
// The parts, one file each: the order keys (reference_keys.hpp), the heap (reference_topk.hpp),
// the N-lane helpers (reference_lanes.hpp), pass 1 (reference_key_pass.hpp) and pass 2
// (reference_exp_pass.hpp). This file instantiates the two kernel sets, picks one per row, and
// turns the passes' results into a TokenSnapshot.
#include <jsonlw/snapshot/reference.hpp>

#include "reference_exp_pass.hpp"
#include "reference_key_pass.hpp"
#include "reference_keys.hpp"
#include "reference_topk.hpp"
#include "sampled_fields.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define JSONLW_SNAPSHOT_WIDE_KERNELS 1
#endif

namespace jsonlw::snapshot {
namespace {

using namespace detail::ref;

std::atomic<bool> portable_forced{false};

template <LogitDType dtype>
KeyPass key_pass_portable(const unsigned char* p, std::int32_t vocab, std::int32_t s_key,
                          std::int32_t s_at, TopK& top, float* widened) noexcept
{
    return key_pass<4, dtype>(p, vocab, s_key, s_at, top, widened);
}
void exp_pass_portable(const float* x, std::int32_t vocab, float m, double* sums) noexcept
{
    exp_pass<4>(x, vocab, m, sums);
}

#ifdef JSONLW_SNAPSHOT_WIDE_KERNELS
template <LogitDType dtype>
[[gnu::target("avx2")]] KeyPass key_pass_avx2(const unsigned char* p, std::int32_t vocab,
                                              std::int32_t s_key, std::int32_t s_at, TopK& top,
                                              float* widened) noexcept
{
    return key_pass<8, dtype>(p, vocab, s_key, s_at, top, widened);
}
[[gnu::target("avx2")]] void exp_pass_avx2(const float* x, std::int32_t vocab, float m,
                                           double* sums) noexcept
{
    exp_pass<8>(x, vocab, m, sums);
}

bool cpu_has_avx2() noexcept
{
    static const bool has = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return has;
}
#endif

bool use_wide_kernels() noexcept
{
#ifdef JSONLW_SNAPSHOT_WIDE_KERNELS
    return cpu_has_avx2() && !portable_forced.load(std::memory_order_relaxed);
#else
    return false;
#endif
}

template <LogitDType dtype>
void row_impl(const unsigned char* p, std::int32_t vocab, std::int32_t sampled_id, int k,
              TokenSnapshot& out, RowScratch& scratch)
{
    const bool wide = use_wide_kernels();
    // fp16/bf16 rows are widened once, in pass 1, into the scratch; pass 2 reads fp32 only.
    constexpr bool keep_widened = dtype != LogitDType::f32;
    if (keep_widened && scratch.widened.size() < static_cast<std::size_t>(vocab))
        scratch.widened.resize(static_cast<std::size_t>(vocab));
    float* const widened = keep_widened ? scratch.widened.data() : nullptr;
    constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
    const bool sampled_valid = sampled_id >= 0 && sampled_id < vocab;
    float sampled_x = qnan;
    std::int32_t s_key = key_nan, s_at = 0;
    if (sampled_valid) {
        sampled_x = load1<dtype>(p, sampled_id);
        s_key = value_key(sampled_x);
        s_at = sampled_id;
    }

    TopK top(std::min(k, vocab));
    KeyPass keys;
#ifdef JSONLW_SNAPSHOT_WIDE_KERNELS
    if (wide) keys = key_pass_avx2<dtype>(p, vocab, s_key, s_at, top, widened);
    else
#endif
        keys = key_pass_portable<dtype>(p, vocab, s_key, s_at, top, widened);

    // Pass 2: lse. Only the plain case sums; the special rows have a defined value instead of
    // whatever IEEE propagation through exp/log would give.
    double lse;
    std::uint16_t status = 0;
    if (keys.nans > 0) {
        lse = std::numeric_limits<double>::quiet_NaN();
        status |= flags::has_nan;
    } else if (keys.posinfs > 0) {
        lse = std::numeric_limits<double>::infinity();
        status |= flags::has_posinf;
    } else if (keys.max_key <= key_neginf) {  // every logit -inf (or an empty row): log(0)
        lse = -std::numeric_limits<double>::infinity();
        status |= flags::fully_masked;
    } else {
        const float m = key_value(keys.max_key);
        const float* const x =
            keep_widened ? widened : reinterpret_cast<const float*>(static_cast<const void*>(p));
        double sums[sum_lanes];
#ifdef JSONLW_SNAPSHOT_WIDE_KERNELS
        if (wide) exp_pass_avx2(x, vocab, m, sums);
        else
#endif
            exp_pass_portable(x, vocab, m, sums);
        for (int w = sum_lanes / 2; w > 0; w /= 2)  // a fixed pairwise fold of the 16 lanes
            for (int l = 0; l < w; ++l) sums[l] += sums[l + w];
        lse = static_cast<double>(m) + std::log(sums[0]);  // sum >= 1: the max contributes e^0
    }
    // From here IEEE subtraction gives rule 6 on its own: x - NaN is NaN; with lse = +inf the
    // +inf entries give NaN and the rest -inf; with lse = -inf every (-inf) entry gives NaN;
    // in a plain row a -inf entry gives -inf.
    const auto logprob = [lse](float x) noexcept { return detail::logprob_of(x, lse); };

    status |= detail::fill_sampled(out, sampled_id, sampled_valid, sampled_x, keys.above, lse);

    std::sort(top.heap, top.heap + top.size, std::greater<>{});
    for (int j = 0; j < top.size; ++j) {
        const std::int32_t id = key_id(top.heap[j]);
        const float x = load1<dtype>(p, id);  // the exact widened value, NaN payloads included
        out.topk_ids[j] = id;
        out.topk_logits[j] = x;
        out.topk_logprobs[j] = logprob(x);
    }
    for (int j = top.size; j < k; ++j) {
        out.topk_ids[j] = -1;
        out.topk_logits[j] = qnan;
        out.topk_logprobs[j] = qnan;
    }
    if (top.size < k) status |= flags::k_padded;

    out.lse = static_cast<float>(lse);
    out.nan_count = keys.nans;
    out.posinf_count = keys.posinfs;
    out.status_flags = status;
    out.k = static_cast<std::uint8_t>(k);
}

}  // namespace

namespace detail {

void force_portable_row_kernels(bool on) noexcept
{
    portable_forced.store(on, std::memory_order_relaxed);
}

bool wide_row_kernels_available() noexcept
{
#ifdef JSONLW_SNAPSHOT_WIDE_KERNELS
    return cpu_has_avx2();
#else
    return false;
#endif
}

}  // namespace detail

void reference_row(const void* row, LogitDType dtype, std::int32_t vocab, std::int32_t sampled_id,
                   int k, TokenSnapshot& out, RowScratch& scratch)
{
    k = std::clamp(k, 1, SnapshotConfig::max_k);
    vocab = std::max(vocab, 0);
    const auto* p = static_cast<const unsigned char*>(row);
    switch (dtype) {
    case LogitDType::f32: row_impl<LogitDType::f32>(p, vocab, sampled_id, k, out, scratch); break;
    case LogitDType::f16: row_impl<LogitDType::f16>(p, vocab, sampled_id, k, out, scratch); break;
    case LogitDType::bf16: row_impl<LogitDType::bf16>(p, vocab, sampled_id, k, out, scratch); break;
    }
}

}  // namespace jsonlw::snapshot
