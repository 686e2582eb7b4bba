// The snapshot stage's kernels (see kernels.hpp for the shape of a step). Exactness rests on
// three things: keys are computed from the exactly widened fp32 logit and the id, the same
// integers as reference.hpp's order_key; the candidate set of each tile provably contains the
// tile's share of the row's top k; and every floating-point reduction has a fixed order (fixed
// tile -> CTA mapping, lane 0 of fixed xor trees, warps summed 0..7, tiles merged 0..T-1), so
// two launches give the same bits. No Asio, no Boost here.
#include "kernels.hpp"

#include "../src/half_bits.hpp"

#include <jsonlw/snapshot/reference.hpp>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

// The one launch syntax of this file. nvcc: the triple-chevron launch. The emulated device
// (tests/snapshot/emu, docs/emulated-device.md) defines it in its cuda_runtime.h
// to run the same kernels on the CPU; nothing else in this file differs between the two.
#ifndef JSONLW_LAUNCH
#define JSONLW_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
#endif
// Every __shared__ variable is declared through these two. nvcc: the plain declaration, the
// same PTX. The emulated device defines them in jsonlw_emu/shared_memory.hpp to check each
// access for races and count bank conflicts (docs/emulated-device.md).
#ifndef JSONLW_SHARED
#define JSONLW_SHARED(type, name, count) __shared__ type name[count]
#define JSONLW_SHARED_SCALAR(type, name) __shared__ type name
#endif
// Every global access other than the __ldcs vector loads goes through these three. nvcc: the
// plain access, the same PTX. The emulated device defines them in jsonlw_emu/global_access.hpp
// to count the traffic (docs/emulated-device.md, "Speed-shaped facts it counts"). ld_global_if is a
// load only the lanes with `pred` make, in one warp-wide instruction with the others.
#ifndef JSONLW_GLOBAL_ACCESSORS
template <class T>
__device__ __forceinline__ T ld_global(const T* p)
{
    return *p;
}
template <class T>
__device__ __forceinline__ T ld_global_if(bool pred, const T* p)
{
    return pred ? *p : T{};
}
template <class T>
__device__ __forceinline__ void st_global(T* p, std::type_identity_t<T> v)
{
    *p = v;
}
#endif

namespace jsonlw::snapshot::cuda_detail {
namespace {

constexpr int kThreads = block_threads;
constexpr int kWarps = kThreads / 32;
constexpr int kCap = tile_candidates;
constexpr int kMergeCap = 2048;  // candidate keys a merge CTA holds in shared memory
constexpr int kSortCap = 256;    // keys it sorts: its radix select keeps at most these
constexpr int kTileCache = 1024;  // tiles whose key counts it keeps in shared memory
constexpr int kFlat = 64;         // keys per tile its flat pass reads
constexpr unsigned kFull = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

// --- the total order and the exact conversions: the host's own definitions -------------
using jsonlw::snapshot::key_id;
using jsonlw::snapshot::order_key;
using jsonlw::snapshot::ordered_bits;
// Inverse of ordered_bits for non-NaN values (-0 comes back as +0, the same value).
__device__ __forceinline__ float from_ordered(std::uint32_t o)
{
    return __uint_as_float((o & 0x80000000u) ? (o & 0x7fffffffu) : ~o);
}
constexpr std::uint32_t kOrderedNan = 0xffffffffu;
constexpr std::uint32_t kOrderedPosInf = 0xff800000u;

__device__ __forceinline__ float f16_bits_to_f32(std::uint32_t h)
{
    return jsonlw::snapshot::detail::f16_to_f32_bits(static_cast<std::uint16_t>(h));
}
__device__ __forceinline__ std::uint16_t f32_to_f16_rne(float x, bool& overflow)
{
    return jsonlw::snapshot::detail::f32_to_f16_rne_bits(x, overflow);
}

// Element i of a row, widened exactly (NaN payloads kept, as the CPU does).
__device__ __forceinline__ float load_exact(const char* row, LogitDType dt, std::int64_t i)
{
    if (dt == LogitDType::f32) return ld_global(reinterpret_cast<const float*>(row + i * 4));
    const std::uint32_t h = ld_global(reinterpret_cast<const std::uint16_t*>(row + i * 2));
    return dt == LogitDType::bf16 ? __uint_as_float(h << 16) : f16_bits_to_f32(h);
}

__device__ __forceinline__ float ex2_approx(float x)
{
#if defined(__CUDA_ARCH__)
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    // Host fallback for the emulated device: libm's exp2f (the PTX instruction is within 2 ulp
    // of it); .ftz flushes a subnormal result to +0, and so does this.
    const float y = exp2f(x);
    return y < 0x1p-126f ? 0.f : y;
#endif
}

// --- the element layout of a 16-byte vector ------------------------------------------------
template <LogitDType DT>
struct Vec;
template <>
struct Vec<LogitDType::f32> {
    static constexpr int n = 4;
    static constexpr int bytes = 4;
    static constexpr std::uint32_t neg_inf_word = 0xff800000u;
    __device__ static float get(std::uint32_t w, int /*half*/) { return __uint_as_float(w); }
};
template <>
struct Vec<LogitDType::bf16> {
    static constexpr int n = 8;
    static constexpr int bytes = 2;
    static constexpr std::uint32_t neg_inf_word = 0xff80ff80u;
    __device__ static float get(std::uint32_t w, int half)
    {
        return __uint_as_float(half ? (w & 0xffff0000u) : (w << 16));
    }
};
template <>
struct Vec<LogitDType::f16> {
    static constexpr int n = 8;
    static constexpr int bytes = 2;
    static constexpr std::uint32_t neg_inf_word = 0xfc00fc00u;
    // The hardware conversion is exact for every finite value and infinity; NaN payloads do
    // not matter here (all NaNs have one key), load_exact keeps them for the outputs.
    __device__ static float get(std::uint32_t w, int half)
    {
        return __half2float(__ushort_as_half(static_cast<unsigned short>(half ? (w >> 16) : w)));
    }
};

__device__ __forceinline__ std::uint32_t word(const uint4& v, int j)
{
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// Element e (0..n-1) of vector v.
template <LogitDType DT>
__device__ __forceinline__ float elem(const uint4& v, int e)
{
    using V = Vec<DT>;
    if constexpr (V::n == 4) return V::get(word(v, e), 0);
    else return V::get(word(v, e >> 1), e & 1);
}

// --- block reductions: fixed trees, every thread gets the same bits ------------------------
// red is a JSONLW_SHARED array of at least kWarps T; the function syncs before reuse.
template <class T, class Red, class Op>
__device__ __forceinline__ T block_reduce(T v, Red& red, Op op)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFull, v, o));
    if (lane == 0) red[warp] = v;
    __syncthreads();
    T r = red[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) r = op(r, red[w]);
    __syncthreads();
    return r;
}
struct MaxF {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumF {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct SumU {
    __device__ std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const { return a + b; }
};
struct MaxU64 {
    __device__ std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const
    {
        return a > b ? a : b;
    }
};

// Sorts one value per lane, descending across the warp (bitonic network).
__device__ __forceinline__ std::uint32_t warp_sort_desc(std::uint32_t v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int size = 2; size <= 32; size <<= 1) {
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            const std::uint32_t other = __shfl_xor_sync(kFull, v, stride);
            const bool lower = (lane & stride) == 0;
            const bool descending = (lane & size) == 0;  // size == 32: the whole warp
            const bool keep_max = lower == descending;
            v = keep_max ? max(v, other) : min(v, other);
        }
    }
    return v;
}

// Where a row's elements are: `head` elements before the first 16-byte boundary, then nv
// whole vectors, then `tail` elements. Tile t owns vectors [t*vpt, (t+1)*vpt); the head goes
// to tile 0 and the tail to the last tile, so each tile is one contiguous id range.
struct RowLayout {
    int head, nv, tail, tiles;
};
template <int VE, int ES>
__device__ __forceinline__ RowLayout row_layout(const char* row, int vocab, int vpt)
{
    RowLayout l;
    const auto addr = reinterpret_cast<std::uintptr_t>(row);
    l.head = static_cast<int>(((16u - (addr & 15u)) & 15u) / ES);
    if (l.head > vocab) l.head = vocab;
    l.nv = (vocab - l.head) / VE;
    l.tail = vocab - l.head - l.nv * VE;
    l.tiles = (l.nv + vpt - 1) / vpt;
    if (l.tiles < 1) l.tiles = 1;
    return l;
}

// ===========================================================================================
// partial: one tile of one row.
// ===========================================================================================
template <LogitDType DT, int NVEC>
__global__ void __launch_bounds__(kThreads, 2) partial_kernel(StepArgs a)
{
    using V = Vec<DT>;
    constexpr int VE = V::n;
    constexpr int ES = V::bytes;
    constexpr int VPT = kThreads * NVEC;  // vectors per tile

    JSONLW_SHARED(std::uint64_t, s_cand, kCap);
    JSONLW_SHARED(std::uint64_t, s_red64, kWarps);
    JSONLW_SHARED(float, s_redf, kWarps);
    JSONLW_SHARED(std::uint32_t, s_redu, kWarps);
    JSONLW_SHARED(int, s_wvalid, kWarps);
    JSONLW_SHARED(std::uint32_t, s_qth, kWarps);
    JSONLW_SHARED_SCALAR(int, s_count);

    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int row = blockIdx.y, tile = blockIdx.x;
    const int vocab = a.vocab;
    const char* rowp = static_cast<const char*>(a.logits) + std::int64_t(row) * a.row_stride * ES;
    const RowLayout L = row_layout<VE, ES>(rowp, vocab, VPT);
    TilePartial* out = a.partials + std::size_t(row) * gridDim.x + tile;
    std::uint64_t* cand_out = a.candidates + (std::size_t(row) * gridDim.x + tile) * kCap;

    if (tile >= L.tiles) {  // this row has fewer tiles than the grid (alignment): empty
        if (t == 0) st_global(out, TilePartial{-INFINITY, 0.f, 0u, 0u, 0u, 0u, 0ull});
        return;
    }
    if (t == 0) s_count = 0;

    const std::int32_t sid = ld_global(a.sampled + row);
    const bool sid_valid = sid >= 0 && sid < vocab;
    const float xs = sid_valid ? load_exact(rowp, DT, sid) : __uint_as_float(0x7fc00000u);

    // Load: every vector of this thread first (all loads in flight), then the odd element.
    const uint4* vp = reinterpret_cast<const uint4*>(rowp + std::int64_t(L.head) * ES);
    const int first_vec = tile * VPT + t;
    uint4 raw[NVEC];
    unsigned vmask = 0;
#pragma unroll
    for (int i = 0; i < NVEC; ++i) {
        const int gv = first_vec + i * kThreads;
        if (gv < L.nv) {
            raw[i] = __ldcs(vp + gv);
            vmask |= 1u << i;
        } else {
            raw[i] = make_uint4(V::neg_inf_word, V::neg_inf_word, V::neg_inf_word, V::neg_inf_word);
        }
    }
    bool ext_valid = false;
    int ext_id = 0;
    if (tile == 0 && t < L.head) {
        ext_valid = true;
        ext_id = t;
    } else if (tile == L.tiles - 1 && t >= VE && t < VE + L.tail) {
        ext_valid = true;
        ext_id = L.head + L.nv * VE + (t - VE);
    }
    const float ext_x = ext_valid ? load_exact(rowp, DT, ext_id) : -INFINITY;
    // The tile's ids are one range [lo, hi).
    const int lo = tile == 0 ? 0 : L.head + tile * VPT * VE;
    const int hi = tile == L.tiles - 1 ? vocab : L.head + (tile + 1) * VPT * VE;
    // id of element e of vector i
    auto id_of = [&](int i, int e) { return L.head + (first_vec + i * kThreads) * VE + e; };

    // Max, then the sum of exp against the tile max (padding is -inf: it adds 0).
    float cm = ext_x;
#pragma unroll
    for (int i = 0; i < NVEC; ++i)
#pragma unroll
        for (int e = 0; e < VE; ++e) cm = fmaxf(cm, elem<DT>(raw[i], e));
    const float M = block_reduce(cm, s_redf, MaxF{});
    // exp(x - M) as 2^((x - M) log2 e), the difference taken first: fmaf(x, log2e, -M log2e)
    // carries the rounding of M log2 e, about |M| 2^-24, which for logits of 10^4 and more is
    // an error of 10^-3 in every logprob (docs/emulated-device.md, "What the emulated suite found").
    const float MS = M == -INFINITY ? 0.f : M;
    float s = ext_valid ? ex2_approx((ext_x - MS) * kLog2e) : 0.f;
#pragma unroll
    for (int i = 0; i < NVEC; ++i)
#pragma unroll
        for (int e = 0; e < VE; ++e) s += ex2_approx((elem<DT>(raw[i], e) - MS) * kLog2e);
    const float S = block_reduce(s, s_redf, SumF{});
    // A NaN makes its term NaN; a +inf makes M +inf and its own term inf - inf = NaN. So S is
    // finite exactly when the tile has neither, and then fmaxf/compares are exact on it.
    const bool special = !isfinite(S);

    std::uint32_t above = 0, nan_count = 0, posinf_count = 0;
    std::uint64_t threshold = 0;
    int count = 0;
    bool exact = special;
    if (!special && M == -INFINITY) {
        // Every element -inf: the top k are the k smallest ids, no search needed.
        count = min(a.k, hi - lo);
        for (int j = t; j < count; j += kThreads) s_cand[j] = order_key(-INFINITY, lo + j);
        threshold = count == a.k ? order_key(-INFINITY, lo + a.k - 1) : 0ull;
        // Above a -inf sampled logit are the smaller ids; above anything else, none of these.
        if (t == 0 && sid_valid && xs == -INFINITY)
            above = static_cast<std::uint32_t>(max(0, min(sid, hi) - lo));
    } else if (!special) {
        // The rank: only threads holding something >= the sampled logit look element-wise.
        // Counted without a branch per element; ids are compared only in threads holding a
        // logit equal to the sampled one (the total order's tie-break; the sampled element
        // itself is one).
        if (sid_valid && cm >= xs) {
            bool tie = false;
#pragma unroll
            for (int i = 0; i < NVEC; ++i) {
                if (!(vmask & (1u << i))) continue;
#pragma unroll
                for (int e = 0; e < VE; ++e) {
                    const float x = elem<DT>(raw[i], e);
                    above += x > xs;
                    tie |= x == xs;
                }
            }
            if (ext_valid) {
                above += ext_x > xs;
                tie |= ext_x == xs;
            }
            if (tie) {
#pragma unroll
                for (int i = 0; i < NVEC; ++i) {
                    if (!(vmask & (1u << i))) continue;
#pragma unroll
                    for (int e = 0; e < VE; ++e) above += elem<DT>(raw[i], e) == xs && id_of(i, e) < sid;
                }
                if (ext_valid) above += ext_x == xs && ext_id < sid;
            }
        }

        // Threshold: q = ceil(k / warps with elements); in each such warp the q-th largest
        // thread maximum has q distinct elements at or above it, so the minimum of those over
        // the warps has at least k elements at or above it.
        const bool has_valid = vmask != 0 || ext_valid;
        const std::uint32_t tv = warp_sort_desc(has_valid ? ordered_bits(cm) : 0u);
        const unsigned ballot = __ballot_sync(kFull, has_valid);
        if (lane == 0) s_wvalid[warp] = __popc(ballot);
        __syncthreads();
        int nw = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) nw += s_wvalid[w] > 0;
        const int q = (a.k + nw - 1) / nw;  // nw >= 1: a tile below L.tiles has an element
        if (q <= 32 && lane == q - 1) s_qth[warp] = tv;
        __syncthreads();
        std::uint32_t t0 = 0;
        if (q <= 32) {
            t0 = 0xffffffffu;
#pragma unroll
            for (int w = 0; w < kWarps; ++w)
                if (s_wvalid[w] > 0) t0 = min(t0, s_qth[w]);
        }
        // t0 == 0 lists everything; else x >= from_ordered(t0) <=> key >= t0 << 32 (no NaN here).
        const float t0f = t0 ? from_ordered(t0) : -INFINITY;
        threshold = std::uint64_t{t0} << 32;
        if (cm >= t0f) {
#pragma unroll
            for (int i = 0; i < NVEC; ++i) {
                if (!(vmask & (1u << i))) continue;
#pragma unroll
                for (int e = 0; e < VE; ++e) {
                    const float x = elem<DT>(raw[i], e);
                    if (x >= t0f) {
                        const int pos = atomicAdd(&s_count, 1);
                        if (pos < kCap) s_cand[pos] = order_key(x, id_of(i, e));
                    }
                }
            }
            if (ext_valid && ext_x >= t0f) {
                const int pos = atomicAdd(&s_count, 1);
                if (pos < kCap) s_cand[pos] = order_key(ext_x, ext_id);
            }
        }
        __syncthreads();
        count = s_count;
        if (count > kCap) exact = true;  // block-uniform
    }

    if (exact) {
        // NaN/+inf in the tile, or too many candidates: everything by exact keys. Slow (k
        // block-wide argmax rounds) and rare: never taken by a finite row of distinct logits.
        const std::uint64_t skey = sid_valid ? order_key(xs, sid) : ~0ull;
        above = 0;
        auto visit = [&](auto&& f) {
#pragma unroll
            for (int i = 0; i < NVEC; ++i) {
                if (!(vmask & (1u << i))) continue;
#pragma unroll
                for (int e = 0; e < VE; ++e) f(elem<DT>(raw[i], e), id_of(i, e));
            }
            if (ext_valid) f(ext_x, ext_id);
        };
        visit([&](float x, int id) {
            const std::uint32_t o = ordered_bits(x);
            nan_count += o == kOrderedNan;
            posinf_count += o == kOrderedPosInf;
            above += order_key(x, id) > skey;
        });
        std::uint64_t bound = ~0ull;  // keys <= bound are still eligible
        count = 0;
        threshold = 0;
        for (int r = 0; r < a.k; ++r) {
            std::uint64_t best = 0;  // every real key is > 0
            visit([&](float x, int id) {
                const std::uint64_t key = order_key(x, id);
                if (key <= bound && key > best) best = key;
            });
            best = block_reduce(best, s_red64, MaxU64{});
            if (best == 0) break;  // fewer than k elements in the tile
            if (t == 0) s_cand[r] = best;
            count = r + 1;
            bound = best - 1;
            if (count == a.k) threshold = best;
        }
        nan_count = block_reduce(nan_count, s_redu, SumU{});
        posinf_count = block_reduce(posinf_count, s_redu, SumU{});
    }
    above = block_reduce(above, s_redu, SumU{});  // its syncs also publish s_cand

    if (t == 0) {
        st_global(out, TilePartial{M, S, above, nan_count, posinf_count, static_cast<std::uint32_t>(count),
                                   threshold});
    }
    for (int j = t; j < count; j += kThreads) st_global(cand_out + j, s_cand[j]);
}

// ===========================================================================================
// merge: one row.
// ===========================================================================================
__global__ void __launch_bounds__(kThreads) merge_kernel(StepArgs a, int tiles)
{
    JSONLW_SHARED(std::uint64_t, s_keys, kMergeCap);
    JSONLW_SHARED(std::uint64_t, s_sel, kSortCap);
    JSONLW_SHARED(std::uint64_t, s_top, SnapshotConfig::max_k);
    JSONLW_SHARED(int, s_tn, kTileCache);
    JSONLW_SHARED(int, s_hist, 256);
    JSONLW_SHARED_SCALAR(float, s_m);
    JSONLW_SHARED_SCALAR(float, s_s);
    JSONLW_SHARED_SCALAR(std::uint32_t, s_nan);
    JSONLW_SHARED_SCALAR(std::uint32_t, s_pinf);
    JSONLW_SHARED_SCALAR(std::uint32_t, s_above);
    JSONLW_SHARED_SCALAR(std::uint64_t, s_thr);
    JSONLW_SHARED_SCALAR(int, s_n);
    JSONLW_SHARED_SCALAR(int, s_sel_n);
    JSONLW_SHARED_SCALAR(std::uint64_t, s_bar);
    JSONLW_SHARED_SCALAR(int, s_bar_above);
    JSONLW_SHARED_SCALAR(int, s_bar_final);

    const int t = threadIdx.x;
    const int row = blockIdx.x;
    const int k = a.k;
    const TilePartial* P = a.partials + std::size_t(row) * tiles;
    const std::uint64_t* C = a.candidates + std::size_t(row) * tiles * kCap;
    const char* rowp = static_cast<const char*>(a.logits) +
                       std::int64_t(row) * a.row_stride * (a.dtype == LogitDType::f32 ? 4 : 2);

    // The tiles' totals, in tile order: warp 0 loads 32 tiles' partials at once and every lane
    // folds them one by one, as one thread reading them in order would (the same bits).
    if (t < 32) {
        float m = -INFINITY;
        std::uint32_t nan = 0, pinf = 0, above = 0;
        std::uint64_t thr = 0;
        for (int base = 0; base < tiles; base += 32) {
            const int p = base + t;
            TilePartial v{-INFINITY, 0.f, 0u, 0u, 0u, 0u, 0ull};
            if (p < tiles) v = ld_global(P + p);
            if (p < tiles && p < kTileCache) s_tn[p] = static_cast<int>(v.n);
            const int count = min(32, tiles - base);
            for (int q = 0; q < count; ++q) {
                m = fmaxf(m, __shfl_sync(kFull, v.m, q));
                nan += __shfl_sync(kFull, v.nan_count, q);
                pinf += __shfl_sync(kFull, v.posinf_count, q);
                above += __shfl_sync(kFull, v.above, q);
                const std::uint64_t pt = __shfl_sync(kFull, v.threshold, q);
                if (pt > thr) thr = pt;
            }
        }
        float s = 0.f;
        if (m != -INFINITY) {
            for (int base = 0; base < tiles; base += 32) {
                const int p = base + t;
                float term = 0.f;
                if (p < tiles)
                    if (const float ps = ld_global(&P[p].s); ps > 0.f) term = ps * expf(ld_global(&P[p].m) - m);
                const int count = min(32, tiles - base);
                for (int q = 0; q < count; ++q) s += __shfl_sync(kFull, term, q);
            }
        }
        if (t == 0) {
            s_m = m;
            s_s = s;
            s_nan = nan;
            s_pinf = pinf;
            s_above = above;
            s_thr = thr;
            s_n = 0;
            s_sel_n = 0;
        }
    }
    __syncthreads();
    const std::uint64_t thr = s_thr;

    // Every key >= thr of every tile: the row's top k are among them (each tile listed all of
    // its keys >= its own threshold, and thr is the largest threshold). each_candidate visits
    // every tile's list at once, the first kFlat keys of each, four loads in flight per
    // thread, then the rest of longer lists.
    const auto listed = [&](int p) { return p < kTileCache ? int(s_tn[p]) : static_cast<int>(ld_global(&P[p].n)); };
    const auto each_candidate = [&](auto&& f) {
        for (int base = t; base < tiles * kFlat; base += 4 * kThreads) {
            std::uint64_t key[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int idx = base + u * kThreads, p = idx / kFlat, j = idx % kFlat;
                key[u] = ld_global_if(idx < tiles * kFlat && j < listed(p), C + std::size_t(p) * kCap + j);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u)
                if (key[u] != 0) f(key[u]);  // every listed key is > 0
        }
        for (int p = 0; p < tiles; ++p) {
            const int pn = listed(p);
            for (int j0 = kFlat; j0 < pn; j0 += kThreads) {
                const std::uint64_t key = ld_global_if(j0 + t < pn, C + std::size_t(p) * kCap + j0 + t);
                if (key != 0) f(key);
            }
        }
    };
    // The keys >= thr go to s_keys while they fit; the select and the pick then read them
    // there, and go back to the tiles' lists only when they did not fit.
    each_candidate([&](std::uint64_t key) {
        if (key >= thr) {
            const int pos = atomicAdd(&s_n, 1);
            if (pos < kMergeCap) s_keys[pos] = key;
        }
    });
    __syncthreads();
    const int listed_n = s_n;
    const auto each_key = [&](auto&& f) {
        if (listed_n <= kMergeCap)
            for (int j = t; j < listed_n; j += kThreads) f(std::uint64_t(s_keys[j]));
        else
            each_candidate([&](std::uint64_t key) {
                if (key >= thr) f(key);
            });
    };

    // The bar: the largest key prefix that keeps at least k keys at or above it and at most
    // kSortCap, a byte at a time from the top (a radix select; keys are unique, so the last
    // byte leaves exactly k). Every key of the top k is at or above it.
    std::uint64_t prefix = 0, mask = 0;
    int above = 0;  // keys whose prefix is larger than the current one
    for (int shift = 56; shift >= 0; shift -= 8) {
        for (int j = t; j < 256; j += kThreads) s_hist[j] = 0;
        __syncthreads();
        each_key([&](std::uint64_t key) {
            if ((key & mask) == prefix) atomicAdd(&s_hist[(key >> shift) & 0xff], 1);
        });
        __syncthreads();
        if (t < 32) {  // lane l sums digits 255 - 8l down to 248 - 8l; a scan from the top
            int sum = 0;
            for (int d = 0; d < 8; ++d) sum += s_hist[255 - 8 * t - d];
            int incl = sum;
            for (int o = 1; o < 32; o <<= 1) {
                const int v = __shfl_up_sync(kFull, incl, o);
                if (t >= o) incl += v;
            }
            // Fewer than k keys in all (a vocabulary below k): the last digit, every key.
            const unsigned hit = __ballot_sync(kFull, above + incl >= k || t == 31);
            if (t == __ffs(hit) - 1) {
                int c = above + incl - sum, d = 255 - 8 * t;
                while (d > 248 - 8 * t && c + s_hist[d] < k) c += s_hist[d--];
                s_bar = prefix | (std::uint64_t(d) << shift);
                s_bar_above = c;
                s_bar_final = c + s_hist[d] <= kSortCap || c + s_hist[d] < k;
            }
        }
        __syncthreads();
        const bool final = s_bar_final;
        prefix = s_bar;
        above = s_bar_above;
        mask |= 0xffull << shift;
        if (final) break;
        __syncthreads();  // lane 0..31 read s_hist above until here
    }
    each_key([&](std::uint64_t key) {
        if (key >= prefix) s_sel[atomicAdd(&s_sel_n, 1)] = key;  // at most kSortCap, or fewer than k
    });
    __syncthreads();
    const int n = s_sel_n;
    const int got = min(n, k);  // n >= min(k, vocab) by the thresholds' promise

    // Sorted, largest first: a bitonic network over the next power of two (keys are unique
    // and every real key is > 0, the padding).
    int size = 1;
    while (size < n) size <<= 1;
    for (int j = n + t; j < size; j += kThreads) s_sel[j] = 0;
    __syncthreads();
    for (int len = 2; len <= size; len <<= 1) {
        for (int stride = len >> 1; stride > 0; stride >>= 1) {
            for (int i = t; i < size / 2; i += kThreads) {
                const int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
                const std::uint64_t x = s_sel[lo], y = s_sel[hi];
                if ((x < y) == ((lo & len) == 0)) {
                    s_sel[lo] = y;
                    s_sel[hi] = x;
                }
            }
            __syncthreads();
        }
    }
    for (int j = t; j < got; j += kThreads) s_top[j] = s_sel[j];
    __syncthreads();

    const std::uint32_t nan = s_nan, pinf = s_pinf;
    const float m = s_m;
    std::uint16_t status = 0;
    float lse;
    // A plain row's logprob is (x - m) - log(s), not x - lse: lse rounded to fp32 is off by up
    // to half an ulp of m (4e-3 for logits near 7e4), which x - lse would pass on to every
    // logprob; x - m is exact near the top (docs/emulated-device.md, "What the emulated suite found").
    float log_s = 0.f;
    bool plain = false;
    if (nan > 0) {
        lse = __uint_as_float(0x7fc00000u);
        status |= flags::has_nan;
    } else if (pinf > 0) {
        lse = INFINITY;
        status |= flags::has_posinf;
    } else if (m == -INFINITY) {
        lse = -INFINITY;
        status |= flags::fully_masked;
    } else {
        log_s = logf(s_s);
        lse = m + log_s;
        plain = true;
    }
    const auto logprob = [&](float x) { return plain ? (x - m) - log_s : x - lse; };

    TokenSnapshot* o = a.out + row;
    for (int j = t; j < k; j += kThreads) {
        if (j < got) {
            const std::int32_t id = key_id(s_top[j]);
            const float x = load_exact(rowp, a.dtype, id);
            st_global(&o->topk_ids[j], id);
            st_global(&o->topk_logits[j], x);
            st_global(&o->topk_logprobs[j], logprob(x));
        } else {
            st_global(&o->topk_ids[j], -1);
            st_global(&o->topk_logits[j], __uint_as_float(0x7fc00000u));
            st_global(&o->topk_logprobs[j], __uint_as_float(0x7fc00000u));
        }
    }
    if (t == 0) {
        const std::int32_t sid = ld_global(a.sampled + row);
        st_global(&o->sampled_id, sid);
        float slp = __uint_as_float(0x7fc00000u);
        if (sid >= 0 && sid < a.vocab) {
            const float x = load_exact(rowp, a.dtype, sid);
            slp = logprob(x);
            st_global(&o->sampled_logit, x);
            st_global(&o->sampled_logprob, slp);
            st_global(&o->sampled_rank, s_above + 1);
        } else {
            st_global(&o->sampled_logit, __uint_as_float(0x7fc00000u));
            st_global(&o->sampled_logprob, slp);
            st_global(&o->sampled_rank, 0u);
            status |= flags::invalid_sampled_id;
        }
        if (!isfinite(slp)) status |= flags::sampled_nonfinite;
        if (got < k) status |= flags::k_padded;
        st_global(&o->lse, lse);
        st_global(&o->nan_count, nan);
        st_global(&o->posinf_count, pinf);
        st_global(&o->status_flags, status);
        st_global(&o->k, static_cast<std::uint8_t>(k));
    }
}

// ===========================================================================================
// first-gen: one row per CTA.
// ===========================================================================================
__global__ void __launch_bounds__(kThreads) first_gen_kernel(FirstGenArgs a)
{
    JSONLW_SHARED(std::uint32_t, s_redu, kWarps);
    const int i = blockIdx.x;
    const int n = a.vocab;
    const char* row = static_cast<const char*>(a.logits) +
                      std::int64_t(a.rows[i]) * a.row_stride * (a.dtype == LogitDType::f32 ? 4 : 2);
    std::byte* out = a.out + a.offsets[i];
    // What convert_first_gen_row stores (first_gen.cpp): float32_exact widens; float16_compat
    // turns bf16 into fp16; everything else is the source bytes.
    const bool widen = a.mode == FirstGenMode::float32_exact && a.dtype != LogitDType::f32;
    const bool narrow = a.mode == FirstGenMode::float16_compat && a.dtype == LogitDType::bf16;
    std::uint32_t overflows = 0;
    if (widen) {
        auto* o = reinterpret_cast<float*>(out);
        for (int j = threadIdx.x; j < n; j += kThreads) st_global(o + j, load_exact(row, a.dtype, j));
    } else if (narrow) {
        auto* o = reinterpret_cast<std::uint16_t*>(out);
        const auto* in = reinterpret_cast<const std::uint16_t*>(row);
        for (int j = threadIdx.x; j < n; j += kThreads) {
            bool of;
            st_global(o + j, f32_to_f16_rne(__uint_as_float(std::uint32_t{ld_global(in + j)} << 16), of));
            overflows += of;
        }
    } else if (a.dtype == LogitDType::f32) {
        auto* o = reinterpret_cast<std::uint32_t*>(out);
        const auto* in = reinterpret_cast<const std::uint32_t*>(row);
        for (int j = threadIdx.x; j < n; j += kThreads) st_global(o + j, ld_global(in + j));
    } else {
        auto* o = reinterpret_cast<std::uint16_t*>(out);
        const auto* in = reinterpret_cast<const std::uint16_t*>(row);
        for (int j = threadIdx.x; j < n; j += kThreads) st_global(o + j, ld_global(in + j));
    }
    overflows = block_reduce(overflows, s_redu, SumU{});
    if (threadIdx.x == 0) st_global(a.overflow + i, overflows);
}

int vector_elems(LogitDType dt) { return dt == LogitDType::f32 ? 4 : 8; }

int tiles_for(LogitDType dt, std::int32_t vocab, int vectors)
{
    const std::int64_t nv = vocab / vector_elems(dt);  // at most this many whole vectors
    const std::int64_t vpt = std::int64_t(kThreads) * vectors;
    const std::int64_t t = (nv + vpt - 1) / vpt;
    return t < 1 ? 1 : static_cast<int>(t);
}

template <LogitDType DT>
cudaError_t launch_partial_dt(const StepArgs& a, const StepPlan& p, cudaStream_t st)
{
    const dim3 grid(static_cast<unsigned>(p.tiles), static_cast<unsigned>(a.rows));
    if (p.vectors == 2) JSONLW_LAUNCH(grid, kThreads, 0, st, partial_kernel<DT, 2>)(a);
    else JSONLW_LAUNCH(grid, kThreads, 0, st, partial_kernel<DT, 8>)(a);
    return cudaGetLastError();
}

}  // namespace

StepPlan plan_step(LogitDType dtype, std::int32_t vocab, std::int32_t rows, int sm_count) noexcept
{
    StepPlan p;
    p.vectors = 8;
    p.tiles = tiles_for(dtype, vocab, 8);
    // Too few CTAs to fill the GPU twice over: quarter the tiles.
    if (std::int64_t(rows) * p.tiles < 2 * std::int64_t(sm_count)) {
        p.vectors = 2;
        p.tiles = tiles_for(dtype, vocab, 2);
    }
    return p;
}

std::size_t max_tile_rows(std::int32_t max_rows, std::int32_t max_vocab, int sm_count) noexcept
{
    // Large plans: at most max_rows x tiles of the smallest tile (fp32). Small plans (2 vectors)
    // have rows x tiles8 < 2 * sm_count and tiles2 <= 4 * tiles8.
    const std::size_t large = std::size_t(max_rows) * std::size_t(tiles_for(LogitDType::f32, max_vocab, 8));
    const std::size_t small = 8 * std::size_t(sm_count > 0 ? sm_count : 1);
    return large > small ? large : small;
}

cudaError_t launch_partial(const StepArgs& a, const StepPlan& p, cudaStream_t st) noexcept
{
    if (a.rows <= 0) return cudaSuccess;
    switch (a.dtype) {
    case LogitDType::f32: return launch_partial_dt<LogitDType::f32>(a, p, st);
    case LogitDType::f16: return launch_partial_dt<LogitDType::f16>(a, p, st);
    case LogitDType::bf16: return launch_partial_dt<LogitDType::bf16>(a, p, st);
    }
    return cudaErrorInvalidValue;
}

cudaError_t launch_merge(const StepArgs& a, const StepPlan& p, cudaStream_t st) noexcept
{
    if (a.rows <= 0) return cudaSuccess;
    JSONLW_LAUNCH(static_cast<unsigned>(a.rows), kThreads, 0, st, merge_kernel)(a, p.tiles);
    return cudaGetLastError();
}

cudaError_t launch_step(const StepArgs& a, const StepPlan& p, cudaStream_t st) noexcept
{
    const cudaError_t e = launch_partial(a, p, st);
    return e != cudaSuccess ? e : launch_merge(a, p, st);
}

cudaError_t launch_first_gen(const FirstGenArgs& a, cudaStream_t st) noexcept
{
    if (a.count <= 0) return cudaSuccess;
    JSONLW_LAUNCH(static_cast<unsigned>(a.count), kThreads, 0, st, first_gen_kernel)(a);
    return cudaGetLastError();
}

}  // namespace jsonlw::snapshot::cuda_detail
