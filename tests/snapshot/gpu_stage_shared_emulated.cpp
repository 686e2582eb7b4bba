// The snapshot kernels' shared memory on the emulated device (jsonlw_emu/shared_report.hpp):
// every launch of the suite runs under racecheck, and for one stated shape the tile pass and
// the merge make exactly the shared accesses, warp-wide instructions, bank conflicts, barriers
// and warp collectives counted here, so an edit that adds a conflict or a barrier fails a test
// instead of only costing time on a GPU. Linked into the emulated GPU program.
#include "emulated_guards.hpp"
#include "gpu_stage_support.hpp"

#include <jsonlw_emu/shared_report.hpp>
#include <jsonlw_emu/simt.hpp>

#include <string>
#include <vector>

using namespace gpu_test;

namespace {

// The one record of a launch of `kernel` among recs.
jsonlw::emu::SharedCounters only(const std::vector<jsonlw::emu::SharedCounters>& recs, const std::string& kernel)
{
    const jsonlw::emu::SharedCounters* found = nullptr;
    for (const auto& r : recs) {
        if (r.kernel.find(kernel) == std::string::npos) continue;
        REQUIRE(found == nullptr);
        found = &r;
    }
    REQUIRE(found != nullptr);
    return *found;
}

}  // namespace

TEST_CASE("Emulated GPU shared memory: a bf16 2 x 32000 step's tile pass has no bank conflict, its merge a stated count", "[gpu][emulated]")
{
    // 2 rows of 4000 vectors, a small batch: 2-vector tiles, 8 per row, 16 CTAs of 256 threads,
    // then one merge CTA per row; k = 20. Candidate slots come from shared atomics, so the
    // numbers hold for thread order (seed 0), which the case sets. An instruction is a site's
    // n-th run by the lanes of a warp (jsonlw_emu/shared_report.hpp).
    DeviceReset restore;
    jsonlw::emu::set_schedule_seed(0);
    const int rows = 2, v = 32000, k = 20;
    const auto h = random_logits(LogitDType::bf16, rows, v, v, 201);
    (void)jsonlw::emu::take_shared_counters();
    run_and_compare(h, random_sampled(rows, v, 202), k);
    const auto recs = jsonlw::emu::take_shared_counters();

    // Per CTA: 3 block reductions (M, S, the rank) read 8 partials x 256 threads and write 8;
    // the threshold reads s_wvalid 8 x 2 and s_qth 8 per thread and writes 8 of each; every
    // thread reads s_count once, thread 0 zeroes it: 12544 loads and 41 stores. Each of the
    // 720 candidates is one atomic, one store into s_cand and one load back out of it. Every
    // load is a broadcast or a row of consecutive 8-byte words: 2 wavefronts at most, never a
    // conflict. 9 barriers (2 per reduction, 3 for the threshold) and 31 collectives per warp.
    const auto partial = only(recs, "partial_kernel");
    CHECK(partial.blocks == 16u);
    CHECK(partial.loads == 16u * 12544u + 720u);
    CHECK(partial.stores == 16u * 41u + 720u);
    CHECK(partial.atomics == 720u);
    CHECK(partial.instructions == 7315u);
    CHECK(partial.wavefronts == 7336u);
    CHECK(partial.ideal_wavefronts == 7336u);
    CHECK(partial.conflicted_instructions == 0u);
    CHECK(partial.max_ways == 2u);
    CHECK(partial.barriers == 16u * 9u);
    CHECK(partial.collectives == 16u * 8u * 31u);

    // The merge, per CTA (row): warp 0 folds the 8 tiles' partials in tile order through
    // shuffles (5 per tile for max, counts and threshold, 1 per tile for the sum) and stores
    // their key counts; 226 keys a row pass the threshold (452 atomics and stores into
    // s_keys over both rows); one radix-select level (the 256 bins zeroed, 452 histogram atomics, warp 0's
    // scan: 5 shuffles and a ballot) leaves 111 keys at or above the bar over both rows (atomics
    // into s_sel), which a 64-slot bitonic network sorts in 21 stages. Barriers per CTA: the
    // totals, the gather, the select's 3, the pick, the padding, 21 stages, the top k = 29.
    // The conflicts are the network's strided 8-byte pairs and the arrival-order stores.
    const auto merge = only(recs, "merge_kernel");
    CHECK(merge.blocks == 2u);
    CHECK(merge.loads == 14454u);
    CHECK(merge.stores == 2604u);
    CHECK(merge.atomics == 2u * 452u + 111u);
    CHECK(merge.instructions == 721u);
    CHECK(merge.wavefronts == 1301u);
    CHECK(merge.ideal_wavefronts == 905u);
    CHECK(merge.conflicted_instructions == 169u);
    CHECK(merge.extra_wavefronts() == 396u);
    CHECK(merge.max_ways == 8u);
    CHECK(merge.barriers == 2u * 29u);
    CHECK(merge.collectives == 2u * (8u * 6u + 6u));
}

TEST_CASE("Emulated GPU shared memory: each dtype's tile pass and merge run clean under racecheck while one warp races ahead", "[gpu][emulated]")
{
    // A hazard fails its launch (a failed step, a failed REQUIRE elsewhere); this case runs one
    // step of each dtype under an odd seed, so one warp races ahead of the others between
    // barriers, and requires every launch to have been checked and to have passed.
    DeviceReset restore;
    jsonlw::emu::set_schedule_seed(7);
    (void)jsonlw::emu::take_shared_counters();
    const std::uint64_t failures = jsonlw::emu::kernel_failures();
    for (const LogitDType dt : {LogitDType::bf16, LogitDType::f16, LogitDType::f32}) {
        const auto h = random_logits(dt, 3, 4099, 4099, 211);
        run_and_compare(h, random_sampled(3, 4099, 212), 64);
    }
    const auto recs = jsonlw::emu::take_shared_counters();
    CHECK(recs.size() == 6u);  // a tile pass and a merge per step
    for (const auto& r : recs) CHECK(r.loads > 0u);
    CHECK(jsonlw::emu::kernel_failures() == failures);
}
