// What the GPU suite's cases share (tests/snapshot/gpu_stage.cpp, gpu_stage_emulated.cpp):
// host logits of any dtype, device buffers, a collecting sink, the comparison with
// reference_row, and a gate that holds a stream. Header-only; one copy per test program.
#pragma once

#include <catch2/catch.hpp>

#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace gpu_test {

using namespace jsonlw::snapshot;
using namespace std::chrono_literals;

#define CUDA_OK(expr) REQUIRE((expr) == cudaSuccess)

inline double g_max_abs_err = 0;  // observed logprob/lse error against the reference

inline std::uint16_t f32_to_bf16_trunc(float f)
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
        if (dtype == LogitDType::f32) {
            std::memcpy(p, &x, 4);
        } else if (dtype == LogitDType::bf16) {
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

inline SnapshotConfig config_for(int rows, int vocab)
{
    SnapshotConfig cfg;
    cfg.max_rows = rows;
    cfg.max_vocab = vocab;
    return cfg;
}

inline bool same_class(float a, float b)
{
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return true;
}

inline void check_close(float gpu, float ref, const char* what)
{
    INFO(what << ": gpu " << gpu << " ref " << ref);
    REQUIRE(same_class(gpu, ref));
    if (std::isfinite(ref)) {
        const double d = std::fabs(double(gpu) - double(ref));
        g_max_abs_err = std::max(g_max_abs_err, d);
        REQUIRE(d <= 1e-4 + 1e-5 * std::fabs(double(ref)));
    }
}

inline std::uint32_t bits(float f)
{
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline void compare_row(const TokenSnapshot& g, const TokenSnapshot& ref, int k)
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

// Every row of a delivered batch against reference_row over the same host logits.
inline void compare_rows(const std::vector<TokenSnapshot>& got, const HostLogits& h,
                         const std::vector<std::int32_t>& sampled, int k)
{
    REQUIRE(got.size() == std::size_t(h.rows));
    RowScratch scratch;
    for (int r = 0; r < h.rows; ++r) {
        INFO("dtype " << dtype_name(h.dtype) << " rows " << h.rows << " vocab " << h.vocab << " k " << k
                      << " row " << r << " sampled " << sampled[std::size_t(r)]);
        TokenSnapshot ref{};
        reference_row(h.row(r), h.dtype, h.vocab, sampled[std::size_t(r)], k, ref, scratch);
        compare_row(got[std::size_t(r)], ref, k);
    }
}

struct RunResult {
    std::vector<TokenSnapshot> rows;
    std::vector<std::vector<std::byte>> first_gen;
    std::vector<std::uint32_t> overflow;
};

// Uploads h (optionally one element past an aligned base), captures once on a fresh stage,
// compares every row with reference_row, returns the GPU rows.
inline RunResult run_and_compare(const HostLogits& h, const std::vector<std::int32_t>& sampled, int k,
                          std::size_t base_offset_elems = 0,
                          FirstGenMode fg = FirstGenMode::off, std::vector<RowMeta> meta = {})
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
    auto stage = SnapshotStage::create(cfg, Backend::cuda, c.sink());
    if (meta.empty()) {
        meta.resize(std::size_t(h.rows));
        for (int r = 0; r < h.rows; ++r) meta[std::size_t(r)] = RowMeta{std::uint64_t(r) + 7, 0, 1, 0};
    }
    const LogitsView v{base, h.dtype, h.rows, h.vocab, h.stride, device};
    REQUIRE(stage->capture(v, static_cast<const std::int32_t*>(ds.p), meta, nullptr) ==
            CaptureResult::enqueued);
    REQUIRE(stage->drain(120s));  // generous: an emulated step of 512 rows on a loaded machine
    REQUIRE(c.count() == 1);
    REQUIRE(!c.failed[0]);
    INFO("last_error: " << stage->stats().last_error);
    const auto& g = c.rows[0];
    REQUIRE(g.size() == std::size_t(h.rows));
    compare_rows(g, h, sampled, k);
    for (int r = 0; r < h.rows; ++r) {
        REQUIRE(g[std::size_t(r)].request_id == meta[std::size_t(r)].request_id);
        REQUIRE(g[std::size_t(r)].row_flags == meta[std::size_t(r)].flags);
    }
    return RunResult{g, c.first_gen.empty() ? std::vector<std::vector<std::byte>>{} : c.first_gen[0],
                     c.overflow};
}

inline HostLogits random_logits(LogitDType dt, int rows, int vocab, std::int64_t stride, std::uint64_t seed,
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

inline std::vector<std::int32_t> random_sampled(int rows, int vocab, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::int32_t> s(static_cast<std::size_t>(rows));
    for (auto& x : s) x = std::int32_t(rng() % std::uint64_t(vocab));
    return s;
}

// One seeded step (rows x vocab logits, stride vocab; sampled ids seeded with seed + 1) on the
// host, for the reference, and its copy on the device, for capture().
struct RandomStep {
    HostLogits host;
    std::vector<std::int32_t> sampled;
    DeviceStep device;

    RandomStep(LogitDType dt, int rows, int vocab, std::uint64_t seed)
        : host(random_logits(dt, rows, vocab, vocab, seed)),
          sampled(random_sampled(rows, vocab, seed + 1)), device(host, sampled)
    {
    }
    LogitsView view(int device_id) const
    {
        return LogitsView{device.logits.p, host.dtype, host.rows, host.vocab, host.vocab,
                          device_id};
    }
};

// A seeded step and what captures it: a collector, a CUDA-backend stage made from `config`, and
// the rows' meta. capture(stream) captures the step once, on `stream`, from `device_id`.
struct StepCapture {
    StepCapture(LogitDType dt, int rows, int vocab, std::uint64_t seed, const SnapshotConfig& config,
                int device_id = 0)
        : step(dt, rows, vocab, seed), view(step.view(device_id)), meta(std::size_t(rows)),
          stage(SnapshotStage::create(config, Backend::cuda, c.sink()))
    {
    }
    CaptureResult capture(cudaStream_t stream)
    {
        return stage->capture(view, step.device.ids(), meta, stream);
    }

    const RandomStep step;
    const LogitsView view;
    std::vector<RowMeta> meta;
    Collector c;
    std::unique_ptr<SnapshotStage> stage;  // last: destroyed first
};

// A non-blocking stream on the current device, destroyed with this object (declare it before
// the stage that captures on it).
struct TestStream {
    int device = 0;
    cudaStream_t stream = nullptr;

    TestStream()
    {
        CUDA_OK(cudaGetDevice(&device));
        CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }
    ~TestStream() { cudaStreamDestroy(stream); }
    TestStream(const TestStream&) = delete;
    TestStream& operator=(const TestStream&) = delete;
};

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
inline void CUDART_CB wait_gate(void* p)
{
    auto* g = static_cast<Gate*>(p);
    std::unique_lock lock(g->m);
    if (!g->cv.wait_for(lock, 10s, [g] { return g->open; })) g->timed_out = true;
}

}  // namespace gpu_test
