// The CUDA backend against the CPU reference (docs/snapshot.md §4.6, GPU list): shapes and
// dtypes, padded and misaligned rows, ties across tiles, NaN/inf rows, edge sampled ids,
// determinism, first-gen bytes and the asynchronous hand-off. Built twice: against cudart
// (exits 77, meson: SKIP, before Catch2 starts when no CUDA device is usable) and against the
// emulated device (tests/snapshot/emu, JSONLW_SNAPSHOT_EMULATED_DEVICE), where it runs on every
// machine and adds what only an emulator can do: schedule seeds, stalled streams, faults.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <cuda_runtime_api.h>
#if defined(JSONLW_SNAPSHOT_EMULATED_DEVICE)
#include <jsonlw_emu/faults.hpp>
#include <jsonlw_emu/simt.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace jsonlw::snapshot;
using namespace std::chrono_literals;

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

#define CUDA_OK(expr) REQUIRE((expr) == cudaSuccess)

double g_max_abs_err = 0;  // observed logprob/lse error against the reference

std::uint16_t f32_to_bf16_trunc(float f)
{
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<std::uint16_t>(u >> 16);
}

// A host matrix of one dtype, rows x stride elements, made from fp32 values.
struct HostLogits {
    LogitDType dtype;
    int rows, vocab;
    std::int64_t stride;
    std::vector<std::byte> bytes;

    HostLogits(LogitDType dt, int r, int v, std::int64_t s)
        : dtype(dt), rows(r), vocab(v), stride(s), bytes(std::size_t(r) * std::size_t(s) * itemsize(dt))
    {
    }
    void set(int r, int i, float x)
    {
        std::byte* p = bytes.data() + (std::size_t(r) * std::size_t(stride) + std::size_t(i)) * itemsize(dtype);
        if (dtype == LogitDType::F32) {
            std::memcpy(p, &x, 4);
        } else if (dtype == LogitDType::BF16) {
            const std::uint16_t h = f32_to_bf16_trunc(x);
            std::memcpy(p, &h, 2);
        } else {
            bool o;
            const std::uint16_t h = f32_to_f16_rne(x, &o);
            std::memcpy(p, &h, 2);
        }
    }
    const void* row(int r) const
    {
        return bytes.data() + std::size_t(r) * std::size_t(stride) * itemsize(dtype);
    }
};

// Collects batches; copies the rows out so the lease can go at once.
struct Collector {
    std::mutex m;
    std::condition_variable cv;
    std::vector<std::vector<TokenSnapshot>> rows;
    std::vector<std::vector<std::vector<std::byte>>> first_gen;
    std::vector<std::uint32_t> overflow;
    std::vector<bool> failed;
    std::vector<std::thread::id> threads;

    BatchSink sink()
    {
        return [this](SnapshotBatch&& b) {
            std::vector<TokenSnapshot> r(b.rows.begin(), b.rows.end());
            std::vector<std::vector<std::byte>> fg;
            for (const auto& f : b.first_gen) fg.emplace_back(f.bytes.begin(), f.bytes.end());
            std::lock_guard lock(m);
            for (const auto& f : b.first_gen) overflow.push_back(f.overflow_to_inf);
            rows.push_back(std::move(r));
            first_gen.push_back(std::move(fg));
            failed.push_back(b.failed);
            threads.push_back(std::this_thread::get_id());
            cv.notify_all();
        };
    }
    std::size_t count()
    {
        std::lock_guard lock(m);
        return rows.size();
    }
};

struct DeviceBuffer {
    void* p = nullptr;
    explicit DeviceBuffer(std::size_t n) { REQUIRE(cudaMalloc(&p, n + 64) == cudaSuccess); }
    ~DeviceBuffer() { cudaFree(p); }
};

// A host matrix and its sampled ids, copied to device memory.
struct DeviceStep {
    DeviceBuffer logits, sampled;
    DeviceStep(const HostLogits& h, const std::vector<std::int32_t>& s)
        : logits(h.bytes.size()), sampled(s.size() * 4)
    {
        CUDA_OK(cudaMemcpy(logits.p, h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(sampled.p, s.data(), s.size() * 4, cudaMemcpyHostToDevice));
    }
    const std::int32_t* ids() const { return static_cast<const std::int32_t*>(sampled.p); }
};

SnapshotConfig config_for(int rows, int vocab)
{
    SnapshotConfig cfg;
    cfg.max_rows = rows;
    cfg.max_vocab = vocab;
    return cfg;
}

bool same_class(float a, float b)
{
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return true;
}

void check_close(float gpu, float ref, const char* what)
{
    INFO(what << ": gpu " << gpu << " ref " << ref);
    REQUIRE(same_class(gpu, ref));
    if (std::isfinite(ref)) {
        const double d = std::fabs(double(gpu) - double(ref));
        g_max_abs_err = std::max(g_max_abs_err, d);
        REQUIRE(d <= 1e-4 + 1e-5 * std::fabs(double(ref)));
    }
}

std::uint32_t bits(float f)
{
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

void compare_row(const TokenSnapshot& g, const TokenSnapshot& ref, int k)
{
    REQUIRE(g.sampled_id == ref.sampled_id);
    REQUIRE(g.sampled_rank == ref.sampled_rank);
    REQUIRE(g.nan_count == ref.nan_count);
    REQUIRE(g.posinf_count == ref.posinf_count);
    REQUIRE(g.status_flags == ref.status_flags);
    REQUIRE(int(g.k) == k);
    REQUIRE(same_class(g.sampled_logit, ref.sampled_logit));
    if (!std::isnan(ref.sampled_logit)) REQUIRE(bits(g.sampled_logit) == bits(ref.sampled_logit));
    check_close(g.lse, ref.lse, "lse");
    check_close(g.sampled_logprob, ref.sampled_logprob, "sampled_logprob");
    for (int j = 0; j < k; ++j) {
        INFO("top-k index " << j);
        REQUIRE(g.topk_ids[j] == ref.topk_ids[j]);
        REQUIRE(bits(g.topk_logits[j]) == bits(ref.topk_logits[j]));
        check_close(g.topk_logprobs[j], ref.topk_logprobs[j], "topk_logprob");
    }
}

struct RunResult {
    std::vector<TokenSnapshot> rows;
    std::vector<std::vector<std::byte>> first_gen;
    std::vector<std::uint32_t> overflow;
};

// Uploads h (optionally one element past an aligned base), captures once on a fresh stage,
// compares every row with reference_row, returns the GPU rows.
RunResult run_and_compare(const HostLogits& h, const std::vector<std::int32_t>& sampled, int k,
                          std::size_t base_offset_elems = 0,
                          FirstGenMode fg = FirstGenMode::Off, std::vector<RowMeta> meta = {})
{
    const std::size_t es = itemsize(h.dtype);
    DeviceBuffer dl(h.bytes.size() + base_offset_elems * es);
    DeviceBuffer ds(sampled.size() * 4);
    auto* base = static_cast<std::byte*>(dl.p) + base_offset_elems * es;
    CUDA_OK(cudaMemcpy(base, h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(ds.p, sampled.data(), sampled.size() * 4, cudaMemcpyHostToDevice));
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));

    Collector c;
    SnapshotConfig cfg;
    cfg.k = k;
    cfg.max_rows = std::max(h.rows, 1);
    cfg.max_vocab = std::max(h.vocab, 1);
    cfg.first_gen = fg;
    cfg.max_first_gen_rows_per_step = std::max(h.rows, 1);
    auto stage = SnapshotStage::create(cfg, Backend::Cuda, c.sink());
    if (meta.empty()) {
        meta.resize(std::size_t(h.rows));
        for (int r = 0; r < h.rows; ++r) meta[std::size_t(r)] = RowMeta{std::uint64_t(r) + 7, 0, 1, 0};
    }
    const LogitsView v{base, h.dtype, h.rows, h.vocab, h.stride, device};
    REQUIRE(stage->capture(v, static_cast<const std::int32_t*>(ds.p), meta, nullptr) ==
            CaptureResult::Enqueued);
    REQUIRE(stage->drain(120s));  // generous: an emulated step of 512 rows on a loaded machine
    REQUIRE(c.count() == 1);
    REQUIRE(!c.failed[0]);
    INFO("last_error: " << stage->stats().last_error);
    const auto& g = c.rows[0];
    REQUIRE(g.size() == std::size_t(h.rows));
    RowScratch scratch;
    for (int r = 0; r < h.rows; ++r) {
        INFO("dtype " << dtype_name(h.dtype) << " rows " << h.rows << " vocab " << h.vocab << " k " << k
                      << " row " << r << " sampled " << sampled[std::size_t(r)]);
        TokenSnapshot ref{};
        reference_row(h.row(r), h.dtype, h.vocab, sampled[std::size_t(r)], k, ref, scratch);
        REQUIRE(g[std::size_t(r)].request_id == meta[std::size_t(r)].request_id);
        REQUIRE(g[std::size_t(r)].row_flags == meta[std::size_t(r)].flags);
        compare_row(g[std::size_t(r)], ref, k);
    }
    return RunResult{g, c.first_gen.empty() ? std::vector<std::vector<std::byte>>{} : c.first_gen[0],
                     c.overflow};
}

HostLogits random_logits(LogitDType dt, int rows, int vocab, std::int64_t stride, std::uint64_t seed,
                         float sigma = 3.f)
{
    // Cheap and roughly normal(0, sigma): four uniform bytes summed (std::normal_distribution
    // over 10^8 values would dominate the test's run time).
    HostLogits h(dt, rows, vocab, stride);
    std::mt19937_64 rng(seed);
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < vocab; ++i) {
            const std::uint64_t u = rng();
            const float sum = float(u & 0xff) + float((u >> 8) & 0xff) + float((u >> 16) & 0xff) +
                              float((u >> 24) & 0xff) + float((u >> 32) & 0xffff) / 65536.f;
            h.set(r, i, (sum / 255.f - 2.f) * 1.7f * sigma);
        }
    return h;
}

std::vector<std::int32_t> random_sampled(int rows, int vocab, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::int32_t> s(static_cast<std::size_t>(rows));
    for (auto& x : s) x = std::int32_t(rng() % std::uint64_t(vocab));
    return s;
}

}  // namespace

TEST_CASE("GPU rows equal the reference over vocab sizes, batches, k and dtypes", "[gpu]")
{
    const int vocabs[] = {1, 31, 1000, 4095, 4097, 32000, 128256, 151936, 152064, 151937, 256000, 262144};
    const LogitDType dtypes[] = {LogitDType::BF16, LogitDType::F16, LogitDType::F32};
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
        const auto h = random_logits(LogitDType::BF16, 256, 152064, 152064, 77 + std::uint64_t(k));
        run_and_compare(h, random_sampled(256, 152064, 5), k);
    }
    std::printf("max |gpu - ref| of lse/logprobs so far: %.3g\n", g_max_abs_err);
}

TEST_CASE("GPU handles padded rows and a base pointer off the 16-byte grid", "[gpu]")
{
    for (LogitDType dt : {LogitDType::BF16, LogitDType::F16, LogitDType::F32}) {
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
    for (LogitDType dt : {LogitDType::BF16, LogitDType::F32}) {
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
    for (LogitDType dt : {LogitDType::BF16, LogitDType::F16, LogitDType::F32}) {
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
    for (LogitDType dt : {LogitDType::BF16, LogitDType::F16, LogitDType::F32}) {
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
    auto h = random_logits(LogitDType::BF16, 5, v, v, 31);
    h.set(2, 17, std::nanf(""));
    run_and_compare(h, {0, v - 1, 17, -1, v}, 20);
    run_and_compare(h, {v + 1000000, 0, 0, std::numeric_limits<std::int32_t>::min(), 3}, 1);
}

TEST_CASE("GPU results are bitwise identical across two launches", "[gpu]")
{
    const auto h = random_logits(LogitDType::BF16, 256, 152064, 152064, 41);
    const auto s = random_sampled(256, 152064, 42);
    const auto a = run_and_compare(h, s, 20);
    const auto b = run_and_compare(h, s, 20);
    REQUIRE(std::memcmp(a.rows.data(), b.rows.data(), a.rows.size() * sizeof(TokenSnapshot)) == 0);
}

TEST_CASE("GPU first-gen rows equal the CPU conversion byte for byte", "[gpu]")
{
    const int v = 152064;
    for (FirstGenMode mode : {FirstGenMode::Float16Compat, FirstGenMode::Float32Exact, FirstGenMode::BFloat16Raw}) {
        for (LogitDType dt : {LogitDType::BF16, LogitDType::F16, LogitDType::F32}) {
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

namespace {
// Stream work that ends only when the test opens it (or after 10 s, which the test then sees):
// a capture() that waited for its stream could not return before the gate opened.
struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    bool timed_out = false;
    void release()
    {
        std::lock_guard lock(m);
        open = true;
        cv.notify_all();
    }
};
void CUDART_CB wait_gate(void* p)
{
    auto* g = static_cast<Gate*>(p);
    std::unique_lock lock(g->m);
    if (!g->cv.wait_for(lock, 10s, [g] { return g->open; })) g->timed_out = true;
}
}  // namespace

TEST_CASE("GPU capture() returns while its stream is still blocked; the batch comes later", "[gpu]")
{
    const int rows = 64, v = 152064;
    const auto h = random_logits(LogitDType::BF16, rows, v, v, 61);
    const auto s = random_sampled(rows, v, 62);
    const DeviceStep step(h, s);
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    auto stage = SnapshotStage::create(cfg, Backend::Cuda, c.sink());
    std::vector<RowMeta> meta(rows);
    const LogitsView view{step.logits.p, LogitDType::BF16, rows, v, v, device};
    // Warm up (first launches load modules), then time.
    REQUIRE(stage->capture(view, step.ids(), meta, stream) == CaptureResult::Enqueued);
    REQUIRE(stage->drain(30s));
    std::vector<double> us;
    for (int i = 0; i < 5; ++i) {
        Gate gate;
        CUDA_OK(cudaLaunchHostFunc(stream, wait_gate, &gate));
        const std::size_t before = c.count();
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = stage->capture(view, step.ids(), meta, stream);
        const auto t1 = std::chrono::steady_clock::now();
        REQUIRE(r == CaptureResult::Enqueued);
        REQUIRE(c.count() == before);  // not before the stream got there
        gate.release();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        REQUIRE(stage->drain(30s));
        REQUIRE(!gate.timed_out);  // capture() returned with the gate still closed
        REQUIRE(c.count() == before + 1);
        REQUIRE(c.threads.back() != std::this_thread::get_id());
    }
    std::sort(us.begin(), us.end());
    std::printf("capture() behind a blocked stream: min %.1f us, median %.1f us, max %.1f us\n", us[0], us[2], us[4]);
#if !defined(JSONLW_SNAPSHOT_EMULATED_DEVICE)
    CHECK(us[2] < 50.0);  // a real GPU: enqueue calls only
#endif
    const auto st = stage->stats();
    CHECK(st.watchdog_fires == 0);
    CHECK(st.delivered_batches == 6);
    stage.reset();
    cudaStreamDestroy(stream);
    std::printf("max |gpu - ref| of lse/logprobs: %.3g\n", g_max_abs_err);
}

TEST_CASE("GPU full ring drops the step instead of waiting", "[gpu]")
{
    const int rows = 8, v = 4096;
    const auto h = random_logits(LogitDType::F32, rows, v, v, 71);
    const auto s = random_sampled(rows, v, 72);
    const DeviceStep step(h, s);
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    cfg.ring_slots = 2;
    auto stage = SnapshotStage::create(cfg, Backend::Cuda, c.sink());
    std::vector<RowMeta> meta(rows);
    const LogitsView view{step.logits.p, LogitDType::F32, rows, v, v, device};
    Gate gate;  // the stream holds both slots until the third capture has returned
    CUDA_OK(cudaLaunchHostFunc(stream, wait_gate, &gate));
    CHECK(stage->capture(view, step.ids(), meta, stream) == CaptureResult::Enqueued);
    CHECK(stage->capture(view, step.ids(), meta, stream) == CaptureResult::Enqueued);
    CHECK(stage->capture(view, step.ids(), meta, stream) == CaptureResult::Dropped);
    gate.release();
    REQUIRE(stage->drain(30s));
    CHECK(!gate.timed_out);
    CHECK(c.count() == 2);
    CHECK(stage->stats().dropped_steps == 1);
    CHECK(stage->stats().delivered_batches == 2);
    stage.reset();
    cudaStreamDestroy(stream);
}

TEST_CASE("GPU ties spread over every tile overflow the merge's shared-memory cap and stay exact", "[gpu]")
{
    // Every 12th logit is the row's maximum: each thread of each tile holds one, so every tile
    // lists its ~340 maxima (under its 512-candidate cap) and the merge gets far more than its
    // 2048 shared-memory slots: the global-memory argmax rounds.
    const int v = 152064;
    for (LogitDType dt : {LogitDType::BF16, LogitDType::F32}) {
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
        auto h = random_logits(LogitDType::F32, 2, 2048, 2048, 141, 0.5f);
        spread(h, 0, 0, 512);
        spread(h, 1, 0, 513);
        // The best logit is the one thread 255 lists last: a tile that kept only 512 of its
        // 513 would lose it when threads list in thread order.
        h.set(1, position(0, 511), top + 1.f);
        run_and_compare(h, {0, 2044}, 64);
        run_and_compare(h, {4, 1020}, 1);
    }
    {
        auto h = random_logits(LogitDType::F32, 2, 5 * 2048, 5 * 2048, 142, 0.5f);
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
        HostLogits h(LogitDType::BF16, 8, v, v);
        std::mt19937_64 rng(151);
        for (int r = 0; r < 8; ++r)
            for (int i = 0; i < v; ++i)
                h.set(r, i, float(int(rng() % 2000) - 1000) / 100.f + ((r / 2) % 2 ? -50.f : 50.f));
        std::vector<std::int32_t> sampled(8);
        for (int r = 0; r < 8; ++r) sampled[std::size_t(r)] = (r * 61) % v;
        for (int k : {64, 33, 32, 20}) run_and_compare(h, sampled, k);
    }
}

#if defined(JSONLW_SNAPSHOT_EMULATED_DEVICE)
namespace {
// Restores the emulated device after a case that broke it on purpose.
struct DeviceReset {
    std::uint64_t seed = jsonlw::emu::schedule_seed();  // $JSONLW_EMU_SEED of this run
    ~DeviceReset()
    {
        jsonlw::emu::reset_device();
        jsonlw::emu::set_schedule_seed(seed);
    }
};
}  // namespace

TEST_CASE("Emulated GPU: the same bits under every schedule seed", "[gpu][emulated]")
{
    DeviceReset restore;
    struct Case {
        HostLogits h;
        std::vector<std::int32_t> sampled;
        int k;
    };
    std::vector<Case> cases;
    cases.push_back({random_logits(LogitDType::BF16, 8, 152064, 152064, 91), random_sampled(8, 152064, 92), 20});
    cases.push_back({random_logits(LogitDType::F16, 3, 4097, 4097 + 5, 93), random_sampled(3, 4097, 94), 64});
    {
        HostLogits t(LogitDType::F32, 2, 32000, 32000);
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

TEST_CASE("Emulated GPU: plain rows take the fast path, 31 warp collectives per warp and tile, none to merge", "[gpu][emulated]")
{
    // Per warp of a partial CTA: two 5-step butterflies (max, sum of exp), the 15-step bitonic
    // sort of thread maxima, one ballot, the rank's butterfly. The exact fallback (NaN, +inf,
    // over 512 candidates) adds k rounds; the merge's fallback, a round per top-k entry. A
    // threshold that lets too many candidates through shows here, not in the results.
    const int rows = 4, v = 152064, k = 20;
    const auto h = random_logits(LogitDType::BF16, rows, v, v, 161);
    int sm = 0;
    CUDA_OK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    const int tiles = (v / 8 + 256 * 2 - 1) / (256 * 2);  // 2-vector tiles: a small batch
    REQUIRE(rows * ((v / 8 + 2047) / 2048) < 2 * sm);
    const std::uint64_t before = jsonlw::emu::warp_collectives();
    run_and_compare(h, random_sampled(rows, v, 162), k);
    CHECK(jsonlw::emu::warp_collectives() - before == std::uint64_t(rows) * std::uint64_t(tiles) * 8u * 31u);
}

TEST_CASE("Emulated GPU: the watchdog delivers a slot whose host function never runs", "[gpu][emulated]")
{
    DeviceReset restore;
    const int rows = 4, v = 4096;
    const auto h = random_logits(LogitDType::F32, rows, v, v, 101);
    const auto s = random_sampled(rows, v, 102);
    const DeviceStep step(h, s);
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    cfg.watchdog = 50ms;
    // The stage's copy stream (made inside create()) holds its first host function: the copy
    // and its event complete, the completion callback does not come.
    jsonlw::emu::stall_new_streams(true, jsonlw::emu::StallAt::next_host_func);
    auto stage = SnapshotStage::create(cfg, Backend::Cuda, c.sink());
    jsonlw::emu::stall_new_streams(false);
    std::vector<RowMeta> meta(rows);
    const LogitsView view{step.logits.p, LogitDType::F32, rows, v, v, 0};
    REQUIRE(stage->capture(view, step.ids(), meta, nullptr) == CaptureResult::Enqueued);
    REQUIRE(stage->drain(30s));
    REQUIRE(c.count() == 1);
    CHECK(!c.failed[0]);
    CHECK(stage->stats().watchdog_fires == 1);
    RowScratch scratch;
    for (int r = 0; r < rows; ++r) {
        TokenSnapshot ref{};
        reference_row(h.row(r), h.dtype, v, s[std::size_t(r)], cfg.k, ref, scratch);
        compare_row(c.rows[0][std::size_t(r)], ref, cfg.k);
    }
    jsonlw::emu::release_all_streams();  // the late host function finds its slot delivered
    stage.reset();
    CHECK(c.count() == 1);
}

TEST_CASE("Emulated GPU: a kernel that reads past the logits fails its batch, named by memcheck", "[gpu][emulated]")
{
    DeviceReset restore;
    const int rows = 2, v = 4096;
    const auto h = random_logits(LogitDType::F32, rows, v, v, 111);
    const auto s = random_sampled(rows, v, 112);
    void* short_logits = nullptr;  // one and a half rows of the two the view claims
    CUDA_OK(cudaMalloc(&short_logits, std::size_t(v) * 4 * 3 / 2));
    const DeviceStep step(h, s);  // its own logits unused: the view points at short_logits
    CUDA_OK(cudaMemcpy(short_logits, h.bytes.data(), std::size_t(v) * 4 * 3 / 2, cudaMemcpyHostToDevice));
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    cfg.watchdog = 50ms;
    auto stage = SnapshotStage::create(cfg, Backend::Cuda, c.sink());
    std::vector<RowMeta> meta(rows);
    const LogitsView view{short_logits, LogitDType::F32, rows, v, v, 0};
    (void)jsonlw::emu::take_kernel_report();
    // The kernel runs only after capture() returned (else its sticky error may reach one of
    // capture()'s own calls, which then fail the step themselves): the watchdog's case.
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Gate gate;
    CUDA_OK(cudaLaunchHostFunc(stream, wait_gate, &gate));
    REQUIRE(stage->capture(view, step.ids(), meta, stream) == CaptureResult::Enqueued);
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
    const int rows = 3, v = 1000;
    const auto h = random_logits(LogitDType::BF16, rows, v, v, 121);
    const auto s = random_sampled(rows, v, 122);
    const DeviceStep step(h, s);
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    auto stage = SnapshotStage::create(cfg, Backend::Cuda, c.sink());
    std::vector<RowMeta> meta(rows);
    const LogitsView view{step.logits.p, LogitDType::BF16, rows, v, v, 0};
    jsonlw::emu::fail_next_launch(cudaErrorLaunchOutOfResources);
    REQUIRE(stage->capture(view, step.ids(), meta, nullptr) == CaptureResult::Enqueued);
    REQUIRE(stage->capture(view, step.ids(), meta, nullptr) == CaptureResult::Enqueued);
    REQUIRE(stage->drain(30s));
    REQUIRE(c.count() == 2);
    CHECK(c.failed[0]);
    CHECK(!c.failed[1]);
    CHECK(stage->stats().last_error == "kernel launch: cudaErrorLaunchOutOfResources (too many resources requested for launch)");
    RowScratch scratch;
    for (int r = 0; r < rows; ++r) {
        TokenSnapshot ref{};
        reference_row(h.row(r), h.dtype, v, s[std::size_t(r)], cfg.k, ref, scratch);
        compare_row(c.rows[1][std::size_t(r)], ref, cfg.k);
    }
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
        (void)SnapshotStage::create(cfg, Backend::Cuda, c.sink());
        FAIL("create() succeeded");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) ==
              "SnapshotStage::create: Backend::Cuda unavailable: cudaMalloc(candidates): "
              "cudaErrorMemoryAllocation (out of memory)");
    }
    // Backend::Auto never picks the emulated device.
    auto cpu = SnapshotStage::create(cfg, Backend::Auto, c.sink());
    CHECK(cpu->backend() == Backend::Cpu);
}
#endif
