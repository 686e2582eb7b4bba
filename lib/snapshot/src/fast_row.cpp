// fast_row: picks the kernel for the path, turns its per-row state into a TokenSnapshot exactly
// as reference_row does (reference.cpp: the same logprob formula, padding and flags), and hands
// the rows a kernel gives up on (NaN, +inf, fewer than min(k, vocab) logits above -inf) to
// reference_row. Also the path names, the CPU checks and JSONLW_SNAPSHOT_CPU_PATH.
#include <jsonlw/snapshot/fast_row.hpp>

#include "fast_row_kernel.hpp"
#include "sampled_fields.hpp"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

namespace jsonlw::snapshot {
namespace {

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
// libgcc's and compiler-rt's checks include the OS's (XCR0): AVX state saved on switches.
// clang 14's __builtin_cpu_supports knows no "f16c", so that bit comes from CPUID leaf 1.
bool has_avx2() noexcept
{
    static const bool has = [] {
        __builtin_cpu_init();
        unsigned a = 0, b = 0, c = 0, d = 0;
        const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
        return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("popcnt");
    }();
    return has;
}
bool has_avx512() noexcept
{
    static const bool has = [] {
        __builtin_cpu_init();
        return has_avx2() && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    }();
    return has;
}
#else
bool has_avx2() noexcept { return false; }
bool has_avx512() noexcept { return false; }
#endif

// The best supported path at or below `p`.
CpuRowPath supported_at_most(CpuRowPath p) noexcept
{
    if (p == CpuRowPath::avx512 && !has_avx512()) p = CpuRowPath::avx2;
    if (p == CpuRowPath::avx2 && !has_avx2()) p = CpuRowPath::scalar;
    return p;
}

// The kernel of a supported path other than reference.
const detail::RowKernel& kernel_of(CpuRowPath p) noexcept
{
    switch (p) {
    case CpuRowPath::avx512: return detail::avx512_kernel();
    case CpuRowPath::avx2: return detail::avx2_kernel();
    default: return detail::scalar_kernel();
    }
}

}  // namespace

const char* cpu_row_path_name(CpuRowPath path) noexcept
{
    switch (path) {
    case CpuRowPath::reference: return "reference";
    case CpuRowPath::scalar: return "scalar";
    case CpuRowPath::avx2: return "avx2";
    case CpuRowPath::avx512: return "avx512";
    }
    return "?";
}

bool cpu_row_path_supported(CpuRowPath path) noexcept
{
    return supported_at_most(path) == path;
}

CpuRowPath best_cpu_row_path() noexcept { return supported_at_most(CpuRowPath::avx512); }

CpuRowPath resolve_cpu_row_path(std::string_view value, std::string* warning)
{
    const auto warn = [&](std::string text) {
        if (warning) *warning = std::move(text);
    };
    if (value.empty() || value == "auto") return best_cpu_row_path();
    for (const CpuRowPath p :
         {CpuRowPath::reference, CpuRowPath::scalar, CpuRowPath::avx2, CpuRowPath::avx512}) {
        if (value != cpu_row_path_name(p)) continue;
        const CpuRowPath got = supported_at_most(p);
        if (got != p)
            warn(std::string("jsonlw snapshot: JSONLW_SNAPSHOT_CPU_PATH=") + std::string(value) +
                 ": this CPU cannot run it, using " + cpu_row_path_name(got));
        return got;
    }
    const CpuRowPath best = best_cpu_row_path();
    warn(std::string("jsonlw snapshot: JSONLW_SNAPSHOT_CPU_PATH=") + std::string(value) +
         " is not one of avx512, avx2, scalar, reference, auto; using " +
         cpu_row_path_name(best));
    return best;
}

CpuRowPath cpu_row_path_from_env(std::string* warning)
{
    const char* v = std::getenv("JSONLW_SNAPSHOT_CPU_PATH");
    return resolve_cpu_row_path(v ? std::string_view(v) : std::string_view(), warning);
}

bool FastRowTolerance::within(float fast, float ref) const noexcept
{
    if (!std::isfinite(fast) || !std::isfinite(ref))
        return std::isnan(fast) ? std::isnan(ref) : fast == ref;
    const double d = std::fabs(double(fast) - double(ref));
    return d <= abs + rel * std::fabs(double(ref));
}

bool fast_row(const void* row, LogitDType dtype, std::int32_t vocab, std::int32_t sampled_id,
              int k, TokenSnapshot& out, RowScratch& scratch, CpuRowPath path) noexcept
{
    path = supported_at_most(path);
    k = std::clamp(k, 1, SnapshotConfig::max_k);
    if (path == CpuRowPath::reference || vocab <= 0) {
        reference_row(row, dtype, vocab, sampled_id, k, out, scratch);
        return false;
    }
    const auto* p = static_cast<const unsigned char*>(row);
    const bool sampled_valid = sampled_id >= 0 && sampled_id < vocab;
    const float sampled_x = sampled_valid ? load_logit(row, dtype, sampled_id)
                                          : std::numeric_limits<float>::quiet_NaN();

    detail::FastRowArgs a;
    a.p = p;
    a.vocab = vocab;
    a.s_at = sampled_valid ? sampled_id : 0;
    a.s_x = sampled_valid ? sampled_x : std::numeric_limits<float>::infinity();
    const int kk = std::min(k, vocab);
    detail::FastRowState st(kk);
    // A finite logit among the first 16 as m_ref from the start: the first block is then summed
    // once, not twice (unless its max is more than fast_stale_limit above that logit).
    for (std::int32_t i = 0; i < std::min(vocab, 16); ++i) {
        const float x = load_logit(row, dtype, i);
        if (x > st.lse.m_ref && x < std::numeric_limits<float>::infinity()) st.lse.m_ref = x;
    }
    const bool plain = kernel_of(path).of(dtype).row(a, st);
    // No NaN and no +inf from here on; a top-k that would need -inf logits (a mostly masked
    // row) is filled in id order by the oracle rather than here.
    if (!plain || st.top.finish() < kk) {
        reference_row(row, dtype, vocab, sampled_id, k, out, scratch);
        return false;
    }
    // At least one logit is finite, so m_ref is: lse = m_ref + log(sum), sum >= 1.
    const double lse = static_cast<double>(st.lse.m_ref) + std::log(st.lse.sum);
    const auto logprob = [lse](float x) noexcept { return detail::logprob_of(x, lse); };
    constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
    std::uint16_t status = 0;
    status |= detail::fill_sampled(out, sampled_id, sampled_valid, sampled_x, st.above, lse);
    for (int j = 0; j < kk; ++j) {
        const std::int32_t id = st.top.id(j);
        const float x = load_logit(row, dtype, id);
        out.topk_ids[j] = id;
        out.topk_logits[j] = x;
        out.topk_logprobs[j] = logprob(x);
    }
    for (int j = kk; j < k; ++j) {
        out.topk_ids[j] = -1;
        out.topk_logits[j] = qnan;
        out.topk_logprobs[j] = qnan;
    }
    if (kk < k) status |= flags::k_padded;
    out.lse = static_cast<float>(lse);
    out.nan_count = 0;
    out.posinf_count = 0;
    out.status_flags = status;
    out.k = static_cast<std::uint8_t>(k);
    return true;
}

namespace detail {

double cpu_row_read_pass(const void* row, LogitDType dtype, std::int32_t vocab,
                         CpuRowPath path) noexcept
{
    const auto* p = static_cast<const unsigned char*>(row);
    return kernel_of(supported_at_most(path)).of(dtype).read_all(p, vocab);
}

double cpu_row_exp_pass(const void* row, LogitDType dtype, std::int32_t vocab, float m,
                        CpuRowPath path) noexcept
{
    const auto* p = static_cast<const unsigned char*>(row);
    const DTypeKernel& k = kernel_of(supported_at_most(path)).of(dtype);
    double s = 0;
    for (std::int32_t base = 0; base < vocab; base += fast_block)
        s += k.exp_sum(p, base, std::min(vocab - base, fast_block), m);
    return s;
}

}  // namespace detail
}  // namespace jsonlw::snapshot
