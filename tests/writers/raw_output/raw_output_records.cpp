// RawOutputWriter beyond the PR's list: the exact bytes of a line, logprobs, the hour layout
// of a batch, close, write errors, invalid UTF-8, failures inside the hook, and several
// threads feeding it at once. Every line produced is parsed back (raw_output_support.hpp).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/raw_output_writer.hpp>

#include "raw_output_support.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using namespace raw_output_test;
using jsonlw::LogLevel;
using jsonlw::RawOutputRecord;
using jsonlw::SubmitResult;
using jsonlw::TopLogprob;

namespace {

RawOutputRecord golden_record()
{
    RawOutputRecord r;
    r.request_id = 42;
    r.disagg_request_id = 7;
    r.output_index = 1;
    r.started_at = at();
    r.finished_at = at(std::chrono::microseconds{1'500'000});
    r.streaming = true;
    r.frames_text = "<think>hi</think>ok";
    r.frame_ends = {9, 17, 19};
    r.token_ids = {151667, 6023, 151668, 562};
    return r;
}

}  // namespace

TEST_CASE("a record is one line with every field in order", "[raw_output][records]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    w.start();

    RawOutputRecord partial = golden_record();
    partial.request_id = 43;
    partial.disagg_request_id.reset();
    partial.output_index = 0;
    partial.streaming = false;
    partial.aborted = true;
    partial.frames_consistent = false;
    partial.end_reason = "evicted";
    partial.logprobs = {
        {.token_id = 151667, .logprob = -0.25, .rank = 1,
         .top = {TopLogprob{151667, -0.25}, TopLogprob{9, -1.5}}},
        {.token_id = 6023, .logprob = -std::numeric_limits<double>::infinity()},
        {.token_id = 151668, .logprob = std::numeric_limits<double>::quiet_NaN(), .known = false},
        {.token_id = 562, .logprob = std::numeric_limits<double>::quiet_NaN(), .known = false},
    };
    REQUIRE(w.submit(golden_record()) == SubmitResult::accepted);
    REQUIRE(w.submit(partial) == SubmitResult::accepted);
    h.loop.start();
    close(w);

    const auto file = h.dir.path() / "2026-11-04T05" / file_name();
    const auto lines = read_lines(file);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] ==
          R"({"event":"raw_output","request_id":"42","disagg_request_id":"7","output_index":1,)"
          R"("started_at":"2026-11-04T05:06:07.123456+00:00","finished_at":"2026-11-04T05:06:08.623456+00:00",)"
          R"("streaming":true,"aborted":false,"text":"<think>hi</think>ok","frames":["<think>hi","</think>","ok"],)"
          R"("token_ids":[151667,6023,151668,562],"num_output_tokens":4,"frames_consistent":true})");
    // Logprobs only when present, parallel to token_ids (unknown positions null, counted in
    // logprobs_missing); a non-finite logprob is null and listed in logprobs_nonfinite; ranks
    // and top only when known.
    CHECK(lines[1] ==
          R"({"event":"raw_output","request_id":"43","disagg_request_id":null,"output_index":0,)"
          R"("started_at":"2026-11-04T05:06:07.123456+00:00","finished_at":"2026-11-04T05:06:08.623456+00:00",)"
          R"("streaming":false,"aborted":true,"text":"<think>hi</think>ok","frames":["<think>hi","</think>","ok"],)"
          R"("token_ids":[151667,6023,151668,562],"num_output_tokens":4,"frames_consistent":false,)"
          R"("logprobs":[-0.25,null,null,null],"ranks":[1,null,null,null],)"
          R"("top_logprobs":[[[151667,-0.25],[9,-1.5]],[],[],[]],"logprobs_nonfinite":[1],"logprobs_missing":2,)"
          R"("partial":true,"end_reason":"evicted"})");
    const auto records = read_records(h.dir.path());  // the shape checks, too
    REQUIRE(records.size() == 2);
    CHECK_FALSE(records[0].has_logprobs);
    CHECK(records[1].has_logprobs);
    INFO(lines[0]);
}

TEST_CASE("per-token logprob data handed to the hook is recorded, and omitted when empty", "[raw_output][records]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);
    feed(w, {.req = 1, .text = "a", .ids = {5}, .logprobs = {{.token_id = 5, .logprob = -0.5, .rank = 2}}});
    feed(w, {.req = 1, .text = "b", .ids = {6}, .final_ = true,
             .logprobs = {{.token_id = 6, .logprob = -0.125, .top = {TopLogprob{6, -0.125}}}}});
    feed(w, {.req = 2, .text = "c", .ids = {7}, .final_ = true});
    close(w);
    const auto records = by_key(read_records(h.dir.path()));
    REQUIRE(records.size() == 2);
    CHECK(records.at("2/0").has_logprobs == false);
    const std::string& line = records.at("1/0").line;
    CHECK(line.find(R"("logprobs":[-0.5,-0.125],"ranks":[2,null],"top_logprobs":[[],[[6,-0.125]]])") !=
          std::string::npos);
    CHECK(line.find("logprobs_nonfinite") == std::string::npos);
}

TEST_CASE("records of one batch that finish in different hours go to their own hour folders", "[raw_output][records]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    w.start();
    using std::chrono::minutes;
    const std::vector<jsonlw::WallClock::time_point> finished = {
        at(minutes{50}), at(minutes{53}), at(minutes{60}), at(minutes{52}), at(minutes{-10})};
    for (std::size_t i = 0; i < finished.size(); ++i) {
        RawOutputRecord r = golden_record();
        r.request_id = i;
        r.started_at = finished[i] - std::chrono::seconds{1};
        r.finished_at = finished[i];
        REQUIRE(w.submit(std::move(r)) == SubmitResult::accepted);
    }
    h.loop.start();  // all five in one batch
    const auto report = close(w);
    CHECK(report.stats.written == 5);
    CHECK(report.stats.batches == 3);  // one append per hour folder

    CHECK(files_in(h.dir.path()).size() == 3);
    const auto ids = [&](const char* hour) {
        std::vector<std::string> out;
        for (const auto& line : read_lines(h.dir.path() / hour / file_name()))
            out.push_back(parse_record(line, h.dir.path() / hour / file_name()).request_id);
        return out;
    };
    CHECK(ids("2026-11-04T05") == Strings{"0", "1", "3"});  // submission order kept
    CHECK(ids("2026-11-04T06") == Strings{"2"});
    CHECK(ids("2026-11-04T04") == Strings{"4"});
    CHECK(read_records(h.dir.path()).size() == 5);
}

TEST_CASE("close writes the outputs still in flight as partial with end_reason shutdown", "[raw_output][records]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);
    feed(w, {.req = 1, .idx = 0, .text = "unfinished", .ids = {1}});
    feed(w, {.req = 1, .idx = 1, .text = "also", .ids = {2}});
    feed(w, {.req = 2, .text = "", .ids = {}});  // produced nothing: no record
    feed(w, {.req = 3, .text = "done", .ids = {3}, .final_ = true});
    const auto report = close(w);
    CHECK(w.pending_outputs() == 0);
    CHECK(report.drained);
    CHECK(report.stats.written == 3);
    CHECK(invariant_holds(report.stats));
    const auto records = by_key(read_records(h.dir.path()));
    REQUIRE(records.size() == 3);
    CHECK(records.at("1/0").end_reason == std::optional<std::string>("shutdown"));
    CHECK(records.at("1/1").end_reason == std::optional<std::string>("shutdown"));
    CHECK_FALSE(records.at("3/0").partial);
    // After close: a finished output is refused and counted, never thrown at the caller.
    feed(w, {.req = 4, .text = "late", .final_ = true});
    CHECK(w.stats().dropped.closed == 1);
    CHECK(invariant_holds(w.stats()));
}

TEST_CASE("a write error costs the batch's records, counted, and the hook carries on", "[raw_output][records][faults]")
{
    Harness h(with_seam);
    h.seam->fail_writev(EIO, 1);
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);
    feed(w, {.req = 1, .text = "lost", .ids = {1}, .final_ = true});
    flush(w);
    feed(w, {.req = 2, .text = "kept", .ids = {2}, .final_ = true});
    const auto report = close(w);
    CHECK(report.stats.submitted == 2);
    CHECK(report.stats.written == 1);
    CHECK(report.stats.dropped.write_error == 1);
    CHECK(invariant_holds(report.stats));
    const auto records = read_records(h.dir.path());
    REQUIRE(records.size() == 1);
    CHECK(records[0].text == "kept");
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Failed to write raw output JSONL") == 1);
}

TEST_CASE("invalid UTF-8 in the output is replaced and counted, the record kept", "[raw_output][records]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);
    // A multi-byte character split across two chunks: the text is valid, each frame is not.
    feed(w, {.req = 1, .text = "caf\xC3", .ids = {1}});
    feed(w, {.req = 1, .text = "\xA9", .ids = {2}, .final_ = true});
    feed(w, {.req = 2, .text = "bad \xFF byte", .ids = {3}, .final_ = true});
    const auto report = close(w);
    CHECK(report.stats.written == 2);
    CHECK(report.stats.sanitized == 2);
    const auto records = by_key(read_records(h.dir.path()));
    REQUIRE(records.size() == 2);
    CHECK(records.at("1/0").text == "caf\xC3\xA9");
    CHECK(records.at("1/0").frames == Strings{"caf\xEF\xBF\xBD", "\xEF\xBF\xBD"});
    CHECK_FALSE(records.at("1/0").frames_consistent);  // the frames, as written, do not add up
    CHECK(records.at("2/0").frames_consistent);         // replaced alike in text and frames
    CHECK(records.at("2/0").text == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("a hand-built record whose frames do not fit its text is malformed and dropped alone", "[raw_output][records][faults]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    w.start();
    RawOutputRecord bad = golden_record();
    bad.frame_ends = {9, 40};
    REQUIRE(w.submit(golden_record()) == SubmitResult::accepted);
    REQUIRE(w.submit(std::move(bad)) == SubmitResult::accepted);
    h.loop.start();
    const auto report = close(w);
    CHECK(report.stats.written == 1);
    CHECK(report.stats.dropped.malformed == 1);
    CHECK(invariant_holds(report.stats));
    CHECK(read_records(h.dir.path()).size() == 1);
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning,
                       "Dropped malformed raw output record: frame_ends do not match frames_text") == 1);
}

TEST_CASE("a failure inside the hook costs only its record and never reaches the caller", "[raw_output][records][faults]")
{
    Harness h;
    auto o = options(h);
    // Fails inside the hook (on the caller's thread) for one request.
    o.before_submit = [](RawOutputRecord& r) {
        if (r.request_id == 2) throw std::runtime_error("hook bug for the test");
    };
    RawOutputWriter w(h.executor(), o);
    h.start(w);
    for (std::uint64_t req = 1; req <= 3; ++req) {
        feed(w, {.req = req, .text = "x", .ids = {1}});
        feed(w, {.req = req, .text = "y", .final_ = true});
    }
    CHECK(w.hook_failures() == 1);
    CHECK(w.pending_outputs() == 0);  // its state is released all the same
    const auto report = close(w);
    CHECK(report.stats.submitted == 2);
    CHECK(report.stats.written == 2);
    const auto records = by_key(read_records(h.dir.path()));
    REQUIRE(records.size() == 2);
    CHECK(records.count("1/0") == 1);
    CHECK(records.count("3/0") == 1);
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Dropped 1 raw output record(s): hook bug for the test") == 1);
}

TEST_CASE("several threads feeding different requests at once lose no record", "[raw_output][records][threads]")
{
    Harness h;
    auto o = options(h);
    o.queue_capacity = 1 << 14;  // no drop for want of room: every record must arrive
    RawOutputWriter w(h.executor(), o);
    h.start(w);

    constexpr int threads = 8, requests = 150, outputs = 2, chunks = 5;
    std::atomic<int> ready{0};
    std::atomic<bool> stop_observer{false};
    const auto text_of = [](std::uint64_t req, int out, int c) {
        return "r" + std::to_string(req) + "o" + std::to_string(out) + "c" + std::to_string(c) + ";";
    };
    const auto worker = [&](int t) {
        ++ready;
        while (ready.load() < threads) std::this_thread::yield();
        // Four requests in flight per thread; their chunks and outputs interleave.
        for (int base = 0; base < requests; base += 4) {
            std::vector<std::string> so_far(4 * outputs);
            for (int c = 0; c < chunks; ++c) {
                for (int k = base; k < std::min(base + 4, requests); ++k) {
                    const std::uint64_t req = static_cast<std::uint64_t>(t) * 1'000'000 + k;
                    const bool ends_in_error = k % 10 == 0;
                    for (int out = 0; out < outputs; ++out) {
                        if (ends_in_error && c == chunks - 1) continue;
                        std::string& acc = so_far[(k - base) * outputs + out];
                        const std::string diff = text_of(req, out, c);
                        acc += diff;
                        feed(w, {.req = req, .idx = static_cast<std::uint32_t>(out), .text = diff,
                                 .ids = {c}, .final_ = c == chunks - 1, .full_text = acc});
                    }
                    if (ends_in_error && c == chunks - 1) w.on_request_end(req, "error");
                }
            }
        }
    };
    std::atomic<bool> over_limit{false};
    std::thread observer([&] {  // reads the hook's state while it changes (no Catch2 here)
        while (!stop_observer.load()) {
            if (w.counters().pending > w.max_pending()) over_limit = true;
            std::this_thread::yield();
        }
    });
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto& th : pool) th.join();
    stop_observer = true;
    observer.join();

    CHECK_FALSE(over_limit.load());
    CHECK(w.pending_outputs() == 0);
    CHECK(w.hook_failures() == 0);
    const auto report = close(w);
    constexpr std::uint64_t total = std::uint64_t{threads} * requests * outputs;
    CHECK(report.stats.submitted == total);
    CHECK(report.stats.written == total);
    CHECK(report.stats.dropped.total() == 0);

    const auto records = by_key(read_records(h.dir.path()));
    REQUIRE(records.size() == total);
    for (int t = 0; t < threads; ++t) {
        for (int k = 0; k < requests; ++k) {
            const std::uint64_t req = static_cast<std::uint64_t>(t) * 1'000'000 + k;
            const bool ends_in_error = k % 10 == 0;
            for (int out = 0; out < outputs; ++out) {
                const Record& r = records.at(std::to_string(req) + "/" + std::to_string(out));
                Strings frames;
                Ids ids;
                for (int c = 0; c < (ends_in_error ? chunks - 1 : chunks); ++c) {
                    frames.push_back(text_of(req, out, c));
                    ids.push_back(c);
                }
                INFO(r.line);
                CHECK(r.frames == frames);
                CHECK(r.token_ids == ids);
                if (ends_in_error) {
                    CHECK(r.end_reason == std::optional<std::string>("error"));
                } else {
                    CHECK_FALSE(r.partial);
                    CHECK(r.frames_consistent);
                }
            }
        }
    }
}

TEST_CASE("logprob arrays stay parallel to token_ids when some chunks carry no logprobs", "[raw_output][records][logprobs]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);
    feed(w, {.req = 1, .text = "a", .ids = {5, 6}});  // no logprobs: two unknown positions
    feed(w, {.req = 1, .text = "b", .ids = {7, 8},
             .logprobs = {{.token_id = 7, .logprob = -0.5, .rank = 3}}});  // one short
    feed(w, {.req = 1, .text = "c", .ids = {9}, .final_ = true,
             .logprobs = {{.token_id = 9, .logprob = std::numeric_limits<double>::quiet_NaN(),
                           .top = {TopLogprob{9, -std::numeric_limits<double>::infinity()}}}}});
    close(w);
    const auto records = read_records(h.dir.path());
    REQUIRE(records.size() == 1);
    const std::string& line = records[0].line;
    CHECK(line.find(R"("token_ids":[5,6,7,8,9])") != std::string::npos);
    CHECK(line.find(R"("logprobs":[null,null,-0.5,null,null],"ranks":[null,null,3,null,null],)"
                    R"("top_logprobs":[[],[],[],[],[[9,null]]],"logprobs_nonfinite":[4],)"
                    R"("logprobs_missing":3)") !=
          std::string::npos);
}

TEST_CASE("a first_gen_logits row rides on its output's record in TensorRT-LLM's item format", "[raw_output][records][first_gen]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);
    // fp16 [1, -2, 0.5, 65504]: a golden vector of TensorRT-LLM's _serialize_first_gen_logits
    // (tensorrt_llm/serve/openai_protocol.py).
    const std::vector<std::byte> bytes = {std::byte{0x00}, std::byte{0x3c}, std::byte{0x00},
                                          std::byte{0xc0}, std::byte{0x00}, std::byte{0x38},
                                          std::byte{0xff}, std::byte{0x7b}};
    jsonlw::OutputChunk c;
    c.request_id = 3;
    c.text_diff = "x";
    const std::int32_t id = 1;
    c.token_ids_diff = std::span<const std::int32_t>(&id, 1);
    c.first_gen_logits = jsonlw::FirstGenLogitsView{jsonlw::snapshot::LogitDType::f16, 4, bytes, 2};
    w.on_chunk(c);
    c.first_gen_logits.reset();
    c.text_diff = "y";
    c.is_final = true;
    w.on_chunk(c);
    close(w);
    const auto records = read_records(h.dir.path());
    REQUIRE(records.size() == 1);
    CHECK(records[0].line.find(
              R"("first_gen_logits":[{"data":"ADwAwAA4/3s=","shape":[1,4],"dtype":"float16"}],)"
              R"("first_gen_logits_overflow_to_inf":2})") != std::string::npos);
}

TEST_CASE("a first_gen_logits row whose size does not match its shape makes the record malformed", "[raw_output][records][first_gen][faults]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);
    const std::vector<std::byte> bytes(7);
    jsonlw::OutputChunk c;
    c.request_id = 4;
    c.text_diff = "x";
    c.is_final = true;
    c.first_gen_logits = jsonlw::FirstGenLogitsView{jsonlw::snapshot::LogitDType::f16, 4, bytes, 0};
    w.on_chunk(c);
    c.request_id = 5;
    c.first_gen_logits =
        jsonlw::FirstGenLogitsView{jsonlw::snapshot::LogitDType::f32, 2, std::span(bytes).first(8 - 1), 0};
    w.on_chunk(c);
    const auto report = close(w);
    CHECK(report.stats.dropped.malformed == 2);
    CHECK(read_records(h.dir.path()).empty());
    INFO(h.logs.dump());
    CHECK(h.logs.count_any("7 bytes for shape [1, 4] of float16") >= 1);
}
