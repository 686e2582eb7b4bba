// The fused pass's global-memory traffic, counted by the emulated device (jsonlw_emu/traffic.hpp)
// in exact numbers: what a speed regression that keeps every result changes (a second read of
// the row, loads that no longer coalesce, fewer CTAs, a loop one thread runs alone). Steps are
// launched as jsonlw-bench-gpu launches them (plan_step + launch_step on buffers of our own),
// and every row is still compared with reference_row. docs/emulated-device.md, "Speed-shaped facts it
// counts".
#include "emulated_guards.hpp"
#include "gpu_stage_support.hpp"

#include "../../lib/snapshot/cuda/kernels.hpp"

#include <jsonlw_emu/launch_count.hpp>
#include <jsonlw_emu/traffic.hpp>

#include <cstdint>
#include <vector>

using namespace gpu_test;
namespace cd = jsonlw::snapshot::cuda_detail;
using jsonlw::emu::LaunchTraffic;

namespace {

constexpr int kThreads = cd::block_threads;
constexpr int kWarps = kThreads / 32;

// One step's launches and what the test needs to state their counts.
struct TracedStep {
    std::vector<LaunchTraffic> launches;
    cd::StepPlan plan;
    std::vector<std::uint32_t> tile_candidates;  // TilePartial::n of each (row, tile)
    const void *logits = nullptr, *sampled = nullptr, *partials = nullptr, *candidates = nullptr, *out = nullptr;
    std::uint64_t candidates_total() const
    {
        std::uint64_t n = 0;
        for (std::uint32_t c : tile_candidates) n += c;
        return n;
    }
    // Warp-wide instructions and sectors of a loop `for (j = t; j < n; j += 256)` over 8-byte
    // keys at a 4096-byte aligned slot, summed over the tiles.
    std::uint64_t key_instructions() const
    {
        std::uint64_t n = 0;
        for (std::uint32_t c : tile_candidates) n += (c + 31) / 32;
        return n;
    }
    std::uint64_t key_sectors() const
    {
        std::uint64_t n = 0;
        for (std::uint32_t c : tile_candidates) n += (c + 3) / 4;
        return n;
    }
};

// Uploads h offset_elems elements past a fresh allocation, runs one step with k = 20 and the
// plan of a 132-SM device, compares every row with reference_row, returns the traffic.
TracedStep traced_step(const HostLogits& h, const std::vector<std::int32_t>& sampled, int k,
                       std::size_t offset_elems)
{
    const std::size_t es = itemsize(h.dtype);
    int sms = 0;
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    TracedStep s;
    s.plan = cd::plan_step(h.dtype, h.vocab, h.rows, sms);
    const std::size_t tiles = std::size_t(h.rows) * std::size_t(s.plan.tiles);
    DeviceBuffer logits(h.bytes.size() + offset_elems * es), ids(sampled.size() * 4),
        partials(tiles * sizeof(cd::TilePartial)), cands(tiles * cd::tile_candidates * 8),
        out(std::size_t(h.rows) * sizeof(TokenSnapshot));
    char* rows = static_cast<char*>(logits.p) + offset_elems * es;
    CUDA_OK(cudaMemcpy(rows, h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(ids.p, sampled.data(), sampled.size() * 4, cudaMemcpyHostToDevice));
    cd::StepArgs a;
    a.logits = rows;
    a.dtype = h.dtype;
    a.rows = h.rows;
    a.vocab = h.vocab;
    a.row_stride = h.stride;
    a.sampled = static_cast<const std::int32_t*>(ids.p);
    a.k = k;
    a.partials = static_cast<cd::TilePartial*>(partials.p);
    a.candidates = static_cast<std::uint64_t*>(cands.p);
    a.out = static_cast<TokenSnapshot*>(out.p);
    (void)jsonlw::emu::take_launch_traffic();
    CUDA_OK(cd::launch_step(a, s.plan, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    s.launches = jsonlw::emu::take_launch_traffic();

    std::vector<TokenSnapshot> got(std::size_t(h.rows));
    CUDA_OK(cudaMemcpy(got.data(), out.p, got.size() * sizeof(TokenSnapshot), cudaMemcpyDeviceToHost));
    compare_rows(got, h, sampled, k);
    std::vector<cd::TilePartial> parts(tiles);
    CUDA_OK(cudaMemcpy(parts.data(), partials.p, tiles * sizeof(cd::TilePartial), cudaMemcpyDeviceToHost));
    for (const cd::TilePartial& p : parts) s.tile_candidates.push_back(p.n);
    s.logits = logits.p;
    s.sampled = ids.p;
    s.partials = partials.p;
    s.candidates = cands.p;
    s.out = out.p;
    return s;
}

struct Shape {
    LogitDType dt;
    int rows, vocab;
    std::size_t offset;  // elements between the allocation and row 0
};

}  // namespace

TEST_CASE("Emulated GPU traffic: the fused pass reads each logit byte once, in whole sectors, and writes only its results",
          "[gpu][emulated][traffic]")
{
    DeviceReset restore;
    const int k = 20;
    // Aligned rows (each row a whole number of 16-byte vectors and 32-byte sectors), and the
    // same rows one element past an aligned base: a head of 16 / size - 1 elements, then
    // vectors that straddle sectors, then a one-element tail.
    for (const Shape sh : {Shape{LogitDType::bf16, 2, 152064, 0}, Shape{LogitDType::f16, 2, 32000, 0},
                           Shape{LogitDType::f32, 3, 4096, 0}, Shape{LogitDType::bf16, 2, 152064, 1},
                           Shape{LogitDType::f16, 2, 32000, 1}, Shape{LogitDType::f32, 3, 4096, 1}}) {
        INFO(dtype_name(sh.dt) << " " << sh.rows << " x " << sh.vocab << ", row 0 " << sh.offset << " elements past the allocation");
        const auto h = random_logits(sh.dt, sh.rows, sh.vocab, sh.vocab, 191);
        const TracedStep s = traced_step(h, random_sampled(sh.rows, sh.vocab, 192), k, sh.offset);
        REQUIRE(s.launches.size() == 2);
        const LaunchTraffic& part = s.launches[0];
        const LaunchTraffic& merge = s.launches[1];
        const std::uint64_t es = itemsize(sh.dt);
        const std::uint64_t logit_bytes = std::uint64_t(sh.rows) * std::uint64_t(sh.vocab) * es;
        const std::uint64_t tiles = std::uint64_t(sh.rows) * std::uint64_t(s.plan.tiles);
        const std::uint64_t cands = s.candidates_total();

        // The tile pass: grid (tiles, rows); every logit byte once, plus each thread's read of
        // the sampled id and the sampled logit (a broadcast: one sector per warp).
        CHECK(part.kernel.rfind("partial_kernel<", 0) == 0);
        CHECK(part.grid.x == unsigned(s.plan.tiles));
        CHECK(part.grid.y == unsigned(sh.rows));
        CHECK_FALSE(part.failed);
        const auto pl = part.buffer(s.logits);
        CHECK(pl.distinct_read_bytes == logit_bytes);
        CHECK(pl.loads.requested_bytes == logit_bytes + tiles * kThreads * es);
        CHECK(pl.loads.used_bytes == logit_bytes + tiles * kWarps * es);
        CHECK(pl.stores.requested_bytes == 0);
        const auto ps = part.buffer(s.sampled);
        CHECK(ps.loads.requested_bytes == tiles * kThreads * 4);
        CHECK(ps.loads.sectors == tiles * kWarps);
        CHECK(ps.distinct_read_bytes == std::uint64_t(sh.rows) * 4);
        CHECK(part.loads.requested_bytes == pl.loads.requested_bytes + ps.loads.requested_bytes);
        // Writes: one 32-byte TilePartial (one sector) per tile, and its candidate keys.
        const auto pp = part.buffer(s.partials);
        CHECK(pp.stores.requested_bytes == tiles * sizeof(cd::TilePartial));
        CHECK(pp.stores.sectors == tiles);
        const auto pc = part.buffer(s.candidates);
        CHECK(pc.stores.requested_bytes == cands * 8);
        CHECK(pc.stores.instructions == s.key_instructions());
        CHECK(pc.stores.sectors == s.key_sectors());
        CHECK(part.stores.requested_bytes == pp.stores.requested_bytes + pc.stores.requested_bytes);
        if (sh.offset == 0) {
            // 512 contiguous bytes (16 sectors) per warp-wide vector load, plus the broadcasts.
            CHECK(pl.loads.instructions == logit_bytes / 512 + tiles * kWarps);
            CHECK(pl.loads.sectors == logit_bytes / 32 + tiles * kWarps);
            CHECK(pl.loads.sector_efficiency() >= 0.97);
        } else {
            // A vector load's 512 bytes straddle 17 sectors.
            CHECK(pl.loads.sector_efficiency() >= 0.90);
            CHECK(pl.loads.sector_efficiency() < 0.97);
        }

        // The merge: one CTA per row; each candidate key once, each partial's 32 bytes (warp 0
        // reads them, then each one's s and m again for the sum of exp), k + 1 logits per row,
        // the results.
        CHECK(merge.kernel == "merge_kernel");
        CHECK(merge.grid.x == unsigned(sh.rows));
        const auto mc = merge.buffer(s.candidates);
        CHECK(mc.loads.requested_bytes == cands * 8);
        CHECK(mc.distinct_read_bytes == cands * 8);
        CHECK(mc.loads.instructions == s.key_instructions());
        CHECK(mc.loads.sectors == s.key_sectors());
        const auto mp = merge.buffer(s.partials);
        CHECK(mp.distinct_read_bytes == tiles * sizeof(cd::TilePartial));
        CHECK(mp.loads.requested_bytes == tiles * (sizeof(cd::TilePartial) + 8));
        CHECK(merge.buffer(s.logits).loads.requested_bytes == std::uint64_t(sh.rows) * (k + 1) * es);
        CHECK(merge.buffer(s.sampled).loads.requested_bytes == std::uint64_t(sh.rows) * 4);
        // From sampled_id on: k ids, logits and logprobs, 7 four-byte fields, flags, k.
        const std::uint64_t row_result = 12 * k + 7 * 4 + 2 + 1;
        CHECK(merge.stores.requested_bytes == std::uint64_t(sh.rows) * row_result);
        CHECK(merge.buffer(s.out).stores.requested_bytes == merge.stores.requested_bytes);
    }
}

TEST_CASE("Emulated GPU traffic: a batch-1 step is two launches, the tile pass spread over 4x the CTAs",
          "[gpu][emulated][traffic]")
{
    // One row of 152,064 bf16: 19,008 vectors in tiles of 2 per thread (512 per CTA), 38 CTAs
    // and the merge. Tiles of 8 vectors (10 CTAs) would leave most of a 132-SM GPU idle.
    DeviceReset restore;
    const int v = 152064;
    const auto h = random_logits(LogitDType::bf16, 1, v, v, 193);
    const std::uint64_t before = jsonlw::emu::kernel_launches();
    const TracedStep s = traced_step(h, random_sampled(1, v, 194), 20, 0);
    CHECK(jsonlw::emu::kernel_launches() - before == 2u);
    REQUIRE(s.launches.size() == 2);
    CHECK(s.launches[0].kernel == "partial_kernel<DT, 2>");
    CHECK(s.launches[0].grid.x == 38u);
    CHECK(s.launches[0].grid.y == 1u);
    CHECK(s.launches[1].kernel == "merge_kernel");
    CHECK(s.launches[1].blocks() == 1u);
}
