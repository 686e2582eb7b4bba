// The CPU backend end to end: host logits -> stage -> one post per batch onto the loop ->
// the raw-output writer -> JSONL lines, parsed back and checked against the reference.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/raw_output_snapshot.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/snapshot/asio_bridge.hpp>
#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include "raw_output_in_temp_dir.hpp"
#include "stage_support.hpp"
#include "wait.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace jsonlw::snapshot;
using namespace std::chrono_literals;

TEST_CASE_METHOD(jsonlw_test::RawOutputInTempDir, "captured steps become raw-output records whose logprobs, ranks and top_logprobs match the reference", "[snapshot][end_to_end]")
{
    constexpr int V = 500, rows = 4, steps = 6, k = 3;
    SnapshotConfig config = jsonlw_test::cpu_config(k, rows, V, 4);
    config.first_gen = FirstGenMode::float16_compat;
    config.max_first_gen_rows_per_step = rows;

    // The loop's side: each batch becomes one chunk per row (one token), the last step final.
    std::map<std::uint64_t, std::vector<TokenSnapshot>> seen;  // request -> rows, loop only
    auto sink = post_batches(loop.executor(), [&](SnapshotBatch&& b) {
        for (const TokenSnapshot& row : b.rows) {
            seen[row.request_id].push_back(row);
            const jsonlw::TokenLogprob lp = jsonlw::token_logprob(row, config);
            jsonlw::OutputChunk c;
            c.request_id = row.request_id;
            c.output_index = row.seq_index;
            const std::string text = "t" + std::to_string(row.sampled_id);
            c.text_diff = text;
            c.token_ids_diff = std::span<const std::int32_t>(&row.sampled_id, 1);
            c.logprobs_diff = std::span<const jsonlw::TokenLogprob>(&lp, 1);
            for (const FirstGenLogits& fg : b.first_gen)
                if (fg.request_id == row.request_id && fg.seq_index == row.seq_index)
                    c.first_gen_logits = jsonlw::first_gen_view(fg);
            c.is_final = row.step == steps - 1;
            writer.on_chunk(c);
        }
    });
    auto stage = SnapshotStage::create(config, Backend::cpu, std::move(sink));
    loop.start();

    std::mt19937_64 rng(42);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::vector<std::vector<float>> first_rows(rows);
    for (int step = 0; step < steps; ++step) {
        std::vector<float> logits(std::size_t(rows) * V);
        for (float& x : logits) x = normal(rng);
        if (step == 2) logits[1 * V + 7] = std::nanf("");  // request 1: a NaN row at step 2
        std::vector<std::int32_t> sampled(rows);
        std::vector<RowMeta> meta(rows);
        for (int r = 0; r < rows; ++r) {
            sampled[std::size_t(r)] = std::int32_t(rng() % V);
            meta[std::size_t(r)] = RowMeta{std::uint64_t(r), 0, std::uint32_t(step),
                                           std::uint8_t(step == 0 ? RowMeta::first_gen : 0)};
        }
        if (step == 0)
            for (int r = 0; r < rows; ++r)
                first_rows[std::size_t(r)].assign(logits.begin() + r * V, logits.begin() + (r + 1) * V);
        const LogitsView v{logits.data(), LogitDType::f32, rows, V, V, -1};
        // The loop releases slots as it handles batches; a real decode loop would drop the
        // step instead of waiting (tested in stage.cpp).
        REQUIRE(jsonlw_test::wait_until([&] { return stage->stats().leased < 4; }));
        REQUIRE(stage->capture(v, sampled.data(), meta) == CaptureResult::enqueued);
    }
    REQUIRE(stage->drain(10s));
    // The handlers posted before this round trip have run: only then may the writer close.
    jsonlw_test::get_within(boost::asio::post(loop.executor(), boost::asio::use_future));
    const auto report = jsonlw_test::close(writer);
    CHECK(report.stats.written == rows);

    for_each_token_record(std::size_t(rows), [&](const jsonlw_test::TokenRecord& rec) {
        const auto& [doc, id, ids, lps, ranks, tops] = rec;
        const auto& want = seen.at(id);
        REQUIRE(want.size() == std::size_t(steps));

        REQUIRE(lps.size() == std::size_t(steps));
        std::size_t i = 0;
        for (auto lp : lps) {
            const TokenSnapshot& t = want[i];
            std::int64_t tid = 0;
            REQUIRE(ids.at(i).get_int64().get(tid) == simdjson::SUCCESS);
            CHECK(tid == t.sampled_id);
            if (std::isfinite(t.sampled_logprob)) {
                double d = 0;
                REQUIRE(lp.get_double().get(d) == simdjson::SUCCESS);
                CHECK(float(d) == t.sampled_logprob);  // shortest round trip: exact
            } else {
                CHECK(lp.is_null());
            }
            CHECK(rec.rank_at(i) == std::int64_t(t.sampled_rank));
            const simdjson::dom::array top = rec.top_at(i);
            REQUIRE(top.size() == std::size_t(k));
            for (int j = 0; j < k; ++j) {
                std::int64_t top_id = 0;
                REQUIRE(top.at(std::size_t(j)).at(0).get_int64().get(top_id) == simdjson::SUCCESS);
                CHECK(top_id == t.topk_ids[j]);
            }
            ++i;
        }
        // Request 1's NaN row: its logprob is null, flagged by position, the line stays JSON.
        simdjson::dom::array nonfinite;
        if (id == 1) {
            REQUIRE(doc["logprobs_nonfinite"].get_array().get(nonfinite) == simdjson::SUCCESS);
            std::int64_t pos = -1;
            REQUIRE(nonfinite.at(0).get_int64().get(pos) == simdjson::SUCCESS);
            CHECK(pos == 2);
            CHECK(lps.at(2).is_null());
        } else {
            CHECK(doc["logprobs_nonfinite"].error() == simdjson::NO_SUCH_FIELD);
        }
        // first_gen_logits: the step-0 row, fp32 kept as fp32 in the compatible mode.
        simdjson::dom::array fg;
        REQUIRE(doc["first_gen_logits"].get_array().get(fg) == simdjson::SUCCESS);
        const std::string fg_json = simdjson::minify(fg);
        std::vector<DecodedFirstGen> decoded;
        std::string error;
        REQUIRE(decode_first_gen_list(fg_json, decoded, error));
        REQUIRE(decoded.size() == 1);
        CHECK(decoded[0].dtype == LogitDType::f32);
        REQUIRE(decoded[0].bytes.size() == std::size_t(V) * 4);
        CHECK(std::memcmp(decoded[0].bytes.data(), first_rows[id].data(), std::size_t(V) * 4) == 0);
    });
}
