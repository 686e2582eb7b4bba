// RawOutputOptions::capture (docs/writers.md, "Content capture"): with metadata, text, frames
// and token ids become lengths and SHA-256 digests, the top-k alternatives and the first
// token's logits row are left out, everything else is kept; full (the default) writes what a
// writer without the option writes; digests made on several serializer threads at once are
// each their record's.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/raw_output_writer.hpp>

#include "raw_output_support.hpp"
#include "sha256.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

using namespace jsonlw_test;
using namespace raw_output_test;
using jsonlw::Capture;
using jsonlw::RawOutputRecord;
using jsonlw::SubmitResult;
using jsonlw::TopLogprob;

namespace {

// "hello" in two frames, ids [1,2], logprobs with ranks and top-k, a first-token logits row.
RawOutputRecord hello_record()
{
    return RawOutputRecord{
        .request_id = 42,
        .disagg_request_id = 7,
        .output_index = 1,
        .started_at = at(),
        .finished_at = at(std::chrono::microseconds{1'500'000}),
        .streaming = true,
        .frames_text = "hello",
        .frame_ends = {3, 5},
        .token_ids = {1, 2},
        .logprobs = {{.token_id = 1, .logprob = -0.25, .rank = 1, .top = {TopLogprob{1, -0.25}}},
                     {.token_id = 2, .logprob = -1.5, .rank = 2, .top = {TopLogprob{9, -1.0}}}},
        .first_gen_logits = jsonlw::FirstGenLogitsData{jsonlw::snapshot::LogitDType::f32, 2,
                                                       std::vector<std::byte>(8, std::byte{0}), 0},
    };
}

// Invalid UTF-8 in a frame, no tokens, partial.
RawOutputRecord invalid_utf8_record()
{
    return RawOutputRecord{.request_id = 43,
                           .started_at = at(),
                           .finished_at = at(std::chrono::microseconds{1'500'000}),
                           .frames_text = "h\xFFllo",
                           .frame_ends = {3, 5},
                           .end_reason = "evicted"};
}

struct Written {
    std::vector<std::string> lines;
    jsonlw::CloseReport report;
    jsonlw::RawOutputCounters counters;
};

Written write(std::optional<Capture> capture, const std::vector<RawOutputRecord>& records,
              std::size_t serializer_threads = 1)
{
    Harness h;
    RawOutputOptions o = options(h);
    if (capture) o.capture = *capture;
    o.serializer_threads = serializer_threads;
    RawOutputWriter w(h.executor(), o);
    w.start();  // records queued before the drain first runs: batches of 64, units of several
    for (const RawOutputRecord& r : records) REQUIRE(w.submit(r) == SubmitResult::accepted);
    h.loop.start();
    Written out;
    out.report = close(w);
    out.counters = w.counters();
    out.lines = read_lines(h.dir.path() / "2026-11-04T05" / file_name());
    return out;
}

std::string line_of(const RawOutputRecord& r, std::optional<Capture> capture)
{
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    if (capture) jsonlw::serialize_raw_output(r, line, *capture);
    else jsonlw::serialize_raw_output(r, line);
    return std::string(line.view());
}

}  // namespace

TEST_CASE("With capture metadata, text, frames and token ids are replaced by lengths and "
          "SHA-256 digests, alternatives and logits rows left out, everything else kept and "
          "counted",
          "[raw_output][capture]")
{
    const Written m = write(Capture::metadata, {hello_record(), invalid_utf8_record()});
    REQUIRE(m.lines.size() == 2);
    // sha256("hello") is the well-known vector; sha256("[1,2]") the ids as the full line
    // writes them.
    CHECK(m.lines[0] ==
          R"({"event":"raw_output","request_id":"42","disagg_request_id":"7","output_index":1,)"
          R"("started_at":"2026-11-04T05:06:07.123456+00:00","finished_at":"2026-11-04T05:06:08.623456+00:00",)"
          R"("streaming":true,"aborted":false,"capture":"metadata","text_len":5,)"
          R"("text_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",)"
          R"("frame_lens":[3,2],)"
          R"("frames_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",)"
          R"("token_ids_sha256":"49a64717d5d4cb19952e6eac2946415cf6879adacf9908e7d872332d32c6e684",)"
          R"("num_output_tokens":2,"frames_consistent":true,"logprobs":[-0.25,-1.5],"ranks":[1,2]})");
    // "h\xFF" + "llo": the full line holds "h\u{FFFD}l" and "lo" (5 + 2 bytes); no ids: "[]".
    CHECK(m.lines[1] ==
          R"({"event":"raw_output","request_id":"43","disagg_request_id":null,"output_index":0,)"
          R"("started_at":"2026-11-04T05:06:07.123456+00:00","finished_at":"2026-11-04T05:06:08.623456+00:00",)"
          R"("streaming":false,"aborted":false,"capture":"metadata","text_len":7,)"
          R"("text_sha256":"d72aaa93df5ea3243dc9ef496dde80ffff659a2e6b7164af2d7591f763edabf4",)"
          R"("frame_lens":[5,2],)"
          R"("frames_sha256":"d72aaa93df5ea3243dc9ef496dde80ffff659a2e6b7164af2d7591f763edabf4",)"
          R"("token_ids_sha256":"4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",)"
          R"("num_output_tokens":0,"frames_consistent":true,"partial":true,"end_reason":"evicted"})");
    CHECK(m.report.stats.written == 2);
    CHECK(m.report.stats.sanitized == 1);
    CHECK(m.counters.metadata_captured == 2);
    // The free function writes the same bytes.
    CHECK(line_of(hello_record(), Capture::metadata) == m.lines[0]);
    CHECK(line_of(invalid_utf8_record(), Capture::metadata) == m.lines[1]);
}

TEST_CASE("With capture full, the default, the lines are byte for byte those of a writer "
          "whose options do not name it, and nothing is counted as metadata",
          "[raw_output][capture]")
{
    const std::vector<RawOutputRecord> records = {hello_record(), invalid_utf8_record()};
    const Written unnamed = write(std::nullopt, records);
    const Written full = write(Capture::full, records);
    REQUIRE(full.lines.size() == 2);
    CHECK(full.lines == unnamed.lines);
    CHECK(full.lines[0] == line_of(records[0], std::nullopt));
    CHECK(full.lines[0] == line_of(records[0], Capture::full));
    CHECK(full.lines[0] ==
          R"({"event":"raw_output","request_id":"42","disagg_request_id":"7","output_index":1,)"
          R"("started_at":"2026-11-04T05:06:07.123456+00:00","finished_at":"2026-11-04T05:06:08.623456+00:00",)"
          R"("streaming":true,"aborted":false,"text":"hello","frames":["hel","lo"],"token_ids":[1,2],)"
          R"("num_output_tokens":2,"frames_consistent":true,"logprobs":[-0.25,-1.5],"ranks":[1,2],)"
          R"("top_logprobs":[[[1,-0.25]],[[9,-1.0]]],)"
          R"("first_gen_logits":[{"data":"AAAAAAAAAAA=","shape":[1,2],"dtype":"float32"}]})");
    CHECK(full.counters.metadata_captured == 0);
    CHECK(unnamed.counters.metadata_captured == 0);
}

TEST_CASE("On four serializer threads, each metadata line's digests are those recomputed from "
          "its own record's full line",
          "[raw_output][capture]")
{
    std::vector<RawOutputRecord> records;
    for (int i = 0; i < 300; ++i) {
        RawOutputRecord r;
        r.request_id = std::uint64_t(i);
        r.started_at = at();
        r.finished_at = at(std::chrono::microseconds{i});
        const std::string word = fmt::format("word-{} ", i);
        for (int k = 0; k <= i % 7; ++k) {
            r.frames_text += word;
            r.frame_ends.push_back(r.frames_text.size());
            r.token_ids.push_back(i * 10 + k);
        }
        records.push_back(std::move(r));
    }
    const Written full = write(Capture::full, records, 4);
    const Written meta = write(Capture::metadata, records, 4);
    REQUIRE(full.lines.size() == records.size());
    REQUIRE(meta.lines.size() == records.size());
    CHECK(meta.counters.metadata_captured == records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        simdjson::dom::parser fp, mp;
        simdjson::dom::element f, m;
        REQUIRE(fp.parse(full.lines[i]).get(f) == simdjson::SUCCESS);
        REQUIRE(mp.parse(meta.lines[i]).get(m) == simdjson::SUCCESS);
        std::string_view text, text_sha, frames_sha, ids_sha;
        REQUIRE(f["text"].get(text) == simdjson::SUCCESS);
        REQUIRE(m["text_sha256"].get(text_sha) == simdjson::SUCCESS);
        REQUIRE(m["frames_sha256"].get(frames_sha) == simdjson::SUCCESS);
        REQUIRE(m["token_ids_sha256"].get(ids_sha) == simdjson::SUCCESS);
        simdjson::dom::array frame_values;  // a named array: value() of a temporary result dangles
        REQUIRE(f["frames"].get_array().get(frame_values) == simdjson::SUCCESS);
        std::string frames;
        for (simdjson::dom::element fr : frame_values) frames += std::string_view(fr.get_string().value());
        INFO(full.lines[i] << "\n" << meta.lines[i]);
        CHECK(text_sha == sha256_hex(text));
        CHECK(frames_sha == sha256_hex(frames));
        CHECK(ids_sha == sha256_hex(simdjson::minify(f["token_ids"].value())));
        CHECK(std::uint64_t(m["text_len"].get_uint64().value()) == text.size());
    }
}
