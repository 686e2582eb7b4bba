// jsonlw-emu-predict: the fused pass (plan_step + launch_step, as jsonlw-bench-gpu launches it)
// run on the emulated device for a few shapes, printing what each launch moved in global
// memory (jsonlw_emu/traffic.hpp) and the time jsonlw_emu/predict.hpp predicts for an H200.
// Not a test: the suite asserts the counts (tests/snapshot/gpu_stage_traffic_emulated.cpp);
// this prints them for shapes too large to run on every build. docs/emulated-device.md, "Speed-shaped
// facts it counts".
//
//   jsonlw-emu-predict            every shape, 256 x 152,064 of each dtype included (~1 min)
//   jsonlw-emu-predict --quick    the small shapes only
#include "../../../lib/snapshot/cuda/kernels.hpp"

#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/types.hpp>
#include <jsonlw_emu/predict.hpp>
#include <jsonlw_emu/traffic.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

namespace cd = jsonlw::snapshot::cuda_detail;
using jsonlw::snapshot::LogitDType;
using jsonlw::snapshot::TokenSnapshot;

#define CK(expr)                                                                               \
    do {                                                                                       \
        if (const cudaError_t e_ = (expr); e_ != cudaSuccess) {                                \
            std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_));                   \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

struct Shape {
    LogitDType dt;
    int rows, vocab;
    int offset;  // elements between the allocation and row 0
};

// Logits of normal(0, 3)-like spread, as the bench fills them: the candidate counts, and so the
// scratch traffic, depend on the values.
void fill(std::vector<unsigned char>& bytes, LogitDType dt, std::size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    const std::size_t es = jsonlw::snapshot::itemsize(dt);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t u = rng();
        const float x = (float(u & 0xff) + float((u >> 8) & 0xff) + float((u >> 16) & 0xff) +
                         float((u >> 24) & 0xff) + float((u >> 32) & 0xffff) / 65536.f) / 255.f * 5.1f - 10.2f;
        std::uint32_t b;
        std::memcpy(&b, &x, 4);
        if (dt == LogitDType::f32) {
            std::memcpy(&bytes[i * es], &b, 4);
        } else {
            bool overflow = false;
            const std::uint16_t h = dt == LogitDType::bf16 ? std::uint16_t(b >> 16)
                                                           : jsonlw::snapshot::f32_to_f16_rne(x, &overflow);
            std::memcpy(&bytes[i * es], &h, 2);
        }
    }
}

void print_counts(const char* what, const jsonlw::emu::AccessCounts& c)
{
    std::printf(" %s %llu B req, %llu B used, %llu instr, %llu sectors, eff %.4f;", what,
                (unsigned long long)c.requested_bytes, (unsigned long long)c.used_bytes,
                (unsigned long long)c.instructions, (unsigned long long)c.sectors, c.sector_efficiency());
}

void run(const Shape& sh, int sms)
{
    const std::size_t es = jsonlw::snapshot::itemsize(sh.dt);
    const std::size_t n = std::size_t(sh.rows) * std::size_t(sh.vocab);
    std::vector<unsigned char> host(n * es);
    fill(host, sh.dt, n, 7);
    std::vector<std::int32_t> ids(std::size_t(sh.rows));
    for (int i = 0; i < sh.rows; ++i) ids[std::size_t(i)] = std::int32_t((std::uint64_t(i) * 7919) % std::uint64_t(sh.vocab));

    const cd::StepPlan plan = cd::plan_step(sh.dt, sh.vocab, sh.rows, sms);
    const std::size_t tiles = std::size_t(sh.rows) * std::size_t(plan.tiles);
    void *logits, *sampled, *partials, *cands, *out;
    CK(cudaMalloc(&logits, host.size() + std::size_t(sh.offset) * es));
    CK(cudaMalloc(&sampled, ids.size() * 4));
    CK(cudaMalloc(&partials, tiles * sizeof(cd::TilePartial)));
    CK(cudaMalloc(&cands, tiles * cd::tile_candidates * 8));
    CK(cudaMalloc(&out, std::size_t(sh.rows) * sizeof(TokenSnapshot)));
    char* rows = static_cast<char*>(logits) + std::size_t(sh.offset) * es;
    CK(cudaMemcpy(rows, host.data(), host.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(sampled, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
    const cd::StepArgs a{.logits = rows, .dtype = sh.dt, .rows = sh.rows, .vocab = sh.vocab,
                         .row_stride = sh.vocab, .sampled = static_cast<const std::int32_t*>(sampled),
                         .k = 20, .partials = static_cast<cd::TilePartial*>(partials),
                         .candidates = static_cast<std::uint64_t*>(cands), .out = static_cast<TokenSnapshot*>(out)};

    (void)jsonlw::emu::take_launch_traffic();
    const auto t0 = std::chrono::steady_clock::now();
    CK(cd::launch_step(a, plan, nullptr));
    CK(cudaDeviceSynchronize());
    const double emulated_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto launches = jsonlw::emu::take_launch_traffic();

    const std::uint64_t logit_bytes = std::uint64_t(n) * es;
    std::printf("%s %d x %d, row 0 %d elements past the allocation: k 20, %d vectors a thread, %d tiles a row "
                "(emulated in %.1f s)\n",
                jsonlw::snapshot::dtype_name(sh.dt), sh.rows, sh.vocab, sh.offset, plan.vectors, plan.tiles, emulated_s);
    const struct {
        const char* name;
        const void* p;
    } buffers[] = {{"logits", logits}, {"sampled", sampled}, {"partials", partials}, {"candidates", cands}, {"out", out}};
    for (const jsonlw::emu::LaunchTraffic& l : launches) {
        std::printf("  %s grid %ux%u:", l.kernel.c_str(), l.grid.x, l.grid.y);
        print_counts("loads", l.loads);
        print_counts("stores", l.stores);
        std::printf(" distinct %llu B read, %llu sectors read, %llu written; %llu warp collectives\n",
                    (unsigned long long)l.distinct_read_bytes, (unsigned long long)l.distinct_read_sectors,
                    (unsigned long long)l.distinct_written_sectors, (unsigned long long)l.warp_collectives);
        for (const auto& b : buffers) {
            const jsonlw::emu::BufferTraffic t = l.buffer(b.p);
            if (t.loads.instructions + t.stores.instructions == 0) continue;
            std::printf("    %-10s", b.name);
            if (t.loads.instructions) print_counts("loads", t.loads);
            if (t.stores.instructions) print_counts("stores", t.stores);
            std::printf(" distinct %llu B read\n", (unsigned long long)t.distinct_read_bytes);
        }
    }
    const jsonlw::emu::TrafficPrediction p = jsonlw::emu::predict(launches, logit_bytes);
    std::printf("  step: %zu launches; logits %llu B; moved %llu B (%.4f x the logits); predicted %.2f us on an H200 "
                "at 4.8 TB/s; share %.1f %%\n\n",
                launches.size(), (unsigned long long)logit_bytes, (unsigned long long)p.moved_bytes,
                double(p.moved_bytes) / double(logit_bytes), p.predicted_us, 100.0 * p.share);
    for (void* b : {logits, sampled, partials, cands, out}) CK(cudaFree(b));
}

}  // namespace

int main(int argc, char** argv)
{
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::printf("jsonlw-emu-predict: the emulated device as a %d-SM GPU; model: moved = 32 B x (distinct sectors "
                "read + written, per launch), us = moved / 4.8e12 B/s, share = logit bytes / moved\n\n", sms);
    std::vector<Shape> shapes;
    for (const LogitDType dt : {LogitDType::bf16, LogitDType::f16, LogitDType::f32})
        for (const int offset : {0, 1})
            shapes.push_back(dt == LogitDType::bf16  ? Shape{dt, 2, 152064, offset}
                             : dt == LogitDType::f16 ? Shape{dt, 2, 32000, offset}
                                                     : Shape{dt, 3, 4096, offset});
    shapes.push_back({LogitDType::bf16, 1, 152064, 0});
    if (!quick) {
        shapes.push_back({LogitDType::bf16, 256, 152064, 0});
        shapes.push_back({LogitDType::bf16, 256, 152064, 1});
        shapes.push_back({LogitDType::f16, 256, 152064, 0});
        shapes.push_back({LogitDType::f32, 256, 152064, 0});
    }
    for (const Shape& s : shapes) run(s, sms);
    return 0;
}
