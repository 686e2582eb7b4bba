// A decode loop whose tokens reach the raw-output writer at every step, with the snapshot
// stage's per-token data following (docs/snapshot.md).
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

    snap::SnapshotConfig config{.k = 5, .first_gen = snap::FirstGenMode::float16_compat,
                                .max_rows = 8, .max_vocab = 1000, .ring_slots = 16};
    // Each batch reaches the loop through one post; record_token_data() copies its rows into
    // the outputs' records and releases the batch's ring slot before it returns.
    auto on_batch = [&writer, config](snap::SnapshotBatch&& batch) {
        jsonlw::record_token_data(writer, std::move(batch), config);
    };
    auto stage = snap::SnapshotStage::create(config, snap::Backend::automatic,
                                             snap::post_batches(loop.get_executor(), on_batch));
    std::thread loop_thread([&loop] {
        auto work = boost::asio::make_work_guard(loop);
        loop.run();
    });

    // The decode loop: 2 requests, 10 steps, logits on the host (a GPU engine passes device
    // pointers and its stream instead). The engine owns the tokens: each step's text and ids
    // go to the writer first, whatever the stage then does with the step.
    constexpr int rows = 2, vocab = 1000;
    const std::uint64_t ids[rows] = {101, 102};
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::vector<float> logits(rows * vocab);
    for (std::uint32_t step = 0; step < 10; ++step) {
        for (float& x : logits) x = normal(rng);
        const std::int32_t sampled[rows] = {std::int32_t(rng() % vocab), std::int32_t(rng() % vocab)};
        for (int r = 0; r < rows; ++r) {
            const std::string text = " t" + std::to_string(sampled[r]);
            boost::asio::post(loop, [&writer, id = ids[r], text, token = sampled[r]] {
                writer.on_chunk({.request_id = id, .text_diff = text, .token_ids_diff = {&token, 1},
                                 .streaming = true, .token_data_follows = true});
            });
        }
        const std::uint8_t first = step == 0 ? snap::RowMeta::first_gen : 0;
        const snap::RowMeta meta[rows] = {{ids[0], 0, step, first}, {ids[1], 0, step, first}};
        const snap::LogitsView view{logits.data(), snap::LogitDType::f32, rows, vocab, vocab, -1};
        if (stage->capture(view, sampled, meta) != snap::CaptureResult::enqueued)
            std::fprintf(stderr, "step %u not captured\n", step);  // its positions stay null
    }

    // Every step reached the sink (drain, off the loop: it blocks); the final chunks go after
    // the batches on the loop, so each output is written with all the data that arrived.
    stage->drain(std::chrono::seconds(5));
    for (std::uint64_t id : ids)
        boost::asio::post(loop, [&writer, id] {
            writer.on_chunk({.request_id = id, .is_final = true, .streaming = true});
        });
    boost::asio::post(loop, boost::asio::use_future).get();
    const auto report = writer.async_close(boost::asio::use_future).get();
    loop.stop();
    loop_thread.join();
    const snap::SnapshotStats st = stage->stats();
    std::printf("backend %s: %llu steps captured, %llu dropped; %llu records written, "
                "%llu token positions without per-token data\n",
                snap::to_string(st.backend), (unsigned long long)st.captured_steps,
                (unsigned long long)st.dropped_steps, (unsigned long long)report.stats.written,
                (unsigned long long)writer.counters().tokens_without_data);
    return report.stats.written == 2 && st.dropped_steps == 0 ? 0 : 1;
}
