// The CUDA backend against the CPU reference (docs/emulated-device.md): shapes and
// dtypes, padded and misaligned rows, ties across tiles, NaN/inf rows, edge sampled ids,
// determinism, first-gen bytes and the asynchronous hand-off. Built against cudart (exits 77,
// meson: SKIP, before Catch2 starts when no CUDA device is usable) and against the emulated
// device (tests/snapshot/emu, with gpu_stage_emulated.cpp), where it runs on every machine.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include "gpu_stage_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace gpu_test;

namespace {


// Before main: no device, no test run.
const bool device_checked = [] {
    int err = 0;
    if (cuda_device_count(&err) == 0) {
        std::printf("no CUDA device (cudaGetDeviceCount: error %d): skipped\n", err);
        std::fflush(stdout);
        std::_Exit(77);
    }
    return true;
}();

}  // namespace

TEST_CASE("GPU rows equal the reference over vocab sizes, batches, k and dtypes", "[gpu]")
{
    const int vocabs[] = {1, 31, 1000, 4095, 4097, 32000, 128256, 151936, 152064, 151937, 256000, 262144};
    const LogitDType dtypes[] = {LogitDType::bf16, LogitDType::f16, LogitDType::f32};
    const int ks[] = {1, 20, 64};
    std::uint64_t seed = 1;
    // Trimmed cross product: every vocab with each dtype and k once; batches cycle.
    const int batches[] = {1, 2, 7, 256, 512};
    int bi = 0;
    for (int v : vocabs) {
        for (LogitDType dt : dtypes) {
            const int k = ks[(seed) % 3];
            int rows = batches[bi++ % 5];
            if (std::int64_t(rows) * v > 20'000'000) rows = 32;  // keep host reference time bounded
            const auto h = random_logits(dt, rows, v, v, seed);
            run_and_compare(h, random_sampled(rows, v, seed + 100), k);
            ++seed;
        }
    }
    // The headline shape, all three k.
    for (int k : {1, 64}) {
        const auto h = random_logits(LogitDType::bf16, 256, 152064, 152064, 77 + std::uint64_t(k));
        run_and_compare(h, random_sampled(256, 152064, 5), k);
    }
    std::printf("max |gpu - ref| of lse/logprobs so far: %.3g\n", g_max_abs_err);
}

TEST_CASE("GPU handles padded rows and a base pointer off the 16-byte grid", "[gpu]")
{
    for (LogitDType dt : {LogitDType::bf16, LogitDType::f16, LogitDType::f32}) {
        for (int v : {31, 4097, 152064}) {
            const auto h = random_logits(dt, 7, v, v + 13, 11);
            run_and_compare(h, random_sampled(7, v, 12), 20, 0);
            run_and_compare(h, random_sampled(7, v, 13), 20, 1);
        }
    }
}

TEST_CASE("GPU ties: all-equal rows, quantized rows, equal maxima in different tiles", "[gpu]")
{
    const int v = 152064;
    for (LogitDType dt : {LogitDType::bf16, LogitDType::f32}) {
        HostLogits h(dt, 4, v, v);
        std::mt19937_64 rng(3);
        for (int i = 0; i < v; ++i) {
            h.set(0, i, 1.5f);                                      // all equal
            h.set(1, i, float(rng() % 3) * 0.5f);                   // {0, 0.5, 1}
            h.set(2, i, std::normal_distribution<float>(0, 1)(rng));
            h.set(3, i, (i % 2) ? -0.0f : 0.0f);                    // -0 == +0
        }
        for (int i : {5, 20000, 70000, 151000, 152063}) h.set(2, i, 9.0f);  // tied maxima
        run_and_compare(h, {100, 7, 70000, 3}, 64);
        run_and_compare(h, {0, v - 1, 5, v - 1}, 20);
    }
}

TEST_CASE("GPU special rows: NaN, +inf, -inf masks, all -inf, NaN in a far tile", "[gpu]")
{
    const int v = 152064;
    for (LogitDType dt : {LogitDType::bf16, LogitDType::f16, LogitDType::f32}) {
        auto h = random_logits(dt, 6, v, v, 21);
        const float nan = std::nanf(""), inf = INFINITY;
        h.set(0, 150000, nan);                       // NaN far from the max's tile
        h.set(1, 10, inf);
        h.set(1, 140000, inf);
        for (int i = 0; i < v; ++i) h.set(2, i, -inf);  // fully masked
        for (int i = 0; i < v; i += 2) h.set(3, i, -inf);  // half masked
        for (int i = 0; i < 40000; ++i) h.set(4, i, -inf);  // whole tiles masked
        h.set(5, 3, nan);
        h.set(5, 4, -nan);
        h.set(5, 100000, nan);
        run_and_compare(h, {150000, 10, 5, 0, 1, 3}, 20);  // sampled NaN, +inf, -inf, ...
        run_and_compare(h, {1, 11, v - 1, 1, 50000, 2}, 64);
    }
}

TEST_CASE("GPU rows with NaN and +inf together, and +inf in every tile", "[gpu]")
{
    const int v = 152064;
    const float nan = std::nanf(""), inf = INFINITY;
    for (LogitDType dt : {LogitDType::bf16, LogitDType::f16, LogitDType::f32}) {
        auto h = random_logits(dt, 3, v, v, 131);
        h.set(0, 7, nan);  // NaN leads: lse and every logprob NaN, whatever +inf says
        h.set(0, 150000, inf);
        h.set(1, 100, inf);
        h.set(1, 140000, nan);
        h.set(1, 5, -inf);
        for (int i = 0; i < v; i += 5000) h.set(2, i, inf);
        run_and_compare(h, {150000, 7, 5000}, 20);
        run_and_compare(h, {7, 100, 1}, 64);
    }
}

TEST_CASE("GPU sampled ids at 0, V-1, on a NaN and out of range", "[gpu]")
{
    const int v = 32000;
    auto h = random_logits(LogitDType::bf16, 5, v, v, 31);
    h.set(2, 17, std::nanf(""));
    run_and_compare(h, {0, v - 1, 17, -1, v}, 20);
    run_and_compare(h, {v + 1000000, 0, 0, std::numeric_limits<std::int32_t>::min(), 3}, 1);
}

TEST_CASE("GPU results are bitwise identical across two launches", "[gpu]")
{
    const auto h = random_logits(LogitDType::bf16, 256, 152064, 152064, 41);
    const auto s = random_sampled(256, 152064, 42);
    const auto a = run_and_compare(h, s, 20);
    const auto b = run_and_compare(h, s, 20);
    REQUIRE(std::memcmp(a.rows.data(), b.rows.data(), a.rows.size() * sizeof(TokenSnapshot)) == 0);
}

TEST_CASE("GPU first-gen rows equal the CPU conversion byte for byte", "[gpu]")
{
    const int v = 152064;
    for (FirstGenMode mode : {FirstGenMode::float16_compat, FirstGenMode::float32_exact, FirstGenMode::bfloat16_raw}) {
        for (LogitDType dt : {LogitDType::bf16, LogitDType::f16, LogitDType::f32}) {
            auto h = random_logits(dt, 4, v, v + 3, 51, 20000.f);  // bf16 -> fp16 overflows
            h.set(1, 5, std::nanf(""));
            h.set(1, 6, 70000.f);
            std::vector<RowMeta> meta(4);
            for (int r = 0; r < 4; ++r) meta[std::size_t(r)] = RowMeta{std::uint64_t(r), 0, 0, std::uint8_t(r % 2 ? RowMeta::first_gen : 0)};
            const auto res = run_and_compare(h, random_sampled(4, v, 52), 20, 1, mode, meta);
            REQUIRE(res.first_gen.size() == 2);
            int i = 0;
            for (int r : {1, 3}) {
                std::vector<std::byte> want(first_gen_item_bytes(mode, dt, v));
                const auto over = convert_first_gen_row(h.row(r), dt, v, mode, want.data());
                REQUIRE(res.first_gen[std::size_t(i)] == want);
                REQUIRE(res.overflow[std::size_t(i)] == over);
                ++i;
            }
        }
    }
}

TEST_CASE("GPU capture() returns while its stream is still blocked; the batch comes later", "[gpu]")
{
    const int rows = 64, v = 152064;
    const TestStream ts;
    const cudaStream_t stream = ts.stream;
    StepCapture t(LogitDType::bf16, rows, v, 61, config_for(rows, v), ts.device);
    Collector& c = t.c;
    // Warm up (first launches load modules), then time.
    REQUIRE(t.capture(stream) == CaptureResult::enqueued);
    REQUIRE(t.stage->drain(30s));
    std::vector<double> us;
    for (int i = 0; i < 5; ++i) {
        Gate gate;
        CUDA_OK(cudaLaunchHostFunc(stream, wait_gate, &gate));
        const std::size_t before = c.count();
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = t.capture(stream);
        const auto t1 = std::chrono::steady_clock::now();
        REQUIRE(r == CaptureResult::enqueued);
        REQUIRE(c.count() == before);  // not before the stream got there
        gate.release();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        REQUIRE(t.stage->drain(30s));
        REQUIRE(!gate.timed_out);  // capture() returned with the gate still closed
        REQUIRE(c.count() == before + 1);
        REQUIRE(c.threads.back() != std::this_thread::get_id());
    }
    std::sort(us.begin(), us.end());
    std::printf("capture() behind a blocked stream: min %.1f us, median %.1f us, max %.1f us\n", us[0], us[2], us[4]);
#if !defined(JSONLW_SNAPSHOT_EMULATED_DEVICE)
    CHECK(us[2] < 50.0);  // a real GPU: enqueue calls only
#endif
    const auto st = t.stage->stats();
    CHECK(st.watchdog_fires == 0);
    CHECK(st.delivered_batches == 6);
    std::printf("max |gpu - ref| of lse/logprobs: %.3g\n", g_max_abs_err);
}

TEST_CASE("GPU full ring drops the step instead of waiting", "[gpu]")
{
    SnapshotConfig cfg = config_for(8, 4096);
    cfg.ring_slots = 2;
    const TestStream ts;
    StepCapture t(LogitDType::f32, 8, 4096, 71, cfg, ts.device);
    Gate gate;  // the stream holds both slots until the third capture has returned
    CUDA_OK(cudaLaunchHostFunc(ts.stream, wait_gate, &gate));
    CHECK(t.capture(ts.stream) == CaptureResult::enqueued);
    CHECK(t.capture(ts.stream) == CaptureResult::enqueued);
    CHECK(t.capture(ts.stream) == CaptureResult::dropped);
    gate.release();
    REQUIRE(t.stage->drain(30s));
    CHECK(!gate.timed_out);
    CHECK(t.c.count() == 2);
    CHECK(t.stage->stats().dropped_steps == 1);
    CHECK(t.stage->stats().delivered_batches == 2);
}

TEST_CASE("GPU ties spread over every tile overflow the merge's shared-memory cap and stay exact", "[gpu]")
{
    // Every 12th logit is the row's maximum: each thread of each tile holds one, so every tile
    // lists its ~340 maxima (under its 512-candidate cap) and the merge gets far more than its
    // 2048 shared-memory slots: the global-memory argmax rounds.
    const int v = 152064;
    for (LogitDType dt : {LogitDType::bf16, LogitDType::f32}) {
        auto h = random_logits(dt, 3, v, v, 81, 0.5f);
        for (int r = 0; r < 3; ++r)
            for (int i = r; i < v; i += 12) h.set(r, i, 5.0f);
        run_and_compare(h, {0, 13, v - 1}, 64);
        run_and_compare(h, {12, 1, 152052}, 1);
    }
}

TEST_CASE("GPU candidate counts at the caps: 512 and 513 in one tile, 2048 and 2049 in a merge", "[gpu]")
{
    // fp32, a few rows: 2-vector tiles of 2048 logits (256 threads x 2 vectors x 4). A tile
    // whose every thread holds one of its c maxima lists exactly c candidates (over 512: the
    // exact fallback); tiles that all list their maxima hand the merge the sum (over 2048: the
    // global-memory rounds). Row 0: one tile with 512, row 1: 513; rows 2-3: five tiles
    // summing to 2048 and 2049. Candidate j goes to thread j % 256, its (j / 256)-th slot
    // (vector slot % 2, element slot / 2), so a tile lists them thread by thread.
    const float top = 10.f;
    auto position = [](int tile, int j) {
        const int thread = j % 256, slot = j / 256;
        return tile * 2048 + (thread + (slot % 2) * 256) * 4 + slot / 2;
    };
    auto spread = [&](HostLogits& h, int r, int tile, int count) {
        for (int j = 0; j < count; ++j) h.set(r, position(tile, j), top);
    };
    {
        auto h = random_logits(LogitDType::f32, 2, 2048, 2048, 141, 0.5f);
        spread(h, 0, 0, 512);
        spread(h, 1, 0, 513);
        // The best logit is the one thread 255 lists last: a tile that kept only 512 of its
        // 513 would lose it when threads list in thread order.
        h.set(1, position(0, 511), top + 1.f);
        run_and_compare(h, {0, 2044}, 64);
        run_and_compare(h, {4, 1020}, 1);
    }
    {
        auto h = random_logits(LogitDType::f32, 2, 5 * 2048, 5 * 2048, 142, 0.5f);
        for (int t = 0; t < 5; ++t) {
            spread(h, 0, t, t < 4 ? 410 : 408);  // 2048
            spread(h, 1, t, t < 4 ? 410 : 409);  // 2049
        }
        // The last tile's 256th candidate (thread 127's second): the one the merge's thread 255
        // takes last, so a merge that kept only 2048 of 2049 would lose the best logit.
        h.set(1, 4 * 2048 + (127 + 256) * 4, top + 1.f);
        run_and_compare(h, {0, 5 * 2048 - 4}, 64);
        run_and_compare(h, {8, 3}, 20);
    }
}

TEST_CASE("GPU tiles whose elements sit in only one or two warps, k up to 64", "[gpu]")
{
    // bf16 rows of 500 (62 vectors and a tail of 4: warps 0 and 1 hold elements) and of 250
    // (one warp): the threshold's q = ceil(k / warps) reaches 32 and 64. Large rows first, so a
    // threshold left over from a previous block would be too high for the small rows after.
    for (int v : {500, 250}) {
        HostLogits h(LogitDType::bf16, 8, v, v);
        std::mt19937_64 rng(151);
        for (int r = 0; r < 8; ++r)
            for (int i = 0; i < v; ++i)
                h.set(r, i, float(int(rng() % 2000) - 1000) / 100.f + ((r / 2) % 2 ? -50.f : 50.f));
        std::vector<std::int32_t> sampled(8);
        for (int r = 0; r < 8; ++r) sampled[std::size_t(r)] = (r * 61) % v;
        for (int k : {64, 33, 32, 20}) run_and_compare(h, sampled, k);
    }
}
