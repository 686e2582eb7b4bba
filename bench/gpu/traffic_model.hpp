// The fused pass's DRAM traffic as jsonlw-bench-gpu predicts it (docs/snapshot.md, "Speed"):
// every 32-byte sector a step's kernels touch in global memory, each counted once (a
// streaming read of the logits is never re-read from DRAM; the scratch a partial CTA writes
// is read back by the merge), and the time those bytes take at 4.8 TB/s. The emulated
// device counts the same sectors by watching every access (tests/snapshot/emu/); this is the
// closed form for the layouts the bench launches, checked against those counts.
#pragma once

#include "../../lib/snapshot/cuda/kernels.hpp"

#include <jsonlw/snapshot/types.hpp>

#include <cstddef>
#include <cstdint>

namespace jsonlw_bench_gpu {

inline constexpr double kH200BytesPerS = 4.8e12;  // H200 HBM3e, the goal's reference
inline constexpr std::uint64_t kSector = 32;

// Sectors that the byte range [addr, addr + bytes) touches.
inline std::uint64_t sectors_of(std::uintptr_t addr, std::uint64_t bytes) noexcept
{
    if (bytes == 0) return 0;
    return (addr + bytes - 1) / kSector - addr / kSector + 1;
}

struct StepTraffic {
    std::uint64_t logit_bytes = 0;     // rows x vocab x element size: what the pass must read
    std::uint64_t logit_sectors = 0;   // sectors of the rows (the unaligned ends round up)
    std::uint64_t scratch_bytes = 0;   // partials + candidates, written then read back
    std::uint64_t other_bytes = 0;     // sampled ids in, the rows' TokenSnapshot fields out
    std::uint64_t moved_bytes() const noexcept { return logit_sectors * kSector + scratch_bytes + other_bytes; }
    double predicted_us() const noexcept { return double(moved_bytes()) / kH200BytesPerS * 1e6; }
    // The share of 4.8 TB/s the pass reaches if it moves moved_bytes() at the full rate.
    double predicted_share() const noexcept { return double(logit_bytes) / double(moved_bytes()); }
};

// candidates: the candidate keys all partial CTAs wrote (the sum of TilePartial::n, read
// back from the device after the step; data-dependent, about k per tile).
inline StepTraffic step_traffic(const jsonlw::snapshot::cuda_detail::StepArgs& a,
                                const jsonlw::snapshot::cuda_detail::StepPlan& plan,
                                std::uint64_t candidates) noexcept
{
    namespace cd = jsonlw::snapshot::cuda_detail;
    const std::uint64_t es = jsonlw::snapshot::itemsize(a.dtype);
    StepTraffic t;
    const auto base = reinterpret_cast<std::uintptr_t>(a.logits);
    for (std::int32_t r = 0; r < a.rows; ++r) {
        t.logit_bytes += std::uint64_t(a.vocab) * es;
        t.logit_sectors += sectors_of(base + std::uint64_t(r) * std::uint64_t(a.row_stride) * es,
                                      std::uint64_t(a.vocab) * es);
    }
    const std::uint64_t tiles = std::uint64_t(a.rows) * std::uint64_t(plan.tiles);
    t.scratch_bytes = 2 * (tiles * sizeof(cd::TilePartial) + candidates * sizeof(std::uint64_t));
    constexpr std::size_t kIdentity = offsetof(jsonlw::snapshot::TokenSnapshot, sampled_id);
    t.other_bytes = std::uint64_t(a.rows) * (sizeof(std::int32_t) + sizeof(jsonlw::snapshot::TokenSnapshot) - kIdentity);
    return t;
}

}  // namespace jsonlw_bench_gpu
