// A decode loop that captures each step and feeds the raw-output writer (docs/snapshot.md).
#include <jsonlw/raw_output_snapshot.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/snapshot/asio_bridge.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace snap = jsonlw::snapshot;

int main()
{
    boost::asio::io_context loop;
    jsonlw::RawOutputWriter writer(loop.get_executor(), {.directory = "snapshot-demo"});
    writer.start();

    snap::SnapshotConfig config{.k = 5, .first_gen = snap::FirstGenMode::Float16Compat,
                                .max_rows = 8, .max_vocab = 1000, .ring_slots = 16};
    // Each batch reaches the loop through one post; there, every row becomes a chunk.
    auto on_batch = [&writer, config](snap::SnapshotBatch&& batch) {
        for (const snap::TokenSnapshot& row : batch.rows) {
            const jsonlw::TokenLogprob lp = jsonlw::token_logprob(row, config);
            const std::string text = " t" + std::to_string(row.sampled_id);
            jsonlw::OutputChunk chunk{.request_id = row.request_id,
                                      .output_index = row.seq_index,
                                      .text_diff = text,
                                      .token_ids_diff = {&row.sampled_id, 1},
                                      .is_final = row.step == 9,
                                      .logprobs_diff = {&lp, 1}};
            for (const snap::FirstGenLogits& fg : batch.first_gen)
                if (fg.request_id == row.request_id && fg.seq_index == row.seq_index)
                    chunk.first_gen_logits = jsonlw::first_gen_view(fg);
            writer.on_chunk(chunk);
        }
    };  // the batch (and its ring slot) is released here
    auto stage = snap::SnapshotStage::create(config, snap::Backend::Auto,
                                             snap::post_batches(loop.get_executor(), on_batch));
    std::thread loop_thread([&loop] {
        auto work = boost::asio::make_work_guard(loop);
        loop.run();
    });

    // The decode loop: 2 requests, 10 steps, logits on the host (a GPU engine passes device
    // pointers and its stream instead).
    constexpr int rows = 2, vocab = 1000;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::vector<float> logits(rows * vocab);
    for (std::uint32_t step = 0; step < 10; ++step) {
        for (float& x : logits) x = normal(rng);
        const std::int32_t sampled[rows] = {std::int32_t(rng() % vocab), std::int32_t(rng() % vocab)};
        const std::uint8_t first = step == 0 ? snap::RowMeta::first_gen : 0;
        const snap::RowMeta meta[rows] = {{101, 0, step, first}, {102, 0, step, first}};
        const snap::LogitsView view{logits.data(), snap::LogitDType::F32, rows, vocab, vocab, -1};
        if (stage->capture(view, sampled, meta) != snap::CaptureResult::Enqueued)
            std::fprintf(stderr, "step %u not captured\n", step);  // counted in stats()
    }

    // Every step reached the sink (drain, off the loop: it blocks), then the loop ran the
    // handlers posted before this round trip: only now may the writer close.
    stage->drain(std::chrono::seconds(5));
    boost::asio::post(loop, boost::asio::use_future).get();
    const auto report = writer.async_close(boost::asio::use_future).get();
    loop.stop();
    loop_thread.join();
    const snap::SnapshotStats st = stage->stats();
    std::printf("backend %s: %llu steps captured, %llu dropped; %llu records written\n",
                snap::to_string(st.backend), (unsigned long long)st.captured_steps,
                (unsigned long long)st.dropped_steps, (unsigned long long)report.stats.written);
    return report.stats.written == 2 && st.dropped_steps == 0 ? 0 : 1;
}
