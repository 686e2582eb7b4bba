// jsonlw-bench-gpu: the snapshot stage on a GPU (docs/snapshot.md, "Speed"), as JSON.
//   jsonlw-bench-gpu [--quick] [--json FILE]
//   jsonlw-bench-gpu --profile      (one step per profile shape, for ncu; prints the shapes)
// Reports the device, the measured read and D2D copy ceilings, the fused pass (partial, merge,
// both) over a grid of shapes with % of 4.8 TB/s and % of the measured read ceiling beside the
// predicted time (traffic_model.hpp: the bytes the step moves at 4.8 TB/s), a naive
// multi-pass baseline on the same data, capture() host latency behind a busy stream, and the
// first-gen D2H rate. Without a device it writes {"device": null, ...} and exits 0.
#include "../../lib/snapshot/cuda/kernels.hpp"
#include "bench_kernels.hpp"
#include "traffic_model.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw::snapshot;
namespace cd = jsonlw::snapshot::cuda_detail;
namespace bk = jsonlw_bench_gpu;

namespace {

constexpr double kPeakBytesPerS = bk::kH200BytesPerS;

#define CK(expr)                                                                       \
    do {                                                                               \
        const cudaError_t e_ = (expr);                                                 \
        if (e_ != cudaSuccess) {                                                       \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,         \
                         cudaGetErrorString(e_));                                      \
            std::exit(1);                                                              \
        }                                                                              \
    } while (0)

struct Pct {
    double p10, p50, p90;
};
Pct percentiles(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))]; };
    return {at(0.1), at(0.5), at(0.9)};
}

std::string num(double x)
{
    char b[64];
    std::snprintf(b, sizeof b, "%.6g", x);
    return b;
}

// Times `body` (enqueued on s) with events: warmup, then iters samples, in microseconds.
template <class F>
std::vector<double> time_us(cudaStream_t s, int warmup, int iters, F&& body)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < warmup; ++i) body(i);
    std::vector<double> out;
    for (int i = 0; i < iters; ++i) {
        CK(cudaEventRecord(a, s));
        body(i);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        out.push_back(double(ms) * 1000.0);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return out;
}

// The candidate keys each (row, tile) of a step wrote (TilePartial::n), read back.
std::vector<std::uint32_t> candidates_written(const cd::TilePartial* partials, std::size_t tiles)
{
    std::vector<cd::TilePartial> h(tiles);
    CK(cudaMemcpy(h.data(), partials, tiles * sizeof(cd::TilePartial), cudaMemcpyDeviceToHost));
    std::vector<std::uint32_t> n(tiles);
    for (std::size_t i = 0; i < tiles; ++i) n[i] = h[i].n;
    return n;
}

// --profile: one step of each shape below, nothing timed, for `ncu --kernel-name
// regex:"partial_kernel|merge_kernel"` (bench/gpu/run.sh): one line per shape with the
// model's prediction, in launch order, so ncu's rows can be matched to shapes.
int run_profile(int sms)
{
    struct Shape {
        LogitDType dt;
        int rows, vocab, offset;  // offset: elements between the allocation and row 0
    };
    const Shape shapes[] = {{LogitDType::bf16, 1, 152064, 0},   {LogitDType::bf16, 256, 152064, 0},
                            {LogitDType::f16, 256, 152064, 0},  {LogitDType::f32, 256, 152064, 0},
                            {LogitDType::bf16, 256, 152064, 1}};
    const std::size_t max_bytes = 256ull * 152064 * 4 + 64;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    void* logits;
    std::int32_t* sampled;
    cd::TilePartial* partials;
    std::uint64_t* cands;
    TokenSnapshot* out;
    const std::size_t tile_rows = cd::max_tile_rows(256, 152064, sms);
    CK(cudaMalloc(&logits, max_bytes));
    CK(cudaMalloc(&sampled, 256 * 4));
    CK(cudaMalloc(&partials, tile_rows * sizeof(cd::TilePartial)));
    CK(cudaMalloc(&cands, tile_rows * cd::tile_candidates * 8));
    CK(cudaMalloc(&out, 256 * sizeof(TokenSnapshot)));
    std::vector<std::int32_t> ids(256);
    for (int i = 0; i < 256; ++i) ids[std::size_t(i)] = (i * 7919) % 128000;
    CK(cudaMemcpy(sampled, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
    for (const Shape& sh : shapes) {
        const std::size_t es = itemsize(sh.dt);
        bk::fill(logits, int(sh.dt), max_bytes / es, 7, 3.f, st);
        cd::StepArgs a;
        a.logits = static_cast<const char*>(logits) + std::size_t(sh.offset) * es;
        a.dtype = sh.dt;
        a.rows = sh.rows;
        a.vocab = sh.vocab;
        a.row_stride = sh.vocab;
        a.sampled = sampled;
        a.k = 20;
        a.partials = partials;
        a.candidates = cands;
        a.out = out;
        const cd::StepPlan plan = cd::plan_step(sh.dt, sh.vocab, sh.rows, sms);
        CK(cd::launch_step(a, plan, st));
        CK(cudaStreamSynchronize(st));
        const auto t = bk::step_traffic(a, candidates_written(partials, std::size_t(sh.rows) * std::size_t(plan.tiles)));
        std::printf("profile %s rows=%d vocab=%d offset=%d k=20 tiles=%d: logit bytes %llu, moved %llu, "
                    "predicted %.2f us (%.1f %% of 4.8 TB/s)\n",
                    dtype_name(sh.dt), sh.rows, sh.vocab, sh.offset, plan.tiles,
                    (unsigned long long)t.logit_bytes, (unsigned long long)t.moved_bytes(), t.predicted_us(),
                    100.0 * t.predicted_share());
    }
    CK(cudaGetLastError());
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    bool quick = false, profile = false;
    std::string json_path;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") quick = true;
        else if (a == "--profile") profile = true;
        else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--quick] [--json FILE] | --profile\n", argv[0]);
            return 2;
        }
    }
    std::ostringstream js;
    auto emit = [&] {
        const std::string s = js.str();
        std::cout << s << "\n";
        if (!json_path.empty()) std::ofstream(json_path) << s << "\n";
    };

    int err = 0;
    if (cuda_device_count(&err) == 0) {
        std::fprintf(stderr, "jsonlw-bench-gpu: no CUDA device (cudaGetDeviceCount: error %d)\n", err);
        js << "{\"device\":null,\"error\":\"no CUDA device (cudaGetDeviceCount: error " << err << ")\"}";
        emit();
        return 0;
    }

    const auto t_start = std::chrono::steady_clock::now();
    int dev = 0;
    if (profile) {
        cudaDeviceProp p{};
        CK(cudaGetDeviceProperties(&p, 0));
        return run_profile(p.multiProcessorCount);
    }
    CK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, dev));
    int clock_khz = 0, mem_khz = 0, bus_bits = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
    const double theo = 2.0 * double(mem_khz) * 1e3 * double(bus_bits) / 8.0;
    const int sms = prop.multiProcessorCount;
    js << "{\"device\":{\"name\":\"" << prop.name << "\",\"sm_count\":" << sms
       << ",\"cc\":\"" << prop.major << "." << prop.minor << "\",\"l2_bytes\":" << prop.l2CacheSize
       << ",\"global_mem_bytes\":" << prop.totalGlobalMem << ",\"bus_width_bits\":" << bus_bits
       << ",\"mem_clock_khz\":" << mem_khz << ",\"sm_clock_khz\":" << clock_khz
       << ",\"theoretical_bw_bytes_per_s\":" << num(theo) << "},\"quick\":" << (quick ? "true" : "false");

    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    unsigned* sink;
    CK(cudaMalloc(&sink, 16));

    // --- ceilings: 4 rotating 256 MB buffers, never L2-resident -----------------------------
    constexpr std::size_t kBuf = 256u << 20;
    std::vector<void*> bufs(4);
    for (auto& b : bufs) {
        CK(cudaMalloc(&b, kBuf));
        bk::fill(b, 0, kBuf / 4, 1, 1.f, st);
    }
    const int warm = quick ? 5 : 20, iters = quick ? 40 : 200;
    auto rd = time_us(st, warm, iters, [&](int i) { bk::read_all(bufs[std::size_t(i) % 4], kBuf, sink, sms, st); });
    auto cp = time_us(st, warm, iters / 2, [&](int i) {
        CK(cudaMemcpyAsync(bufs[std::size_t(i + 1) % 4], bufs[std::size_t(i) % 4], kBuf, cudaMemcpyDeviceToDevice, st));
    });
    const Pct prd = percentiles(rd), pcp = percentiles(cp);
    const double read_ceiling = double(kBuf) / (prd.p50 * 1e-6);
    js << ",\"ceiling\":{\"read_bytes_per_s\":{\"p50\":" << num(read_ceiling)
       << ",\"p10\":" << num(double(kBuf) / (prd.p90 * 1e-6)) << ",\"p90\":" << num(double(kBuf) / (prd.p10 * 1e-6))
       << "},\"d2d_copy_bytes_per_s\":{\"p50\":" << num(2.0 * double(kBuf) / (pcp.p50 * 1e-6))
       << ",\"p10\":" << num(2.0 * double(kBuf) / (pcp.p90 * 1e-6)) << ",\"p90\":" << num(2.0 * double(kBuf) / (pcp.p10 * 1e-6))
       << "},\"read_pct_of_4_8TBps\":" << num(100.0 * read_ceiling / kPeakBytesPerS) << "}";
    for (auto b : bufs) CK(cudaFree(b));

    // --- the fused pass over a grid ---------------------------------------------------------
    const std::vector<int> batches = quick ? std::vector<int>{1, 256} : std::vector<int>{1, 8, 64, 256, 512};
    const std::vector<int> vocabs = quick ? std::vector<int>{152064} : std::vector<int>{128256, 152064, 256000};
    const std::vector<LogitDType> dtypes = quick ? std::vector<LogitDType>{LogitDType::bf16}
                                                 : std::vector<LogitDType>{LogitDType::bf16, LogitDType::f16, LogitDType::f32};
    const std::vector<int> ks = {20, 64};
    const std::size_t max_bytes = 512ull * 256000 * 4;
    constexpr int kRot = 3;  // 3 x 524 MB > 50 MB L2 many times over
    std::vector<void*> lbuf(kRot);
    for (auto& b : lbuf) CK(cudaMalloc(&b, max_bytes));
    // Two kinds of sampled ids: anywhere in the row (the worst case: about half the row ranks
    // above it, every thread counts) and the row's argmax (greedy decoding; a value above
    // every filled logit is planted there), which is what serving mostly samples.
    std::int32_t *sampled, *greedy;
    CK(cudaMalloc(&sampled, 512 * 4));
    CK(cudaMalloc(&greedy, 512 * 4));
    {
        std::vector<std::int32_t> h(512), g(512);
        for (int i = 0; i < 512; ++i) {
            h[std::size_t(i)] = (i * 7919) % 128000;
            g[std::size_t(i)] = (i * 104729 + 17) % 128000;
        }
        CK(cudaMemcpy(sampled, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(greedy, g.data(), g.size() * 4, cudaMemcpyHostToDevice));
    }
    const std::size_t tile_rows = cd::max_tile_rows(512, 256000, sms);
    cd::TilePartial* partials;
    std::uint64_t* cands;
    TokenSnapshot* out;
    CK(cudaMalloc(&partials, tile_rows * sizeof(cd::TilePartial)));
    CK(cudaMalloc(&cands, tile_rows * cd::tile_candidates * 8));
    CK(cudaMalloc(&out, 512 * sizeof(TokenSnapshot)));
    float *nm, *ns, *np;
    unsigned* nr;
    CK(cudaMalloc(&nm, 512 * 4));
    CK(cudaMalloc(&ns, 512 * 4));
    CK(cudaMalloc(&np, 512 * 4));
    CK(cudaMalloc(&nr, 512 * 4));

    js << ",\"fused\":[";
    bool first = true;
    const int fw = quick ? 3 : 10, fi = quick ? 20 : 50;
    for (LogitDType dt : dtypes) {
        for (int v : vocabs) {
            const std::size_t elems = 512ull * std::size_t(v);
            for (auto b : lbuf) {
                bk::fill(b, int(dt), elems, 7, 3.f, st);
                bk::plant(b, int(dt), 512, std::size_t(v), greedy, 16.f, st);
            }
            for (int rows : batches) {
                for (int k : ks) {
                    cd::StepArgs a;
                    a.dtype = dt;
                    a.rows = rows;
                    a.vocab = v;
                    a.row_stride = v;
                    a.sampled = sampled;
                    a.k = k;
                    a.partials = partials;
                    a.candidates = cands;
                    a.out = out;
                    const cd::StepPlan plan = cd::plan_step(dt, v, rows, sms);
                    auto with = [&](int i) { a.logits = lbuf[std::size_t(i) % kRot]; return a; };
                    const auto both = percentiles(time_us(st, fw, fi, [&](int i) { CK(cd::launch_step(with(i), plan, st)); }));
                    const auto part = percentiles(time_us(st, fw, fi, [&](int i) { CK(cd::launch_partial(with(i), plan, st)); }));
                    const auto merge = percentiles(time_us(st, fw, fi, [&](int i) { CK(cd::launch_merge(with(i), plan, st)); }));
                    const double bytes = double(rows) * double(v) * double(itemsize(dt));
                    js << (first ? "" : ",") << "{\"dtype\":\"" << dtype_name(dt) << "\",\"rows\":" << rows
                       << ",\"vocab\":" << v << ",\"k\":" << k << ",\"tiles\":" << plan.tiles
                       << ",\"vectors_per_thread\":" << plan.vectors << ",\"bytes\":" << num(bytes)
                       << ",\"us\":{\"p10\":" << num(both.p10) << ",\"p50\":" << num(both.p50) << ",\"p90\":" << num(both.p90)
                       << "},\"partial_us_p50\":" << num(part.p50) << ",\"merge_us_p50\":" << num(merge.p50)
                       << ",\"bytes_per_s\":" << num(bytes / (both.p50 * 1e-6))
                       << ",\"pct_of_4_8TBps\":" << num(100.0 * bytes / (both.p50 * 1e-6) / kPeakBytesPerS)
                       << ",\"pct_of_read_ceiling\":" << num(100.0 * bytes / (both.p50 * 1e-6) / read_ceiling);
                    const auto tm = bk::step_traffic(with(0), candidates_written(partials, std::size_t(rows) * std::size_t(plan.tiles)));
                    js << ",\"model\":{\"moved_bytes\":" << tm.moved_bytes() << ",\"predicted_us\":" << num(tm.predicted_us())
                       << ",\"predicted_pct_of_4_8TBps\":" << num(100.0 * tm.predicted_share())
                       << ",\"measured_over_predicted\":" << num(both.p50 / tm.predicted_us()) << "}";
                    if (k == 20 && (rows == 1 || rows == 256)) {
                        a.sampled = greedy;
                        const auto g = percentiles(time_us(st, fw, fi, [&](int i) { CK(cd::launch_step(with(i), plan, st)); }));
                        a.sampled = sampled;
                        js << ",\"greedy_us\":{\"p10\":" << num(g.p10) << ",\"p50\":" << num(g.p50) << ",\"p90\":" << num(g.p90)
                           << "},\"greedy_pct_of_4_8TBps\":" << num(100.0 * bytes / (g.p50 * 1e-6) / kPeakBytesPerS);
                    }
                    if ((rows == 256 && k == 20) || (quick && rows == 256)) {
                        bk::NaiveArgs na{nullptr, int(dt), rows, v, k, sampled, nm, ns, np, nr};
                        const auto naive = percentiles(time_us(st, 2, quick ? 5 : 10, [&](int i) {
                            na.logits = lbuf[std::size_t(i) % kRot];
                            bk::naive_pass(na, st);
                        }));
                        js << ",\"naive_passes\":" << (3 + k) << ",\"naive_us_p50\":" << num(naive.p50)
                           << ",\"speedup_vs_naive\":" << num(naive.p50 / both.p50);
                    }
                    js << "}";
                    first = false;
                }
            }
        }
    }
    js << "]";
    CK(cudaGetLastError());

    // --- capture() host latency behind a busy stream ---------------------------------------
    {
        const int rows = 256, v = 152064;
        std::atomic<std::uint64_t> got{0};
        std::vector<double> ready_us;
        std::mutex m;
        SnapshotConfig cfg;
        cfg.max_rows = rows;
        cfg.max_vocab = v;
        cfg.ring_slots = 8;
        auto stage = SnapshotStage::create(cfg, Backend::cuda, [&](SnapshotBatch&& b) {
            {
                std::lock_guard lock(m);
                ready_us.push_back(double(b.t_ready_ns - b.t_enqueue_ns) / 1e3);
            }
            got.fetch_add(1);
        });
        std::vector<RowMeta> meta(rows);
        bk::fill(lbuf[0], int(LogitDType::bf16), std::size_t(rows) * v, 3, 3.f, st);
        const LogitsView view{lbuf[0], LogitDType::bf16, rows, v, v, dev};
        const int n = quick ? 300 : 2000;
        const long long spin_cycles = (long long)(clock_khz) * (quick ? 1 : 2);  // 1-2 ms
        std::vector<double> cap;
        int dropped = 0;
        for (int i = 0; i < n + 20; ++i) {
            bk::spin(spin_cycles, st);
            const auto t0 = std::chrono::steady_clock::now();
            const auto r = stage->capture(view, sampled, meta, st);
            const auto t1 = std::chrono::steady_clock::now();
            if (r == CaptureResult::dropped) ++dropped;
            if (i >= 20) cap.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        stage->drain(std::chrono::seconds(10));
        std::sort(cap.begin(), cap.end());
        auto q = [&](double p) { return cap[std::min(cap.size() - 1, std::size_t(p * double(cap.size())))]; };
        const auto sst = stage->stats();
        std::sort(ready_us.begin(), ready_us.end());
        js << ",\"capture_latency_us\":{\"rows\":" << rows << ",\"vocab\":" << v << ",\"samples\":" << cap.size()
           << ",\"p50\":" << num(q(0.5)) << ",\"p99\":" << num(q(0.99)) << ",\"p99_9\":" << num(q(0.999))
           << ",\"max\":" << num(cap.back()) << ",\"dropped\":" << dropped
           << ",\"delivered\":" << sst.delivered_batches << ",\"watchdog_fires\":" << sst.watchdog_fires
           << ",\"enqueue_to_ready_us_p50\":" << num(ready_us.empty() ? 0 : ready_us[ready_us.size() / 2])
           << ",\"last_error\":\"" << sst.last_error << "\"}";
    }

    // --- first-gen D2H: 32 rows of 152,064 fp16 into pinned memory ----------------------------
    {
        const std::size_t bytes = 32ull * 152064 * 2;
        void* host;
        CK(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
        const auto d2h = percentiles(time_us(st, 3, quick ? 10 : 30, [&](int) {
            CK(cudaMemcpyAsync(host, lbuf[1], bytes, cudaMemcpyDeviceToHost, st));
        }));
        js << ",\"first_gen_d2h\":{\"bytes\":" << bytes << ",\"us_p50\":" << num(d2h.p50)
           << ",\"bytes_per_s\":" << num(double(bytes) / (d2h.p50 * 1e-6)) << "}";
        CK(cudaFreeHost(host));
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    js << ",\"wall_s\":" << num(secs) << "}";
    emit();
    return 0;
}
