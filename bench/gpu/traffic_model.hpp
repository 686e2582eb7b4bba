// The fused pass's DRAM traffic as jsonlw-bench-gpu predicts it (docs/snapshot.md, "Speed"):
// every 32-byte sector each of a step's two kernels touches in global memory, counted once per
// kernel, and the time those bytes take at 4.8 TB/s. The emulated device counts the same
// sectors by watching every access (tests/snapshot/emu/, jsonlw-emu-predict); this is the
// closed form for the layouts the bench launches (allocations 256-byte aligned, as cudaMalloc's).
#pragma once

#include "../../lib/snapshot/cuda/kernels.hpp"

#include <jsonlw/snapshot/types.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

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
    std::uint64_t logit_bytes = 0;    // rows x vocab x element size: what the pass must read
    std::uint64_t logit_sectors = 0;  // sectors of the rows (the unaligned ends round up)
    std::uint64_t other_sectors = 0;  // ids, partials, candidates, re-read logits, outputs
    std::uint64_t moved_bytes() const noexcept { return (logit_sectors + other_sectors) * kSector; }
    double predicted_us() const noexcept { return double(moved_bytes()) / kH200BytesPerS * 1e6; }
    // The share of 4.8 TB/s the pass reaches if it moves moved_bytes() at the full rate.
    double predicted_share() const noexcept { return double(logit_bytes) / double(moved_bytes()); }
};

// The emulated device's model (tests/snapshot/emu/include/jsonlw_emu/predict.hpp): per launch,
// each distinct sector read or written once, summed over the step's two launches.
// tile_n: the candidate keys each (row, tile) wrote (TilePartial::n, read back after the step).
inline StepTraffic step_traffic(const jsonlw::snapshot::cuda_detail::StepArgs& a,
                                const std::vector<std::uint32_t>& tile_n) noexcept
{
    namespace cd = jsonlw::snapshot::cuda_detail;
    using jsonlw::snapshot::TokenSnapshot;
    const std::uint64_t es = jsonlw::snapshot::itemsize(a.dtype);
    const std::uint64_t rows = std::uint64_t(a.rows), k = std::uint64_t(a.k);
    StepTraffic t;
    const auto base = reinterpret_cast<std::uintptr_t>(a.logits);
    for (std::uint64_t r = 0; r < rows; ++r) {
        t.logit_bytes += std::uint64_t(a.vocab) * es;
        t.logit_sectors += sectors_of(base + r * std::uint64_t(a.row_stride) * es, std::uint64_t(a.vocab) * es);
    }
    std::uint64_t o = 2 * sectors_of(0, rows * sizeof(std::int32_t));  // sampled ids, both kernels
    o += 2 * sectors_of(0, tile_n.size() * sizeof(cd::TilePartial));    // partials, written then read
    for (std::uint32_t n : tile_n) o += 2 * sectors_of(0, std::uint64_t(n) * sizeof(std::uint64_t));  // keys
    o += rows * (k + 1);  // the merge re-reads the top k and the sampled logit: a sector each
    // The fields the merge writes: sampled_id .. row_flags, then k entries of each top-k array.
    constexpr std::size_t kHead = offsetof(TokenSnapshot, sampled_id);
    constexpr std::size_t kTail = offsetof(TokenSnapshot, topk_ids);
    for (std::uint64_t r = 0; r < rows; ++r) {
        const std::uint64_t row = r * sizeof(TokenSnapshot);
        o += sectors_of(row + kHead, kTail - kHead);
        o += sectors_of(row + offsetof(TokenSnapshot, topk_ids), k * 4);
        o += sectors_of(row + offsetof(TokenSnapshot, topk_logits), k * 4);
        o += sectors_of(row + offsetof(TokenSnapshot, topk_logprobs), k * 4);
    }
    t.other_sectors = o;
    return t;
}

}  // namespace jsonlw_bench_gpu
