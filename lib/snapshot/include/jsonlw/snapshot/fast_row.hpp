// The CPU backend's row kernel: reference_row's results (reference.hpp) in one read of the row,
// with a SIMD path chosen at run time. Pure functions, safe from any number of threads with one
// RowScratch each; the CPU stage's row workers call fast_row, tests and jsonlw-bench call it
// with a pinned path (docs/snapshot.md, "CPU paths").
#pragma once

#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/types.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace jsonlw::snapshot {

// Which code computes a row. Every path gives the same ids, ranks, top-k logits, counts and
// flags as reference_row; lse and logprobs within fast_row_tolerance.
enum class CpuRowPath : std::uint8_t {
    reference,  // reference_row itself (two passes): the oracle, pinned for comparison
    scalar,     // portable C++, no ISA extension (4-lane GNU vectors: SSE2 on x86-64)
    avx2,       // AVX2 + FMA + F16C, 8 lanes
    avx512,     // AVX-512 F/BW/VL, 16 lanes
};

const char* cpu_row_path_name(CpuRowPath path) noexcept;
// Whether this CPU (and OS) can run the path; reference and scalar always can.
bool cpu_row_path_supported(CpuRowPath path) noexcept;
// The fastest supported path: avx512, else avx2, else scalar.
CpuRowPath best_cpu_row_path() noexcept;

// The value of JSONLW_SNAPSHOT_CPU_PATH ("avx512", "avx2", "scalar", "reference", or unset /
// empty / "auto" for the best) turned into a path. A path this CPU lacks becomes the best
// supported one below it (avx512 -> avx2 -> scalar) and sets *warning to one line saying so;
// an unknown value becomes the best path, with a warning too.
CpuRowPath resolve_cpu_row_path(std::string_view value, std::string* warning);
// resolve_cpu_row_path(getenv("JSONLW_SNAPSHOT_CPU_PATH")): what a CPU stage runs; read when
// the stage is created, the warning (if any) printed once per stage on stderr.
CpuRowPath cpu_row_path_from_env(std::string* warning);

// How far fast_row's lse and logprobs may be from reference_row's, for every row, dtype and
// vocab up to max_vocab: |fast - ref| <= abs + rel * |ref| (identical when either is not
// finite). Where it comes from: docs/snapshot.md, "CPU paths"; checked in
// tests/snapshot/fast_row.cpp.
struct FastRowTolerance {
    double abs = 1e-5;
    double rel = 1e-6;
    bool within(float fast, float ref) const noexcept;
};
inline constexpr FastRowTolerance fast_row_tolerance{};

// reference_row's contract (reference.hpp), computed by `path` in one read of the row: the
// widened logits are compared as fp32 for the rank and the top-k candidates, their exp(x - m)
// summed with a running m in a fp32 vector polynomial, per block of 1024 logits, the blocks
// added in double. A row with a NaN or +inf, or with fewer than min(k, vocab) logits above
// -inf, is handed to reference_row (its results are then those of the oracle, bit for bit).
// An unsupported path runs as the best supported one below it. Returns false when the row was
// handed to reference_row (or the path is `reference`), true when the path's kernel computed it.
bool fast_row(const void* row, LogitDType dtype, std::int32_t vocab, std::int32_t sampled_id,
              int k, TokenSnapshot& out, RowScratch& scratch, CpuRowPath path) noexcept;

namespace detail {
// The passes a fast_row path is measured against (jsonlw-bench, "snapshot rows"), at the path's
// SIMD width: every logit read and widened, and summed (read_pass); or exp(x - m) summed with
// the kernel's exp (exp_pass). Nothing else; not for production use.
double cpu_row_read_pass(const void* row, LogitDType dtype, std::int32_t vocab,
                         CpuRowPath path) noexcept;
double cpu_row_exp_pass(const void* row, LogitDType dtype, std::int32_t vocab, float m,
                        CpuRowPath path) noexcept;
}  // namespace detail

}  // namespace jsonlw::snapshot
