// fast_row's portable kernel (CpuRowPath::scalar): the walk of fast_row_kernel.hpp in plain
// C++ over 4-lane GNU vectors (SSE2 on x86-64, NEON on arm64, what the baseline allows): each
// chunk of 128 logits is widened into a buffer on the stack, then max, rank and exp sums are
// taken from there. Runs anywhere; the fallback where neither AVX2 nor AVX-512 is usable.
#include "fast_row_kernel.hpp"

#include "half_bits.hpp"

#include <cstring>

namespace jsonlw::snapshot::detail {
namespace {

constexpr int N = 4;
constexpr int chunk = 128;  // logits widened at a time; a lane of a sum takes <= 32 terms
static_assert(fast_block % chunk == 0);

using f4 = float __attribute__((vector_size(16)));
using i4 = std::int32_t __attribute__((vector_size(16)));
using u4 = std::uint32_t __attribute__((vector_size(16)));

template <class To, class From>
inline To vbits(const From& v) noexcept
{
    static_assert(sizeof(To) == sizeof(From));
    To t;
    std::memcpy(&t, &v, sizeof t);
    return t;
}

template <LogitDType dt>
inline float load1(const unsigned char* p, std::int64_t i) noexcept
{
    if constexpr (dt == LogitDType::f32) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        return f;
    } else {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        if constexpr (dt == LogitDType::bf16) return bits_f32(std::uint32_t{h} << 16);
        else return f16_to_f32_bits(h);
    }
}

// Logits [i, i + c) widened into buf, padded with -inf to a whole number of vectors.
template <LogitDType dt>
inline int widen(const unsigned char* p, std::int64_t i, int c, float* buf) noexcept
{
    if constexpr (dt == LogitDType::f32) {
        std::memcpy(buf, p + 4 * i, std::size_t(c) * 4);
    } else {
        for (int l = 0; l < c; ++l) buf[l] = load1<dt>(p, i + l);
    }
    const int padded = (c + N - 1) / N * N;
    for (int l = c; l < padded; ++l) buf[l] = LseState::neg_inf;
    return padded;
}

// exp(max(x - m, -86)), as the AVX2 kernel's with the rounding done by the 1.5 * 2^23 shifter
// and without FMA (a multiply and an add, each rounded). A NaN lane is not kept NaN here: the
// caller looks for NaN itself.
inline f4 exp_rel(f4 x, float m) noexcept
{
    const f4 floor = f4{} + fast_exp_floor;
    f4 t = x - m;
    t = t < floor ? floor : t;
    constexpr float shifter = 0x1.8p23f;
    const f4 kd = t * exp_log2e + shifter;
    const f4 n = kd - shifter;
    const f4 r = t - n * exp_ln2;
    f4 q = r * exp_c5 + exp_c4;
    q = q * r + exp_c3;
    q = q * r + exp_c2;
    q = q * r + 1.0f;
    q = q * r + 1.0f;
    return vbits<f4>(vbits<u4>(q) + (vbits<u4>(kd) << 23));
}

inline double sum_lanes(f4 v) noexcept
{
    return (double(v[0]) + double(v[1])) + (double(v[2]) + double(v[3]));
}

struct BlockPass {
    float max;
    double sum;
    bool nan;
};

template <LogitDType dt>
BlockPass first_pass(const FastRowArgs& a, std::int32_t base, std::int32_t n, float off,
                     i4& above) noexcept
{
    alignas(16) float buf[chunk];
    f4 vmax = f4{} + LseState::neg_inf;
    i4 bad{};
    double sum = 0;
    const i4 iota{0, 1, 2, 3};
    for (std::int32_t c0 = 0; c0 < n; c0 += chunk) {
        const int c = n - c0 < chunk ? n - c0 : chunk;
        const std::int64_t i0 = std::int64_t(base) + c0;
        const int padded = widen<dt>(a.p, i0, c, buf);
        f4 s{};
        for (int j = 0; j < padded; j += N) {
            f4 x;
            std::memcpy(&x, buf + j, sizeof x);
            vmax = x > vmax ? x : vmax;  // NaN ignored
            bad |= x != x;
            // Before the sampled id a tie counts too; a padded lane is never counted.
            const i4 id = iota + std::int32_t(i0 + j);
            const i4 above_lane = (id < a.s_at) ? (x >= a.s_x) : (x > a.s_x);
            above -= above_lane & (iota + j < c);
            const f4 e = exp_rel(x, off);
            s += vbits<f4>(vbits<i4>(e) & (iota + j < c));
        }
        sum += sum_lanes(s);
    }
    const bool nan = (bad[0] | bad[1] | bad[2] | bad[3]) != 0;
    float m = vmax[0];
    for (int l = 1; l < N; ++l) m = vmax[l] > m ? vmax[l] : m;
    return {m, sum, nan};
}

template <LogitDType dt>
double exp_sum(const unsigned char* p, std::int64_t base, std::int32_t n, float off) noexcept
{
    alignas(16) float buf[chunk];
    const i4 iota{0, 1, 2, 3};
    double sum = 0;
    for (std::int32_t c0 = 0; c0 < n; c0 += chunk) {
        const int c = n - c0 < chunk ? n - c0 : chunk;
        const int padded = widen<dt>(p, base + c0, c, buf);
        f4 s{};
        for (int j = 0; j < padded; j += N) {
            f4 x;
            std::memcpy(&x, buf + j, sizeof x);
            s += vbits<f4>(vbits<i4>(exp_rel(x, off)) & (iota + j < c));
        }
        sum += sum_lanes(s);
    }
    return sum;
}

template <LogitDType dt>
void offer_block(const unsigned char* p, std::int32_t base, std::int32_t n,
                 TopCandidates& top) noexcept
{
    for (std::int32_t j = 0; j < n; ++j) {
        const float x = load1<dt>(p, std::int64_t(base) + j);
        if (x > top.gate() && top.offer(base + j, x)) top.cut();
    }
}

template <LogitDType dt>
bool row(const FastRowArgs& a, FastRowState& st) noexcept
{
    i4 above{};
    for (std::int32_t base = 0; base < a.vocab; base += fast_block) {
        const std::int32_t n = a.vocab - base < fast_block ? a.vocab - base : fast_block;
        const BlockPass b = first_pass<dt>(a, base, n, st.lse.exp_offset(), above);
        if (b.nan) return false;
        const auto resum = [&](float m) noexcept { return exp_sum<dt>(a.p, base, n, m); };
        if (!st.lse.take_block(b.max, b.sum, resum)) return false;
        if (b.max > st.top.gate()) offer_block<dt>(a.p, base, n, st.top);
    }
    st.above = std::uint32_t(above[0]) + std::uint32_t(above[1]) + std::uint32_t(above[2]) +
               std::uint32_t(above[3]);
    return true;
}

template <LogitDType dt>
double read_all(const unsigned char* p, std::int32_t vocab) noexcept
{
    alignas(16) float buf[chunk];
    double sum = 0;
    for (std::int32_t c0 = 0; c0 < vocab; c0 += chunk) {
        const int c = vocab - c0 < chunk ? vocab - c0 : chunk;
        const int padded = widen<dt>(p, c0, c, buf);
        for (int l = c; l < padded; ++l) buf[l] = 0;
        f4 s{};
        for (int j = 0; j < padded; j += N) {
            f4 x;
            std::memcpy(&x, buf + j, sizeof x);
            s += x;
        }
        sum += sum_lanes(s);
    }
    return sum;
}

template <LogitDType dt>
struct Walks {
    static constexpr DTypeKernel walks{row<dt>, read_all<dt>, exp_sum<dt>};
};

}  // namespace

const RowKernel& scalar_kernel() noexcept { return row_kernel<Walks>; }

}  // namespace jsonlw::snapshot::detail
