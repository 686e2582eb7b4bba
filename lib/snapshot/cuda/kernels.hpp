// The CUDA backend's device work, as plain launch functions the host code (cuda_stage.cpp,
// compiled by g++) calls. Free of device code and of Asio; kernels.cu defines them.
//
// One step is two kernels on the caller's stream (docs/snapshot.md, "Calling it from a decode
// loop"):
//   partial: grid (tiles, rows), 256 threads. Each CTA reads one tile of one row exactly once
//            (streaming 16-byte loads; an unaligned head and tail done element-wise) and writes
//            a TilePartial (max, sum of exp, the rank count, NaN/+inf counts) plus every element
//            of the tile whose key is at or above a threshold that at least k of its elements
//            reach (so the row's top k are among the row's candidates).
//   merge:   one CTA per row. Combines the partials in tile order (deterministic), picks the
//            top k exactly from the candidates and writes the row's TokenSnapshot fields from
//            sampled_id on (the identity fields stay host-side).
// first-gen: one CTA per captured row, converts it into the slot's device staging.
#pragma once

#include <jsonlw/snapshot/types.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace jsonlw::snapshot::cuda_detail {

// One (row, tile) result. threshold: every element of the tile with order_key >= threshold is
// among its n candidates, and at least min(k, tile size) elements reach it (0: all are listed).
struct TilePartial {
    float m;             // max of the tile's logits (fmaxf; -inf when all are -inf or none)
    float s;             // sum of exp(x - m) in fp32 (NaN/inf: the tile has NaN or +inf)
    std::uint32_t above;  // elements ordered before the sampled token
    std::uint32_t nan_count;
    std::uint32_t posinf_count;
    std::uint32_t n;      // candidates written
    std::uint64_t threshold;
};

// Candidate keys per tile (more: the tile falls back to its exact top k).
inline constexpr int tile_candidates = 512;
inline constexpr int block_threads = 256;

// How a step is cut into tiles: each thread of a partial CTA loads `vectors` 16-byte vectors.
struct StepPlan {
    int vectors = 8;  // 8 (large batches) or 2 (small batches: more CTAs per row)
    int tiles = 1;    // partial CTAs per row (grid.x)
};

// The plan for rows x vocab of dtype on a device with sm_count SMs.
StepPlan plan_step(LogitDType dtype, std::int32_t vocab, std::int32_t rows, int sm_count) noexcept;

// Rows x tiles the scratch must hold for any step within these limits.
std::size_t max_tile_rows(std::int32_t max_rows, std::int32_t max_vocab, int sm_count) noexcept;

struct StepArgs {
    const void* logits = nullptr;
    LogitDType dtype = LogitDType::f32;
    std::int32_t rows = 0;
    std::int32_t vocab = 0;
    std::int64_t row_stride = 0;        // elements
    const std::int32_t* sampled = nullptr;  // device, rows entries
    int k = 20;
    TilePartial* partials = nullptr;    // device scratch, rows * plan.tiles
    std::uint64_t* candidates = nullptr;  // device scratch, rows * plan.tiles * tile_candidates
    TokenSnapshot* out = nullptr;       // device, rows entries
};

// Enqueues partial + merge on stream. Returns the launch error (cudaSuccess when enqueued).
cudaError_t launch_step(const StepArgs& args, const StepPlan& plan, cudaStream_t stream) noexcept;

// Only the partial kernel, or only the merge (the benchmark times them apart).
cudaError_t launch_partial(const StepArgs& args, const StepPlan& plan, cudaStream_t stream) noexcept;
cudaError_t launch_merge(const StepArgs& args, const StepPlan& plan, cudaStream_t stream) noexcept;

// First-gen rows: for each i < count, row rows[i] of the logits converted as
// convert_first_gen_row does into out + offsets[i]; overflow[i] gets its overflow_to_inf.
inline constexpr int first_gen_per_launch = 32;
struct FirstGenArgs {
    const void* logits = nullptr;
    LogitDType dtype = LogitDType::f32;
    std::int32_t vocab = 0;
    std::int64_t row_stride = 0;
    FirstGenMode mode = FirstGenMode::float16_compat;
    std::byte* out = nullptr;          // device
    std::uint32_t* overflow = nullptr;  // device, count entries
    int count = 0;                      // <= first_gen_per_launch
    std::int32_t rows[first_gen_per_launch] = {};
    std::uint64_t offsets[first_gen_per_launch] = {};
};
cudaError_t launch_first_gen(const FirstGenArgs& args, cudaStream_t stream) noexcept;

}  // namespace jsonlw::snapshot::cuda_detail
