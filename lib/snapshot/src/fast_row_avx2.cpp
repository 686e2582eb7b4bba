// fast_row's AVX2 kernel: 8 logits per vector, the walk of fast_row_kernel.hpp (the same steps
// as fast_row_avx512.cpp, with the partial last vector copied out instead of mask-loaded).
// Called by fast_row (fast_row.cpp) only after cpu_row_path_supported(avx2). Target attributes,
// not -mavx2 on the file: fast_row_avx512.cpp says why.
#include "fast_row_kernel.hpp"

#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define JSONLW_FAST_ROW_AVX2 1
#include <immintrin.h>
#endif

namespace jsonlw::snapshot::detail {

#ifdef JSONLW_FAST_ROW_AVX2

#define JSONLW_AVX2 __attribute__((target("avx2,fma,f16c,popcnt")))

namespace {

constexpr int W = 8;
// As fast_row_avx512.cpp's: first_pass prefetches this many bytes ahead of its loads.
constexpr std::int64_t prefetch_ahead = 4096;

JSONLW_AVX2 inline void prefetch(const unsigned char* p) noexcept
{
    _mm_prefetch(reinterpret_cast<const char*>(p) + prefetch_ahead, _MM_HINT_T0);
}

template <LogitDType dt>
JSONLW_AVX2 inline __m256 load(const unsigned char* p, std::int64_t i) noexcept
{
    if constexpr (dt == LogitDType::f32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * i));
    } else {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
        if constexpr (dt == LogitDType::bf16)
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        else
            return _mm256_cvtph_ps(h);
    }
}

// The first c (< 8) logits from element i on, the other lanes -inf: copied out, so nothing past
// the row's end is read.
template <LogitDType dt>
JSONLW_AVX2 inline __m256 load_part(const unsigned char* p, std::int64_t i, int c) noexcept
{
    constexpr std::size_t size = dt == LogitDType::f32 ? 4 : 2;
    alignas(32) unsigned char buf[W * 4];
    for (int l = 0; l < W; ++l) {
        if constexpr (dt == LogitDType::f32) {
            const std::uint32_t v = 0xff800000u;
            std::memcpy(buf + 4 * l, &v, 4);
        } else {
            const std::uint16_t v = dt == LogitDType::bf16 ? 0xff80u : 0xfc00u;
            std::memcpy(buf + 2 * l, &v, 2);
        }
    }
    std::memcpy(buf, p + std::size_t(i) * size, std::size_t(c) * size);
    return load<dt>(buf, 0);
}

// Lanes below c all ones, as a float mask.
JSONLW_AVX2 inline __m256 first_lanes(int c) noexcept
{
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(c), iota));
}

// exp(max(x - m, -86)) lane by lane, as fast_row_avx512.cpp's, with 2^n put into the exponent
// bits by an integer add. n is converted with vcvtps2dq, which gives 0x80000000 for a NaN or
// infinite n; shifted by 23 that is 0, so a NaN lane (a NaN or +inf logit) stays NaN.
JSONLW_AVX2 inline __m256 exp_rel(__m256 x, __m256 m) noexcept
{
    const __m256 t = _mm256_max_ps(_mm256_set1_ps(fast_exp_floor), _mm256_sub_ps(x, m));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(exp_log2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(exp_ln2), t);
    __m256 q = _mm256_fmadd_ps(_mm256_set1_ps(exp_c5), r, _mm256_set1_ps(exp_c4));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(exp_c3));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(exp_c2));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f));
    const __m256i scale = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(q), scale));
}

JSONLW_AVX2 inline double sum_lanes(__m256 v) noexcept
{
    const __m256d d = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                                    _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
    return _mm_cvtsd_f64(h) + _mm_cvtsd_f64(_mm_unpackhi_pd(h, h));
}

JSONLW_AVX2 inline float max_lanes(__m256 v) noexcept
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

// Subtracts the all-ones lanes of the comparison (-1 each) from above: +1 per logit above.
template <RankMode mode>
JSONLW_AVX2 inline void count_above(__m256 x, __m256 sx, __m256 valid, std::int64_t idx0,
                                    std::int32_t s_at, __m256i& above) noexcept
{
    __m256 m;
    if constexpr (mode == RankMode::ge) {
        m = _mm256_cmp_ps(x, sx, _CMP_GE_OQ);
    } else if constexpr (mode == RankMode::gt) {
        m = _mm256_cmp_ps(x, sx, _CMP_GT_OQ);
    } else {
        const std::int64_t c = s_at - idx0;
        const __m256 below = first_lanes(c <= 0 ? 0 : c >= W ? W : int(c));
        m = _mm256_or_ps(_mm256_and_ps(below, _mm256_cmp_ps(x, sx, _CMP_GE_OQ)),
                         _mm256_andnot_ps(below, _mm256_cmp_ps(x, sx, _CMP_GT_OQ)));
    }
    above = _mm256_sub_epi32(above, _mm256_castps_si256(_mm256_and_ps(m, valid)));
}

struct BlockPass {
    float max;
    double sum;
};

using SubMax = __m256[fast_block / fast_sub];

// As fast_row_avx512.cpp's first_pass: four accumulators, each lane taking <= 32 terms per
// block; bf16 of a whole sub-block widened from 32-byte loads as even and odd elements.
template <LogitDType dt, RankMode mode>
JSONLW_AVX2 BlockPass first_pass(const FastRowArgs& a, std::int32_t base, std::int32_t n,
                                 float off, __m256i& above, SubMax& sub_max) noexcept
{
    const __m256 sx = _mm256_set1_ps(a.s_x), mo = _mm256_set1_ps(off);
    const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    const __m256 neg_inf = _mm256_set1_ps(LseState::neg_inf);
    __m256 vmax = neg_inf;
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    __m256i ab = above;
    for (std::int32_t j0 = 0, sb = 0; j0 < n; j0 += fast_sub, ++sb) {
        const std::int64_t i0 = std::int64_t(base) + j0;
        const std::int32_t c = n - j0 < fast_sub ? n - j0 : fast_sub;
        __m256 vm = neg_inf;
        if (mode != RankMode::mixed && c == fast_sub) {
            if constexpr (dt == LogitDType::bf16) {
                const __m256i hi = _mm256_set1_epi32(std::int32_t(0xffff0000u));
                for (int u = 0; u < fast_sub; u += 2 * W) {
                    if (u % (4 * W) == 0) prefetch(a.p + 2 * (i0 + u));
                    const __m256i v =
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.p + 2 * (i0 + u)));
                    const __m256 x0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
                    const __m256 x1 = _mm256_castsi256_ps(_mm256_and_si256(v, hi));
                    vm = _mm256_max_ps(x0, vm);
                    vm = _mm256_max_ps(x1, vm);
                    count_above<mode>(x0, sx, all, 0, 0, ab);
                    count_above<mode>(x1, sx, all, 0, 0, ab);
                    const int acc = (u / (2 * W)) % 2 * 2;
                    s[acc] = _mm256_add_ps(s[acc], exp_rel(x0, mo));
                    s[acc + 1] = _mm256_add_ps(s[acc + 1], exp_rel(x1, mo));
                }
            } else {
                constexpr std::size_t size = dt == LogitDType::f32 ? 4 : 2;
                for (int u = 0; u < fast_sub; u += 4 * W) {
                    prefetch(a.p + size * std::size_t(i0 + u));
                    if constexpr (size == 4) prefetch(a.p + size * std::size_t(i0 + u + 2 * W));
                    for (int v = 0; v < 4; ++v) {
                        const __m256 x = load<dt>(a.p, i0 + u + v * W);
                        vm = _mm256_max_ps(x, vm);
                        count_above<mode>(x, sx, all, 0, 0, ab);
                        s[v] = _mm256_add_ps(s[v], exp_rel(x, mo));
                    }
                }
            }
        } else {
            for (std::int32_t j = 0; j < c; j += W) {
                const int cnt = c - j >= W ? W : c - j;
                const __m256 x = cnt == W ? load<dt>(a.p, i0 + j) : load_part<dt>(a.p, i0 + j, cnt);
                const __m256 valid = first_lanes(cnt);
                vm = _mm256_max_ps(x, vm);
                count_above<mode>(x, sx, valid, i0 + j, a.s_at, ab);
                __m256& acc = s[(j / W) % 4];
                acc = _mm256_add_ps(acc, _mm256_and_ps(valid, exp_rel(x, mo)));
            }
        }
        sub_max[sb] = vm;
        vmax = _mm256_max_ps(vm, vmax);
    }
    above = ab;
    return {max_lanes(vmax),
            (sum_lanes(s[0]) + sum_lanes(s[1])) + (sum_lanes(s[2]) + sum_lanes(s[3]))};
}

template <LogitDType dt>
JSONLW_AVX2 double exp_sum(const unsigned char* p, std::int64_t base, std::int32_t n,
                           float off) noexcept
{
    const __m256 mo = _mm256_set1_ps(off);
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    std::int32_t j = 0;
    for (; j + 4 * W <= n; j += 4 * W)
        for (int u = 0; u < 4; ++u)
            s[u] = _mm256_add_ps(s[u], exp_rel(load<dt>(p, base + j + u * W), mo));
    for (; j < n; j += W) {
        const int c = n - j >= W ? W : n - j;
        const __m256 x = c == W ? load<dt>(p, base + j) : load_part<dt>(p, base + j, c);
        s[0] = _mm256_add_ps(s[0], _mm256_and_ps(first_lanes(c), exp_rel(x, mo)));
    }
    return (sum_lanes(s[0]) + sum_lanes(s[1])) + (sum_lanes(s[2]) + sum_lanes(s[3]));
}

// fast_row_avx512.cpp's cut, 4 keys at a time: AVX2 compares 64-bit lanes as signed, so every
// key has its top bit flipped first.
JSONLW_AVX2 void cut(TopCandidates& top) noexcept
{
    const int n = top.size(), k = top.k();
    const int nv = (n + 3) / 4;
    alignas(32) std::uint64_t buf[TopCandidates::capacity + 4];
    alignas(32) std::uint64_t kept[TopCandidates::capacity];
    const std::uint64_t* keys = top.keys();
    constexpr std::uint64_t flip = std::uint64_t{1} << 63;
    for (int i = 0; i < nv * 4; ++i) buf[i] = (i < n ? keys[i] : 0) ^ flip;
    int pos = 0;
    std::uint64_t kth = 0;
    for (int i = 0; i < n; ++i) {
        const __m256i b = _mm256_set1_epi64x(static_cast<long long>(buf[i]));
        int rank = 0;
        for (int v = 0; v < nv; ++v) {
            const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + 4 * v));
            rank += __builtin_popcount(
                unsigned(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(x, b)))));
        }
        kept[pos] = buf[i] ^ flip;
        pos += rank < k;
        kth = rank == k - 1 ? buf[i] ^ flip : kth;
    }
    std::memcpy(top.keys(), kept, std::size_t(k) * sizeof kept[0]);
    top.kept(kth);
}

// Offers the logits above the gate of every sub-block whose max beats it, in id order; from L1.
template <LogitDType dt>
JSONLW_AVX2 void offer_block(const unsigned char* p, std::int32_t base, std::int32_t n,
                             const SubMax& sub_max, TopCandidates& top) noexcept
{
    alignas(32) float xs[W];
    for (std::int32_t j0 = 0, sb = 0; j0 < n; j0 += fast_sub, ++sb) {
        if (_mm256_movemask_ps(_mm256_cmp_ps(sub_max[sb], _mm256_set1_ps(top.gate()),
                                             _CMP_GT_OQ)) == 0)
            continue;
        const std::int32_t c = n - j0 < fast_sub ? n - j0 : fast_sub;
        for (std::int32_t j = j0; j < j0 + c; j += W) {
            const int cnt = j0 + c - j >= W ? W : j0 + c - j;
            const std::int64_t i = std::int64_t(base) + j;
            const __m256 x = cnt == W ? load<dt>(p, i) : load_part<dt>(p, i, cnt);
            unsigned m = unsigned(
                _mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_set1_ps(top.gate()), _CMP_GT_OQ)));
            if (m == 0) continue;
            _mm256_store_ps(xs, x);
            for (; m != 0; m &= m - 1) {
                const int l = __builtin_ctz(m);
                if (top.offer(base + j + l, xs[l])) cut(top);
            }
        }
    }
}

template <LogitDType dt>
JSONLW_AVX2 bool row(const FastRowArgs& a, FastRowState& st) noexcept
{
    __m256i above = _mm256_setzero_si256();
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
        if (b.max > st.top.gate()) offer_block<dt>(a.p, base, n, sub_max, st.top);
    }
    alignas(32) std::uint32_t lanes[W];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), above);
    std::uint32_t total = 0;
    for (const std::uint32_t l : lanes) total += l;
    st.above = total;
    return true;
}

template <LogitDType dt>
JSONLW_AVX2 double read_all(const unsigned char* p, std::int32_t vocab) noexcept
{
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    std::int32_t j = 0;
    for (; j + 4 * W <= vocab; j += 4 * W)
        for (int u = 0; u < 4; ++u) s[u] = _mm256_add_ps(s[u], load<dt>(p, j + u * W));
    for (; j < vocab; j += W) {
        const int c = vocab - j >= W ? W : vocab - j;
        const __m256 x = c == W ? load<dt>(p, j) : load_part<dt>(p, j, c);
        s[0] = _mm256_add_ps(s[0], _mm256_and_ps(first_lanes(c), x));
    }
    return (sum_lanes(s[0]) + sum_lanes(s[1])) + (sum_lanes(s[2]) + sum_lanes(s[3]));
}

template <LogitDType dt>
struct Walks {
    static constexpr DTypeKernel walks{row<dt>, read_all<dt>, exp_sum<dt>};
};

}  // namespace

const RowKernel& avx2_kernel() noexcept { return row_kernel<Walks>; }

#else  // not x86: never selected (cpu_row_path_supported says no); the portable kernel stands in

const RowKernel& avx2_kernel() noexcept { return scalar_kernel(); }

#endif

}  // namespace jsonlw::snapshot::detail
