// The GPU suite's cases that only the emulated device can run (tests/snapshot/emu): the same
// bits under every schedule seed, the fast path's cost in warp collectives, a stream whose
// host function never runs (the watchdog), a kernel that reads past its buffer (memcheck), a
// refused launch, a failing allocation. Linked with gpu_stage.cpp into the emulated program.
#define CATCH_CONFIG_ENABLE_BENCHMARKING  // as tests/catch_main.cpp
#include "emulated_guards.hpp"
#include "gpu_stage_support.hpp"

#include <jsonlw_emu/faults.hpp>
#include <jsonlw_emu/launch_count.hpp>
#include <jsonlw_emu/simt.hpp>

#include <stdexcept>
#include <string>

using namespace gpu_test;

TEST_CASE("Emulated GPU: the same bits under every schedule seed", "[gpu][emulated]")
{
    DeviceReset restore;
    struct Case {
        HostLogits h;
        std::vector<std::int32_t> sampled;
        int k;
    };
    std::vector<Case> cases;
    cases.push_back({random_logits(LogitDType::bf16, 8, 152064, 152064, 91), random_sampled(8, 152064, 92), 20});
    cases.push_back({random_logits(LogitDType::f16, 3, 4097, 4097 + 5, 93), random_sampled(3, 4097, 94), 64});
    {
        HostLogits t(LogitDType::f32, 2, 32000, 32000);
        std::mt19937_64 rng(95);
        for (int i = 0; i < 32000; ++i) {
            t.set(0, i, float(rng() % 3) * 0.5f);  // heavy ties: candidate slots race
            t.set(1, i, i % 7 == 0 ? 2.0f : -1.0f);
        }
        t.set(1, 9, std::nanf(""));
        cases.push_back({t, {5, 9}, 64});
    }
    for (const Case& c : cases) {
        jsonlw::emu::set_schedule_seed(restore.seed);
        const auto base = run_and_compare(c.h, c.sampled, c.k);
        for (std::uint64_t seed : {0u, 1u, 2u, 3u, 0xfeedu}) {
            INFO("schedule seed " << seed);
            jsonlw::emu::set_schedule_seed(seed);
            const auto again = run_and_compare(c.h, c.sampled, c.k);
            REQUIRE(std::memcmp(base.rows.data(), again.rows.data(), base.rows.size() * sizeof(TokenSnapshot)) == 0);
        }
    }
}

TEST_CASE("Emulated GPU: plain rows take the fast path, 31 warp collectives per warp and tile, 6 per tile and select level to merge", "[gpu][emulated]")
{
    // Per warp of a partial CTA: two 5-step butterflies (max, sum of exp), the 15-step bitonic
    // sort of thread maxima, one ballot, the rank's butterfly. The exact fallback (NaN, +inf,
    // over 512 candidates) adds k rounds. The merge's warp 0 folds each tile's partial with 6
    // shuffles and scans each radix-select level with 6 collectives: this data takes one level
    // a row. A threshold that lets too many candidates through shows here, not in the results.
    const int rows = 4, v = 152064, k = 20;
    const auto h = random_logits(LogitDType::bf16, rows, v, v, 161);
    int sm = 0;
    CUDA_OK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    const int tiles = (v / 8 + 256 * 2 - 1) / (256 * 2);  // 2-vector tiles: a small batch
    REQUIRE(rows * ((v / 8 + 2047) / 2048) < 2 * sm);
    const std::uint64_t before = jsonlw::emu::warp_collectives();
    run_and_compare(h, random_sampled(rows, v, 162), k);
    CHECK(jsonlw::emu::warp_collectives() - before ==
          std::uint64_t(rows) * (std::uint64_t(tiles) * 8u * 31u + std::uint64_t(tiles) * 6u + 6u));
}

TEST_CASE("Emulated GPU: the watchdog delivers a slot whose host function never runs", "[gpu][emulated]")
{
    DeviceReset restore;
    const int rows = 4, v = 4096;
    const RandomStep step(LogitDType::f32, rows, v, 101);
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    cfg.watchdog = 50ms;
    // The stage's copy stream (made inside create()) holds its first host function: the copy
    // and its event complete, the completion callback does not come.
    StallsReleased unstall_on_failure;  // the create() below may throw
    jsonlw::emu::stall_new_streams(true, jsonlw::emu::StallAt::next_host_func);
    auto stage = SnapshotStage::create(cfg, Backend::cuda, c.sink());
    jsonlw::emu::stall_new_streams(false);
    StallsReleased unstall;  // before the stage goes, whichever REQUIRE below fails
    std::vector<RowMeta> meta(rows);
    REQUIRE(stage->capture(step.view(0), step.device.ids(), meta, nullptr) == CaptureResult::enqueued);
    REQUIRE(stage->drain(30s));
    REQUIRE(c.count() == 1);
    CHECK(!c.failed[0]);
    CHECK(stage->stats().watchdog_fires == 1);
    compare_rows(c.rows[0], step.host, step.sampled, cfg.k);
    jsonlw::emu::release_all_streams();  // the late host function finds its slot delivered
    stage.reset();
    CHECK(c.count() == 1);
}

TEST_CASE("Emulated GPU: a kernel that reads past the logits fails its batch, named by memcheck", "[gpu][emulated]")
{
    DeviceReset restore;
    const int rows = 2, v = 4096;
    const auto h = random_logits(LogitDType::f32, rows, v, v, 111);
    const auto s = random_sampled(rows, v, 112);
    void* short_logits = nullptr;  // one and a half rows of the two the view claims
    CUDA_OK(cudaMalloc(&short_logits, std::size_t(v) * 4 * 3 / 2));
    const DeviceStep step(h, s);  // its own logits unused: the view points at short_logits
    CUDA_OK(cudaMemcpy(short_logits, h.bytes.data(), std::size_t(v) * 4 * 3 / 2, cudaMemcpyHostToDevice));
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    cfg.watchdog = 50ms;
    auto stage = SnapshotStage::create(cfg, Backend::cuda, c.sink());
    std::vector<RowMeta> meta(rows);
    const LogitsView view{short_logits, LogitDType::f32, rows, v, v, 0};
    (void)jsonlw::emu::take_kernel_report();
    // The kernel runs only after capture() returned (else its sticky error may reach one of
    // capture()'s own calls, which then fail the step themselves): the watchdog's case.
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Gate gate;
    CUDA_OK(cudaLaunchHostFunc(stream, wait_gate, &gate));
    const ScopeExit open_gate([&gate] { gate.release(); });  // a failed REQUIRE leaves it open too
    REQUIRE(stage->capture(view, step.ids(), meta, stream) == CaptureResult::enqueued);
    gate.release();
    REQUIRE(stage->drain(30s));
    REQUIRE(c.count() == 1);
    CHECK(c.failed[0]);
    const auto st = stage->stats();
    INFO("last_error: " << st.last_error);
    CHECK(st.watchdog_fires == 1);  // the failed context skips the host function
    CHECK(st.last_error.find("cudaErrorIllegalAddress") != std::string::npos);
    const std::string report = jsonlw::emu::take_kernel_report();
    INFO(report);
    CHECK(report.find("memcheck: invalid read") != std::string::npos);
    CHECK(report.find("after the end of the 24576-byte device allocation") != std::string::npos);
    CHECK(report.find("block (") != std::string::npos);
    jsonlw::emu::reset_device();
    stage.reset();
    (void)cudaStreamDestroy(stream);
    (void)cudaFree(short_logits);
}

TEST_CASE("Emulated GPU: a refused launch fails that step alone; the next one is exact", "[gpu][emulated]")
{
    DeviceReset restore;
    const SnapshotConfig cfg = config_for(3, 1000);
    StepCapture t(LogitDType::bf16, 3, 1000, 121, cfg);
    jsonlw::emu::fail_next_launch(cudaErrorLaunchOutOfResources);
    REQUIRE(t.capture(nullptr) == CaptureResult::enqueued);
    REQUIRE(t.capture(nullptr) == CaptureResult::enqueued);
    REQUIRE(t.stage->drain(30s));
    REQUIRE(t.c.count() == 2);
    CHECK(t.c.failed[0]);
    CHECK(!t.c.failed[1]);
    CHECK(t.stage->stats().last_error == "kernel launch: cudaErrorLaunchOutOfResources (too many resources requested for launch)");
    compare_rows(t.c.rows[1], t.step.host, t.step.sampled, cfg.k);
}

TEST_CASE("Emulated GPU: a device allocation that fails makes create() throw, naming it", "[gpu][emulated]")
{
    DeviceReset restore;
    Collector c;
    SnapshotConfig cfg;
    cfg.max_rows = 4;
    cfg.max_vocab = 1000;
    jsonlw::emu::fail_allocation_after(1);  // partials succeed, candidates fail
    try {
        (void)SnapshotStage::create(cfg, Backend::cuda, c.sink());
        FAIL("create() succeeded");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) ==
              "SnapshotStage::create: Backend::cuda unavailable: cudaMalloc(candidates): "
              "cudaErrorMemoryAllocation (out of memory)");
    }
    // Backend::automatic never picks the emulated device.
    auto cpu = SnapshotStage::create(cfg, Backend::automatic, c.sink());
    CHECK(cpu->backend() == Backend::cpu);
}

TEST_CASE("Emulated GPU: a batch-1 step is at most two kernel launches", "[gpu][emulated]")
{
    // A launch costs ~2-4 us of CPU and GPU idle at batch 1 (CUDA C++ Best Practices Guide,
    // "Kernel launch overhead"); the fused pass keeps a decode step's capture to the tile pass
    // and its merge. A split that adds a kernel shows here, not in the results.
    const int v = 152064;
    const auto h = random_logits(LogitDType::bf16, 1, v, v, 171);
    const std::uint64_t before = jsonlw::emu::kernel_launches();
    run_and_compare(h, random_sampled(1, v, 172), 20);
    CHECK(jsonlw::emu::kernel_launches() - before == 2u);
}

TEST_CASE("Emulated GPU: the fused pass reads every logit byte of aligned rows once, as vector loads", "[gpu][emulated]")
{
    // rows x vocab x element size through __ldcs, nothing twice; the head and tail elements of
    // a misaligned row and the sampled logit are scalar loads, not counted here. A pass that
    // re-reads the row (a second scan, a fallback taken for plain rows) fails this.
    struct Shape {
        LogitDType dt;
        int rows, vocab;
    };
    for (const Shape s : {Shape{LogitDType::bf16, 2, 152064}, Shape{LogitDType::f16, 2, 32000}, Shape{LogitDType::f32, 3, 4096}}) {
        INFO("dtype " << int(s.dt) << ", " << s.rows << " x " << s.vocab);
        const auto h = random_logits(s.dt, s.rows, s.vocab, s.vocab, 181);
        const std::uint64_t before = jsonlw::emu::streaming_load_bytes();
        run_and_compare(h, random_sampled(s.rows, s.vocab, 182), 20);
        CHECK(jsonlw::emu::streaming_load_bytes() - before ==
              std::uint64_t(s.rows) * std::uint64_t(s.vocab) * itemsize(s.dt));
    }
}
