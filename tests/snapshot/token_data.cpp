// The engine's tokens first, the stage's per-token data after (docs/snapshot.md, "Feeding the
// raw-output writer"): every token reaches the record whatever the stage did; a step the stage
// dropped leaves exactly its positions null, counted in logprobs_missing and in the writer's
// tokens_without_data; record_token_data() releases the batch's slot before it returns.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/raw_output_snapshot.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include "raw_output_in_temp_dir.hpp"
#include "stage_support.hpp"
#include "wait.hpp"

#include <simdjson.h>

#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

using namespace jsonlw::snapshot;
using namespace std::chrono_literals;
using jsonlw_test::Keeper;
using jsonlw_test::lines_under;

namespace {

// The engine's side of one token: text and id, per-token data to follow.
void send_token(jsonlw::RawOutputWriter& w, std::uint64_t id, std::int32_t token)
{
    jsonlw::OutputChunk c;
    c.request_id = id;
    const std::string text = "t" + std::to_string(token);
    c.text_diff = text;
    c.token_ids_diff = std::span<const std::int32_t>(&token, 1);
    c.token_data_follows = true;
    c.streaming = true;
    w.on_chunk(c);
}

void send_final(jsonlw::RawOutputWriter& w, std::uint64_t id)
{
    jsonlw::OutputChunk c;
    c.request_id = id;
    c.is_final = true;
    c.streaming = true;
    w.on_chunk(c);
}

jsonlw::TokenLogprob known(std::int32_t id, double lp, std::int32_t rank)
{
    jsonlw::TokenLogprob t;
    t.token_id = id;
    t.logprob = lp;
    t.rank = rank;
    t.top = {{id, lp}};
    return t;
}

}  // namespace

TEST_CASE_METHOD(jsonlw_test::RawOutputInTempDir, "a step the stage dropped leaves its tokens in the record with null per-token data, counted", "[snapshot][token_data]")
{
    loop.start();

    constexpr int V = 300, rows = 3, steps = 4, k = 2;
    const SnapshotConfig config = jsonlw_test::cpu_config(k, rows, V, 2);
    Keeper keep;  // holds the batches: the test plays a consumer that is two steps behind
    auto stage = SnapshotStage::create(config, Backend::cpu, keep.sink());

    std::mt19937_64 rng(7);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::map<std::uint64_t, std::vector<std::int32_t>> tokens;  // the engine's, per request
    std::map<std::uint64_t, std::map<std::uint32_t, TokenSnapshot>> captured;  // by step
    std::vector<CaptureResult> results;
    for (int step = 0; step < steps; ++step) {
        std::vector<float> logits(std::size_t(rows) * V);
        for (float& x : logits) x = normal(rng);
        std::vector<std::int32_t> sampled(rows);
        std::vector<RowMeta> meta(rows);
        for (int r = 0; r < rows; ++r) {
            sampled[std::size_t(r)] = std::int32_t(rng() % V);
            meta[std::size_t(r)] = RowMeta{std::uint64_t(r), 0, std::uint32_t(step), 0};
            send_token(writer, std::uint64_t(r), sampled[std::size_t(r)]);  // before capture
            tokens[std::uint64_t(r)].push_back(sampled[std::size_t(r)]);
        }
        const LogitsView v{logits.data(), LogitDType::f32, rows, V, V, -1};
        results.push_back(stage->capture(v, sampled.data(), meta));
        if (step == 2) {
            // Steps 0 and 1 hold both slots: step 2 was dropped. Now the consumer catches up.
            for (SnapshotBatch& b : keep.batches) {
                for (const TokenSnapshot& row : b.rows) captured[row.request_id][row.step] = row;
                CHECK(jsonlw::record_token_data(writer, std::move(b), config) == std::size_t(rows));
            }
            keep.batches.clear();
            CHECK(stage->stats().leased == 0);  // released inside record_token_data
        }
    }
    CHECK(results == std::vector<CaptureResult>{CaptureResult::enqueued, CaptureResult::enqueued,
                                                CaptureResult::dropped, CaptureResult::enqueued});
    REQUIRE(keep.batches.size() == 1);
    CHECK(keep.batches[0].gap_before == 1);
    for (const TokenSnapshot& row : keep.batches[0].rows) captured[row.request_id][row.step] = row;
    CHECK(jsonlw::record_token_data(writer, std::move(keep.batches[0]), config) == std::size_t(rows));
    CHECK(stage->stats().leased == 0);
    for (int r = 0; r < rows; ++r) send_final(writer, std::uint64_t(r));

    const auto report = jsonlw_test::close(writer);
    CHECK(report.stats.written == rows);
    const jsonlw::RawOutputCounters counters = writer.counters();
    CHECK(counters.finished == rows);
    CHECK(counters.partial == 0);
    CHECK(counters.tokens_without_data == stage->stats().dropped_rows);
    CHECK(counters.tokens_without_data == rows);
    CHECK(counters.token_data_orphaned == 0);

    for_each_token_record(std::size_t(rows), [&](const jsonlw_test::TokenRecord& rec) {
        const auto& [doc, id, ids, lps, ranks, tops] = rec;
        // Every token the engine produced is there, the dropped step's too.
        REQUIRE(ids.size() == std::size_t(steps));
        for (std::size_t i = 0; i < ids.size(); ++i) {
            std::int64_t t = 0;
            REQUIRE(ids.at(i).get_int64().get(t) == simdjson::SUCCESS);
            CHECK(t == tokens[id][i]);
        }
        std::uint64_t n_tokens = 0;
        REQUIRE(doc["num_output_tokens"].get_uint64().get(n_tokens) == simdjson::SUCCESS);
        CHECK(n_tokens == std::uint64_t(steps));
        REQUIRE(lps.size() == std::size_t(steps));
        for (std::uint32_t step = 0; step < std::uint32_t(steps); ++step) {
            if (step == 2) {
                CHECK(lps.at(step).is_null());
                CHECK(ranks.at(step).is_null());
                simdjson::dom::array none;
                REQUIRE(tops.at(step).get_array().get(none) == simdjson::SUCCESS);
                CHECK(none.size() == 0);
                continue;
            }
            const TokenSnapshot& want = captured.at(id).at(step);
            double d = 0;
            REQUIRE(lps.at(step).get_double().get(d) == simdjson::SUCCESS);
            CHECK(float(d) == want.sampled_logprob);
            CHECK(rec.rank_at(step) == std::int64_t(want.sampled_rank));
            CHECK(rec.top_at(step).size() == std::size_t(k));
        }
        std::uint64_t missing = 0;
        REQUIRE(doc["logprobs_missing"].get_uint64().get(missing) == simdjson::SUCCESS);
        CHECK(missing == 1);
        CHECK(doc["logprobs_nonfinite"].error() == simdjson::NO_SUCH_FIELD);
        CHECK(doc["partial"].error() == simdjson::NO_SUCH_FIELD);
        std::string_view text;
        REQUIRE(doc["text"].get_string().get(text) == simdjson::SUCCESS);
        std::string want_text;
        for (std::int32_t t : tokens[id]) want_text += "t" + std::to_string(t);
        CHECK(text == want_text);
    });
}

TEST_CASE_METHOD(jsonlw_test::RawOutputInTempDir, "per-token data may arrive before its token, and data for an output no longer in flight is counted as orphaned", "[snapshot][token_data]")
{
    loop.start();

    send_token(writer, 5, 11);
    // Position 1's data comes before token 1 itself; position 0's after it; position 3's is
    // past the output's last token and is left out of the record.
    const jsonlw::TokenLogprob p1 = known(12, -0.5, 1), p0 = known(11, -1.25, 2),
                               p3 = known(99, -3.5, 4);
    writer.on_token_data(5, 0, 1, std::span<const jsonlw::TokenLogprob>(&p1, 1));
    send_token(writer, 5, 12);
    send_token(writer, 5, 13);  // position 2: no data ever
    writer.on_token_data(5, 0, 0, std::span<const jsonlw::TokenLogprob>(&p0, 1));
    writer.on_token_data(5, 0, 3, std::span<const jsonlw::TokenLogprob>(&p3, 1));
    send_final(writer, 5);
    // The output was written: late data, and data for a request never seen, are orphaned.
    writer.on_token_data(5, 0, 2, std::span<const jsonlw::TokenLogprob>(&p0, 1));
    writer.on_token_data(77, 0, 0, std::span<const jsonlw::TokenLogprob>(&p0, 1));

    const auto report = jsonlw_test::close(writer);
    CHECK(report.stats.written == 1);
    const jsonlw::RawOutputCounters counters = writer.counters();
    CHECK(counters.tokens_without_data == 1);
    CHECK(counters.token_data_orphaned == 2);
    const auto lines = lines_under(dir.path());
    REQUIRE(lines.size() == 1);
    const std::string& line = lines[0];
    INFO(line);
    CHECK(line.find(R"("token_ids":[11,12,13],"num_output_tokens":3)") != std::string::npos);
    CHECK(line.find(R"("logprobs":[-1.25,-0.5,null],"ranks":[2,1,null],)"
                    R"("top_logprobs":[[[11,-1.25]],[[12,-0.5]],[]],"logprobs_missing":1)") !=
          std::string::npos);
}

TEST_CASE_METHOD(jsonlw_test::RawOutputInTempDir, "an output whose every step was dropped still gets its record, all positions null and counted", "[snapshot][token_data]")
{
    loop.start();
    send_token(writer, 9, 1);
    send_token(writer, 9, 2);
    send_final(writer, 9);
    const auto report = jsonlw_test::close(writer);
    CHECK(report.stats.written == 1);
    CHECK(writer.counters().tokens_without_data == 2);
    const auto lines = lines_under(dir.path());
    REQUIRE(lines.size() == 1);
    INFO(lines[0]);
    CHECK(lines[0].find(R"("token_ids":[1,2],"num_output_tokens":2)") != std::string::npos);
    CHECK(lines[0].find(R"("logprobs":[null,null],"logprobs_missing":2)") != std::string::npos);
    CHECK(lines[0].find(R"("text":"t1t2")") != std::string::npos);
}
