// The snapshot stage's CPU backend: one capture() over a [rows, vocab] batch of host logits
// (everything computed, the batch delivered to a sink that drops it), and the machine's copy
// bandwidth over the same bytes with the same number of threads, as the ceiling.
#include "runs.hpp"

#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

namespace bench {

using namespace jsonlw::snapshot;

SnapshotInput make_snapshot_input(LogitDType dtype, int rows, int vocab, std::uint64_t seed)
{
    SnapshotInput in;
    in.dtype = dtype;
    in.rows = rows;
    in.vocab = vocab;
    const std::size_t n = std::size_t(rows) * std::size_t(vocab);
    in.data.resize(n * itemsize(dtype));
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.f, 3.f);
    for (std::size_t i = 0; i < n; ++i) {
        const float x = normal(rng);
        if (dtype == LogitDType::f32) {
            std::memcpy(in.data.data() + 4 * i, &x, 4);
        } else {
            bool overflow = false;
            std::uint32_t u;
            std::memcpy(&u, &x, 4);
            const std::uint16_t h = dtype == LogitDType::f16 ? f32_to_f16_rne(x, &overflow)
                                                             : std::uint16_t(u >> 16);
            std::memcpy(in.data.data() + 2 * i, &h, 2);
        }
    }
    in.sampled.resize(std::size_t(rows));
    in.meta.resize(std::size_t(rows));
    for (int r = 0; r < rows; ++r) {
        in.sampled[std::size_t(r)] = std::int32_t(rng() % std::uint64_t(vocab));
        in.meta[std::size_t(r)] = RowMeta{std::uint64_t(r), 0, 0, 0};
    }
    return in;
}

SnapshotRunResult snapshot_cpu_run(SnapshotStage& stage, const SnapshotInput& in, int reps)
{
    SnapshotRunResult r;
    const LogitsView v{in.data.data(), in.dtype, in.rows, in.vocab, in.vocab, -1};
    const auto before = stage.stats();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) {
        if (stage.capture(v, in.sampled.data(), in.meta) != CaptureResult::enqueued) {
            r.problem = "capture() did not enqueue: " + stage.stats().last_error;
            return r;
        }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto after = stage.stats();
    if (after.delivered_batches - before.delivered_batches != std::uint64_t(reps))
        r.problem = "not every batch reached the sink";
    r.rows = std::uint64_t(in.rows) * std::uint64_t(reps);
    r.bytes = in.data.size() * std::size_t(reps);
    return r;
}

SnapshotRunResult copy_ceiling_run(const SnapshotInput& in, std::vector<std::byte>& dst, int reps,
                                   int threads)
{
    SnapshotRunResult r;
    dst.resize(in.data.size());
    const std::size_t n = in.data.size();
    const auto copy_part = [&](int t) {
        const std::size_t begin = n * std::size_t(t) / std::size_t(threads);
        const std::size_t end = n * std::size_t(t + 1) / std::size_t(threads);
        std::memcpy(dst.data() + begin, in.data.data() + begin, end - begin);
    };
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) {
        if (threads <= 1 || n < (std::size_t{1} << 20)) {
            std::memcpy(dst.data(), in.data.data(), n);
            continue;
        }
        std::vector<std::thread> pool;
        for (int t = 1; t < threads; ++t) pool.emplace_back(copy_part, t);
        copy_part(0);
        for (auto& th : pool) th.join();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (std::memcmp(dst.data(), in.data.data(), std::min<std::size_t>(n, 4096)) != 0)
        r.problem = "the copy differs";
    r.rows = std::uint64_t(in.rows) * std::uint64_t(reps);
    r.bytes = n * std::size_t(reps);
    return r;
}

}  // namespace bench
