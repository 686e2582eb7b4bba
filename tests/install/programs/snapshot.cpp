// jsonlw-snapshot: the stage picks its backend (the CPU here without a GPU) and captures steps.
#include <jsonlw/snapshot/stage.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

namespace snap = jsonlw::snapshot;

int main()
{
    std::size_t rows_seen = 0;
    snap::SnapshotConfig config{.k = 3, .max_rows = 2, .max_vocab = 64, .ring_slots = 4};
    auto stage = snap::SnapshotStage::create(config, snap::Backend::automatic,
                                             [&](snap::SnapshotBatch&& b) { rows_seen += b.rows.size(); });
    std::vector<float> logits(2 * 64);
    for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = float(i % 64) / 8.f;
    const std::int32_t sampled[2] = {63, 10};
    for (std::uint32_t step = 0; step < 3; ++step) {
        const snap::RowMeta meta[2] = {{1, 0, step, 0}, {2, 0, step, 0}};
        const snap::LogitsView view{logits.data(), snap::LogitDType::f32, 2, 64, 64, -1};
        stage->capture(view, sampled, meta);
    }
    stage->drain(std::chrono::seconds(10));
    const snap::SnapshotStats st = stage->stats();
    std::printf("snapshot: %llu steps, %zu rows, cuda devices %s\n",
                (unsigned long long)st.captured_steps, rows_seen,
                snap::cuda_device_count() > 0 ? "some" : "none");
}
