// fast_row's AVX-512 kernel: 16 logits per vector, the walk of fast_row_kernel.hpp. Called by
// fast_row (fast_row.cpp) only after cpu_row_path_supported(avx512).
//
// Every function here carries the target attribute instead of the file being built with
// -mavx512f: an inline function of a header (std::, reference.hpp) used here is then still
// compiled for the baseline, so the linker cannot pick an AVX-512 copy of it for code that runs
// on a CPU without AVX-512 (with -m flags on the file it could, at -O0 certainly). It also keeps
// this file a plain source of snapshot_stage_sources, which the emulated-device library
// (tests/snapshot/emu/) compiles too.
#include "fast_row_kernel.hpp"

#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define JSONLW_FAST_ROW_AVX512 1
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*, a self-initialized
// variable that -Wuninitialized reports once per use (GCC 13 no longer does). The
// warnings point into the header, so silencing them around the include is enough.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

namespace jsonlw::snapshot::detail {

#ifdef JSONLW_FAST_ROW_AVX512

#define JSONLW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,popcnt")))

namespace {

constexpr int W = 16;
// How far ahead of the loads first_pass prefetches, in bytes. The hardware streamer alone keeps
// up with the read pass but not with this loop, which stops at every block's end: from L3 a
// 152,064 bf16 row took ~55 us without it, ~41 us with it (on the 2-core Xeon of
// docs/benchmarks-log.md; 1 KiB ahead: ~47 us).
constexpr std::int64_t prefetch_ahead = 4096;

JSONLW_AVX512 inline void prefetch(const unsigned char* p) noexcept
{
    _mm_prefetch(reinterpret_cast<const char*>(p) + prefetch_ahead, _MM_HINT_T0);
}

// 16 logits from element i on, widened exactly (vcvtph2ps is exact for every non-NaN fp16).
template <LogitDType dt>
JSONLW_AVX512 inline __m512 load(const unsigned char* p, std::int64_t i) noexcept
{
    if constexpr (dt == LogitDType::f32) {
        return _mm512_loadu_ps(p + 4 * i);
    } else {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i));
        if constexpr (dt == LogitDType::bf16)
            return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        else
            return _mm512_cvtph_ps(h);
    }
}

// The lanes of `valid` (the first n < 16) from element i on, the others -inf. Masked-off lanes
// are not read (AVX-512 suppresses their faults), so the row's end may be a page's end.
template <LogitDType dt>
JSONLW_AVX512 inline __m512 load_part(const unsigned char* p, std::int64_t i,
                                      __mmask16 valid) noexcept
{
    if constexpr (dt == LogitDType::f32) {
        return _mm512_mask_loadu_ps(_mm512_set1_ps(LseState::neg_inf), valid, p + 4 * i);
    } else {
        constexpr short neg_inf = dt == LogitDType::bf16 ? short(0xff80) : short(0xfc00);
        const __m256i h = _mm256_mask_loadu_epi16(_mm256_set1_epi16(neg_inf), valid, p + 2 * i);
        if constexpr (dt == LogitDType::bf16)
            return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        else
            return _mm512_cvtph_ps(h);
    }
}

// exp(max(x - m, -86)) lane by lane: n = round(t log2e), r = t - n ln2, e^r by the degree-5
// polynomial, times 2^n by vscalefps. A NaN lane stays NaN all the way (vmaxps returns its
// second operand when one is NaN; the rest propagates), and so does a +inf lane (r = inf - inf).
// n comes from the 1.5 * 2^23 shifter (|t log2e| <= 125), an FMA and a subtract: one uop fewer
// than vmulps + vrndscaleps (two uops) per vector. Rounding t log2e once instead of twice can
// move n by one where t log2e is within an ulp of a half-integer: |r| then exceeds ln2 / 2 by
// ~1e-7 at most, where the polynomial's error is the same (fast_row_kernel.hpp).
JSONLW_AVX512 inline __m512 exp_rel(__m512 x, __m512 m) noexcept
{
    const __m512 t = _mm512_max_ps(_mm512_set1_ps(fast_exp_floor), _mm512_sub_ps(x, m));
    const __m512 shifter = _mm512_set1_ps(12582912.0f);
    const __m512 n =
        _mm512_sub_ps(_mm512_fmadd_ps(t, _mm512_set1_ps(exp_log2e), shifter), shifter);
    const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(exp_ln2), t);
    __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(exp_c5), r, _mm512_set1_ps(exp_c4));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(exp_c3));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(exp_c2));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(q, n);
}

// The 16 fp32 lanes widened to double and added (the block's per-lane sums hold <= 32 terms).
JSONLW_AVX512 inline double sum_lanes(__m512 v) noexcept
{
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(
        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

// Lanes whose id (idx0 + lane) is below s.
JSONLW_AVX512 inline __mmask16 lanes_below(std::int64_t idx0, std::int32_t s) noexcept
{
    const std::int64_t c = s - idx0;
    return c <= 0 ? __mmask16(0) : c >= W ? __mmask16(0xffff) : __mmask16((1u << c) - 1u);
}

// Adds 1 to the lanes of `above` whose logit comes before the sampled one.
template <RankMode mode>
JSONLW_AVX512 inline void count_above(__m512 x, __m512 sx, __mmask16 valid, std::int64_t idx0,
                                      std::int32_t s_at, __m512i& above) noexcept
{
    __mmask16 m;
    if constexpr (mode == RankMode::ge) {
        m = _mm512_mask_cmp_ps_mask(valid, x, sx, _CMP_GE_OQ);
    } else if constexpr (mode == RankMode::gt) {
        m = _mm512_mask_cmp_ps_mask(valid, x, sx, _CMP_GT_OQ);
    } else {
        const __mmask16 below = lanes_below(idx0, s_at);
        m = (_mm512_mask_cmp_ps_mask(valid, x, sx, _CMP_GE_OQ) & below) |
            (_mm512_mask_cmp_ps_mask(valid, x, sx, _CMP_GT_OQ) & __mmask16(~below));
    }
    above = _mm512_mask_sub_epi32(above, m, above, _mm512_set1_epi32(-1));
}

struct BlockPass {
    float max;
    double sum;
};

// The max of each fast_sub logits of a block, for the offer scan.
using SubMax = __m512[fast_block / fast_sub];

// One in-order vector of a block (the sampled id's block, a partial sub-block): `valid` lanes.
template <LogitDType dt, RankMode mode>
JSONLW_AVX512 inline void in_order(const FastRowArgs& a, std::int64_t i, __mmask16 valid,
                                   __m512 sx, __m512 mo, __m512& vm, __m512& s,
                                   __m512i& ab) noexcept
{
    const __m512 x = load_part<dt>(a.p, i, valid);
    vm = _mm512_max_ps(x, vm);
    count_above<mode>(x, sx, valid, i, a.s_at, ab);
    s = _mm512_mask_add_ps(s, valid, s, exp_rel(x, mo));
}

// Two whole vectors of a sub-block outside the sampled id's block, one per accumulator.
template <RankMode mode>
JSONLW_AVX512 inline void whole_pair(__m512 x0, __m512 x1, __m512 sx, __m512 mo, __m512& vm,
                                     __m512& s0, __m512& s1, __m512i& ab) noexcept
{
    vm = _mm512_max_ps(x0, vm);
    vm = _mm512_max_ps(x1, vm);
    count_above<mode>(x0, sx, 0xffff, 0, 0, ab);
    count_above<mode>(x1, sx, 0xffff, 0, 0, ab);
    s0 = _mm512_add_ps(s0, exp_rel(x0, mo));
    s1 = _mm512_add_ps(s1, exp_rel(x1, mo));
}

// A block's one read: its max and its sub-blocks' (NaN ignored: vmaxps keeps its second
// operand), the rank count, and the sum of exp(x - off). Two accumulators, each lane of each
// taking <= 32 terms per block. A whole sub-block outside the sampled id's block goes without
// lane masks; bf16 there is widened from one 64-byte load as even and odd elements (a shift and
// an and), which changes which lane sums a logit but nothing that depends on its id.
template <LogitDType dt, RankMode mode>
JSONLW_AVX512 BlockPass first_pass(const FastRowArgs& a, std::int32_t base, std::int32_t n,
                                   float off, __m512i& above, SubMax& sub_max) noexcept
{
    const __m512 sx = _mm512_set1_ps(a.s_x), mo = _mm512_set1_ps(off);
    const __m512 neg_inf = _mm512_set1_ps(LseState::neg_inf);
    __m512 vmax = neg_inf;
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    __m512i ab = above;
    for (std::int32_t j0 = 0, sb = 0; j0 < n; j0 += fast_sub, ++sb) {
        const std::int64_t i0 = std::int64_t(base) + j0;
        const std::int32_t c = n - j0 < fast_sub ? n - j0 : fast_sub;
        __m512 vm = neg_inf;
        if (mode != RankMode::mixed && c == fast_sub) {
            if constexpr (dt == LogitDType::bf16) {
                const __m512i hi = _mm512_set1_epi32(std::int32_t(0xffff0000u));
                for (int u = 0; u < fast_sub; u += 2 * W) {
                    prefetch(a.p + 2 * (i0 + u));
                    const __m512i v = _mm512_loadu_si512(a.p + 2 * (i0 + u));
                    const __m512 x0 = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
                    const __m512 x1 = _mm512_castsi512_ps(_mm512_and_si512(v, hi));
                    whole_pair<mode>(x0, x1, sx, mo, vm, s0, s1, ab);
                }
            } else {
                constexpr std::size_t size = dt == LogitDType::f32 ? 4 : 2;
                for (int u = 0; u < fast_sub; u += 2 * W) {
                    prefetch(a.p + size * std::size_t(i0 + u));
                    if constexpr (size == 4) prefetch(a.p + size * std::size_t(i0 + u + W));
                    const __m512 x0 = load<dt>(a.p, i0 + u), x1 = load<dt>(a.p, i0 + u + W);
                    whole_pair<mode>(x0, x1, sx, mo, vm, s0, s1, ab);
                }
            }
        } else {
            for (std::int32_t j = 0; j < c; j += W) {
                const __mmask16 valid =
                    c - j >= W ? __mmask16(0xffff) : __mmask16((1u << (c - j)) - 1u);
                in_order<dt, mode>(a, i0 + j, valid, sx, mo, vm, (j / W) % 2 ? s1 : s0, ab);
            }
        }
        sub_max[sb] = vm;
        vmax = _mm512_max_ps(vm, vmax);
    }
    above = ab;
    return {_mm512_reduce_max_ps(vmax), sum_lanes(s0) + sum_lanes(s1)};
}

// The block's sum again, against a new offset (the block raised m_ref); from L1.
template <LogitDType dt>
JSONLW_AVX512 double exp_sum(const unsigned char* p, std::int64_t base, std::int32_t n,
                             float off) noexcept
{
    const __m512 mo = _mm512_set1_ps(off);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    std::int32_t j = 0;
    for (; j + 2 * W <= n; j += 2 * W) {
        s0 = _mm512_add_ps(s0, exp_rel(load<dt>(p, base + j), mo));
        s1 = _mm512_add_ps(s1, exp_rel(load<dt>(p, base + j + W), mo));
    }
    for (; j < n; j += W) {
        const __mmask16 valid = n - j >= W ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1u);
        s0 = _mm512_mask_add_ps(s0, valid, s0, exp_rel(load_part<dt>(p, base + j, valid), mo));
    }
    return sum_lanes(s0) + sum_lanes(s1);
}

// TopCandidates::cut without nth_element: every key's rank is counted against all the others
// (they are distinct), 8 at a time, and the k of rank < k are kept in a branch-free pass. On
// the rows of a bench sweep, nth_element over ~40 keys mispredicted its way to ~350 ns a cut,
// about 10 cuts a row (~20 % of a 32,000 row); this is ~100 ns and does not depend on the data.
JSONLW_AVX512 void cut(TopCandidates& top) noexcept
{
    const int n = top.size(), k = top.k();
    const int nv = (n + 7) / 8;
    alignas(64) std::uint64_t buf[TopCandidates::capacity + TopCandidates::slack + 8];
    alignas(64) std::uint64_t kept[TopCandidates::capacity];
    const std::uint64_t* keys = top.keys();
    for (int i = 0; i < nv * 8; ++i) buf[i] = i < n ? keys[i] : 0;  // 0: below every key
    int pos = 0;
    std::uint64_t kth = 0;
    for (int i = 0; i < n; ++i) {
        const __m512i b = _mm512_set1_epi64(static_cast<long long>(buf[i]));
        int rank = 0;
        for (int v = 0; v < nv; ++v)
            rank += __builtin_popcount(
                unsigned(_mm512_cmpgt_epu64_mask(_mm512_load_si512(buf + 8 * v), b)));
        kept[pos] = buf[i];
        pos += rank < k;
        kth = rank == k - 1 ? buf[i] : kth;
    }
    std::memcpy(top.keys(), kept, std::size_t(k) * sizeof kept[0]);
    top.kept(kth);
}

// The order_keys (reference.hpp) of the lanes of `m`, ids id0 + lane, written in lane order to
// the first popcount(m) entries of out (16 written). x + 0 turns -0 into +0, as ordered_bits
// does; no lane is NaN (they beat the gate).
JSONLW_AVX512 inline int keys_of(__m512 x, std::int32_t id0, __mmask16 m,
                                 std::uint64_t* out) noexcept
{
    const __m512i u = _mm512_castps_si512(_mm512_add_ps(x, _mm512_setzero_ps()));
    const __m512i flip =
        _mm512_or_si512(_mm512_srai_epi32(u, 31), _mm512_set1_epi32(std::int32_t(0x80000000u)));
    const __m512i hi = _mm512_maskz_compress_epi32(m, _mm512_xor_si512(u, flip));
    const __m512i lo = _mm512_maskz_compress_epi32(
        m, _mm512_sub_epi32(_mm512_set1_epi32(std::int32_t(0xffffffffu - std::uint32_t(id0))),
                            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                                              15)));
    const __m512i i0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i i1 =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    _mm512_storeu_si512(out, _mm512_permutex2var_epi32(lo, i0, hi));
    _mm512_storeu_si512(out + 8, _mm512_permutex2var_epi32(lo, i1, hi));
    return __builtin_popcount(unsigned(m));
}

// Offers the logits above the gate of every sub-block whose max beats it, in id order; from L1.
// A vector's logits above the gate go to the buffer at once (TopCandidates::append): the
// one-at-a-time offer of a branch per logit cost ~40 % of a 32,000 fp32 row (perf, on the
// machine of docs/benchmarks-log.md), most of it mispredicted branches.
template <LogitDType dt>
JSONLW_AVX512 void offer_block(const unsigned char* p, std::int32_t base, std::int32_t n,
                               const SubMax& sub_max, TopCandidates& top) noexcept
{
    __m512 gate = _mm512_set1_ps(top.gate());
    for (std::int32_t j0 = 0, sb = 0; j0 < n; j0 += fast_sub, ++sb) {
        if (_mm512_cmp_ps_mask(sub_max[sb], gate, _CMP_GT_OQ) == 0) continue;
        const std::int32_t c = n - j0 < fast_sub ? n - j0 : fast_sub;
        for (std::int32_t j = j0; j < j0 + c; j += W) {
            const std::int32_t left = j0 + c - j;
            const __mmask16 valid = left >= W ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
            const __m512 x = load_part<dt>(p, std::int64_t(base) + j, valid);
            const __mmask16 m = _mm512_cmp_ps_mask(x, gate, _CMP_GT_OQ);
            if (top.append(keys_of(x, base + j, m, top.append_at()))) {
                cut(top);
                gate = _mm512_set1_ps(top.gate());
            }
        }
    }
}

// A lower bound of the row's k-th largest logit from a full block's sub-block maxima, taken
// before the block's offers: each lane of a sub_max vector is the max of its own logits, so the
// k-th largest of M >= k such lane maxima (of disjoint logits) is reached by k distinct logits,
// and the row's k-th largest is at least it. The gate goes just below it (nextafter), so a logit
// equal to it is still offered and ties resolve by id as before. The lane maxima are merged to
// 32 (k <= 32) or 64 (k <= 64 = SnapshotConfig::max_k) values: the fewer, the cheaper the rank
// count, the looser the bound (k = 20 of 32 maxima of 32 logits: ~30 logits of the block's
// 1024 above it). Without a seed the gate is -inf for the whole first block, which then offers
// ~100 logits and cuts the buffer several times (docs/benchmarks-log.md, the CPU snapshot
// backend).
// NaN lanes cannot be here (vmaxps dropped them); -inf lanes only lower the bound.
JSONLW_AVX512 float first_block_gate(const SubMax& sub_max, int k) noexcept
{
    alignas(64) float v[64];
    int nv;
    if (k <= 32) {
        nv = 2;
        _mm512_store_ps(v, _mm512_max_ps(_mm512_max_ps(sub_max[0], sub_max[1]),
                                         _mm512_max_ps(sub_max[2], sub_max[3])));
        _mm512_store_ps(v + 16, _mm512_max_ps(_mm512_max_ps(sub_max[4], sub_max[5]),
                                              _mm512_max_ps(sub_max[6], sub_max[7])));
    } else {
        nv = 4;
        for (int g = 0; g < 4; ++g)
            _mm512_store_ps(v + 16 * g, _mm512_max_ps(sub_max[2 * g], sub_max[2 * g + 1]));
    }
    // The k-th largest: the largest value that at least k of the values (itself included) reach.
    float best = LseState::neg_inf;
    for (int i = 0; i < nv * W; ++i) {
        const __m512 b = _mm512_set1_ps(v[i]);
        int reach = 0;
        for (int u = 0; u < nv; ++u)
            reach += __builtin_popcount(
                unsigned(_mm512_cmp_ps_mask(_mm512_load_ps(v + 16 * u), b, _CMP_GE_OQ)));
        best = reach >= k && v[i] > best ? v[i] : best;
    }
    static_assert(fast_block / fast_sub == 8 && SnapshotConfig::max_k <= 64);
    return best > LseState::neg_inf ? std::nextafter(best, LseState::neg_inf) : best;
}

template <LogitDType dt>
JSONLW_AVX512 bool row(const FastRowArgs& a, FastRowState& st) noexcept
{
    __m512i above = _mm512_setzero_si512();
    SubMax sub_max;
    for (std::int32_t base = 0; base < a.vocab; base += fast_block) {
        const std::int32_t n = a.vocab - base < fast_block ? a.vocab - base : fast_block;
        const float off = st.lse.exp_offset();
        BlockPass b;
        switch (rank_mode(base, n, a.s_at)) {
        case RankMode::ge: b = first_pass<dt, RankMode::ge>(a, base, n, off, above, sub_max); break;
        case RankMode::gt: b = first_pass<dt, RankMode::gt>(a, base, n, off, above, sub_max); break;
        default: b = first_pass<dt, RankMode::mixed>(a, base, n, off, above, sub_max); break;
        }
        const auto resum = [&](float m) noexcept { return exp_sum<dt>(a.p, base, n, m); };
        if (!st.lse.take_block(b.max, b.sum, resum)) return false;
        if (base == 0 && n == fast_block) st.top.seed_gate(first_block_gate(sub_max, st.top.k()));
        if (b.max > st.top.gate()) offer_block<dt>(a.p, base, n, sub_max, st.top);
    }
    st.above = static_cast<std::uint32_t>(_mm512_reduce_add_epi32(above));
    return true;
}

template <LogitDType dt>
JSONLW_AVX512 double read_all(const unsigned char* p, std::int32_t vocab) noexcept
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    std::int32_t j = 0;
    for (; j + 2 * W <= vocab; j += 2 * W) {
        s0 = _mm512_add_ps(s0, load<dt>(p, j));
        s1 = _mm512_add_ps(s1, load<dt>(p, j + W));
    }
    for (; j < vocab; j += W) {
        const __mmask16 valid =
            vocab - j >= W ? __mmask16(0xffff) : __mmask16((1u << (vocab - j)) - 1u);
        s0 = _mm512_mask_add_ps(s0, valid, s0, load_part<dt>(p, j, valid));
    }
    return sum_lanes(s0) + sum_lanes(s1);
}

template <LogitDType dt>
struct Walks {
    static constexpr DTypeKernel walks{row<dt>, read_all<dt>, exp_sum<dt>};
};

}  // namespace

const RowKernel& avx512_kernel() noexcept { return row_kernel<Walks>; }

#else  // not x86: never selected (cpu_row_path_supported says no); the portable kernel stands in

const RowKernel& avx512_kernel() noexcept { return scalar_kernel(); }

#endif

}  // namespace jsonlw::snapshot::detail
