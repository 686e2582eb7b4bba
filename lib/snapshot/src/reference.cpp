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
#include <jsonlw/snapshot/reference.hpp>

#include "half_bits.hpp"
#include "sampled_fields.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define JSONLW_SNAPSHOT_WIDE_KERNELS 1
#endif
// The N = 8 helpers return 32-byte vectors (and take them by reference); they are always
// inlined into the AVX2 functions, so the pre-AVX ABI the warning is about is never used.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace jsonlw::snapshot {
namespace {

std::atomic<bool> portable_forced{false};

// The internal order key of a value: -magnitude for negatives, +magnitude otherwise, any NaN
// INT32_MAX. Signed, so the vector loops compare and take maxima natively; -0 and +0 are both
// 0. Same order as ordered_bits (reference.hpp), not the same numbers.
constexpr std::int32_t key_nan = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t key_posinf = 0x7f800000;
constexpr std::int32_t key_neginf = -0x7f800000;

inline std::int32_t value_key(float x) noexcept
{
    const std::uint32_t u = detail::f32_bits(x);
    const std::uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) return key_nan;
    const auto m = static_cast<std::int32_t>(mag);
    return (u >> 31) ? -m : m;
}

// Inverse of value_key for non-NaN keys (-0 comes back as +0, which is the same value).
inline float key_value(std::int32_t k) noexcept
{
    return detail::bits_f32(k >= 0 ? static_cast<std::uint32_t>(k)
                                   : 0x80000000u | static_cast<std::uint32_t>(-k));
}

// Larger = earlier: the key in the high half, ties to the smaller id (as order_key does).
inline std::uint64_t heap_key(std::int32_t key, std::int32_t id) noexcept
{
    return (std::uint64_t{static_cast<std::uint32_t>(key) ^ 0x80000000u} << 32) |
           (0xffffffffu - static_cast<std::uint32_t>(id));
}

// A min-heap of at most k keys: heap[0] is the k-th best seen so far once the heap is full.
struct TopK {
    std::uint64_t heap[SnapshotConfig::max_k];
    int size = 0;
    int cap;
    std::uint64_t threshold = 0;  // every real key is > 0 (ids are < 2^32 - 1)

    explicit TopK(int k) noexcept : cap(k) {}

    // The value key a block's max must exceed for the block to be worth offering: a later
    // element with the threshold's value loses the tie to it. INT32_MIN while not full.
    std::int32_t gate() const noexcept
    {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(threshold >> 32) ^ 0x80000000u);
    }

    void offer(std::uint64_t key) noexcept
    {
        if (size < cap) {
            int i = size++;
            while (i > 0) {  // sift up
                const int parent = (i - 1) / 2;
                if (heap[parent] <= key) break;
                heap[i] = heap[parent];
                i = parent;
            }
            heap[i] = key;
            if (size == cap) threshold = heap[0];
            return;
        }
        int i = 0;  // replace the minimum, sift down
        for (;;) {
            int c = 2 * i + 1;
            if (c >= size) break;
            if (c + 1 < size && heap[c + 1] < heap[c]) ++c;
            if (heap[c] >= key) break;
            heap[i] = heap[c];
            i = c;
        }
        heap[i] = key;
        threshold = heap[0];
    }
};

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

// Rows are walked in blocks: the heap looks at a block only when the block's largest key beats
// the heap's current k-th best, which after the first few blocks of a typical row is almost
// never; NaN and +inf are counted only in blocks whose max says they hold one.
constexpr int block = 64;

struct KeyPass {
    std::uint32_t nans = 0, posinfs = 0, above = 0;
    std::int32_t max_key = std::numeric_limits<std::int32_t>::min();  // INT32_MIN: empty
};

template <LogitDType dtype>
void scalar_keys(const unsigned char* p, std::int32_t from, std::int32_t to, KeyPass& r) noexcept
{
    for (std::int32_t i = from; i < to; ++i) {
        const std::int32_t key = value_key(load1<dtype>(p, i));
        r.nans += key == key_nan;
        r.posinfs += key == key_posinf;
    }
}

template <LogitDType dtype>
void offer_range(const unsigned char* p, std::int32_t from, std::int32_t to, TopK& top) noexcept
{
    for (std::int32_t i = from; i < to; ++i) {
        const std::uint64_t key = heap_key(value_key(load1<dtype>(p, i)), i);
        if (key > top.threshold) top.offer(key);
    }
}

// Offers the block's elements whose value beats the heap's k-th best: a later element with
// an equal value loses the tie, so key > gate is exactly heap_key > threshold. The keys are
// recomputed, a chunk of N at a time, and only a chunk with such a lane is looked at lane by
// lane (in a typical block that is one chunk, if any).
template <int N, LogitDType dtype>
[[gnu::always_inline]] inline void offer_block(const unsigned char* p, std::int32_t base,
                                               TopK& top) noexcept
{
    using i32 = typename Lanes<N>::i32;
    for (int j = 0; j < block; j += N) {
        const i32 key = value_keys<N>(load_bits<N, dtype>(p, base + j));
        if (!any_lane<N>(key > top.gate())) continue;
        for (int l = 0; l < N; ++l)
            if (key[l] > top.gate()) top.offer(heap_key(key[l], base + j + l));
    }
}

// Pass 1. s_key/s_at: the sampled element's key and id (key_nan and 0 for an invalid id, so
// that nothing counts as above it). fp16/bf16 rows are also widened into `widened`.
template <int N, LogitDType dtype>
[[gnu::always_inline]] inline KeyPass key_pass(const unsigned char* p, std::int32_t vocab,
                                               std::int32_t s_key, std::int32_t s_at, TopK& top,
                                               float* widened) noexcept
{
    using i32 = typename Lanes<N>::i32;
    constexpr bool keep_widened = dtype != LogitDType::f32;
    constexpr std::int32_t lowest = std::numeric_limits<std::int32_t>::min();
    KeyPass r;
    i32 iota{};
    for (int l = 0; l < N; ++l) iota[l] = l;
    // key(i) > key(s): a larger value, or the same value at a smaller id. Before s that is
    // value key > s_key - 1, from s on value key > s_key (s_key - 1 cannot wrap: s_key >=
    // key_neginf).
    i32 above{}, row_max = i32{} + lowest;
    std::int32_t base = 0;
    for (; vocab - base >= block; base += block) {
        const bool mixed = base < s_at && s_at < base + block;
        const i32 block_thr = i32{} + (base + block <= s_at ? s_key - 1 : s_key);
        i32 block_max = i32{} + lowest;
        for (int j = 0; j < block; j += N) {
            const auto x = load_bits<N, dtype>(p, base + j);
            if constexpr (keep_widened) std::memcpy(widened + base + j, &x, sizeof x);
            const i32 key = value_keys<N>(x);
            block_max = vmax(block_max, key);
            const i32 thr = mixed ? s_key + ((iota + (base + j)) < s_at) : block_thr;
            above -= key > thr;  // a true lane is -1
        }
        const i32 gate = i32{} + std::min(top.gate(), key_posinf - 1);
        if (any_lane<N>(block_max > gate)) [[unlikely]] {
            if (any_lane<N>(block_max >= key_posinf)) scalar_keys<dtype>(p, base, base + block, r);
            if (any_lane<N>(block_max > top.gate())) offer_block<N, dtype>(p, base, top);
        }
        row_max = vmax(row_max, block_max);
    }
    for (int l = 0; l < N; ++l) {
        r.above += static_cast<std::uint32_t>(above[l]);
        r.max_key = std::max(r.max_key, row_max[l]);
    }
    for (std::int32_t i = base; i < vocab; ++i) {  // the tail, one element at a time
        const float x = load1<dtype>(p, i);
        if constexpr (keep_widened) widened[i] = x;
        const std::int32_t key = value_key(x);
        r.nans += key == key_nan;
        r.posinfs += key == key_posinf;
        r.max_key = std::max(r.max_key, key);
        r.above += key > s_key || (key == s_key && i < s_at);
    }
    offer_range<dtype>(p, base, vocab, top);
    return r;
}

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

constexpr int sum_lanes = 16;

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
