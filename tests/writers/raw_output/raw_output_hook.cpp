// RawOutputWriter as a post-processor hook: the scenarios of TensorRT-LLM's
// tests/unittest/executor/test_raw_output_hook.py (PR "add a built-in post-processor hook
// that dumps the raw model output"), one TEST_CASE per test that applies outside Python,
// under the same name. Every line the writer produces is parsed back and checked
// (raw_output_support.hpp).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

// The documented include, first: it must stand on its own.
#include <jsonlw/raw_output_writer.hpp>

#include "raw_output_support.hpp"

#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace jsonlw_test;
using namespace raw_output_test;
using jsonlw::LogLevel;

namespace {

// A writer over a fresh directory, its loop running.
struct Fixture : Harness {
    RawOutputWriter w;

    explicit Fixture(std::size_t max_pending = 4096)
        : w(executor(), [&] {
              auto o = raw_output_test::options(*this);
              o.max_pending = max_pending;
              return o;
          }())
    {
        start(w);
    }

    // Closes the writer and reads back everything it wrote.
    std::vector<Record> close_and_read()
    {
        const auto report = close(w);
        CHECK(report.drained);
        CHECK(invariant_holds(report.stats));
        CHECK(report.stats.dropped.total() == 0);
        CHECK(report.stats.written == report.stats.submitted);
        return read_records(dir.path());
    }
};

}  // namespace

TEST_CASE("the served text is unchanged", "[raw_output][hook]")
{
    static_assert(noexcept(std::declval<RawOutputWriter&>().on_chunk(std::declval<const OutputChunk&>())));
    static_assert(noexcept(std::declval<RawOutputWriter&>().on_request_end(1, "error")));
    static_assert(std::is_same_v<decltype(OutputChunk::text_diff), std::string_view>);

    Fixture f;
    std::string served = "<tool_call>{\"na";
    std::vector<std::int32_t> ids = {27, 14172, 29};
    std::string full = served;
    const std::string served_before = served, full_before = full;
    const std::vector<std::int32_t> ids_before = ids;
    const void* const data_before = served.data();

    OutputChunk c;
    c.request_id = 1;
    c.text_diff = served;
    c.token_ids_diff = ids;
    c.streaming = true;
    c.text = std::string_view(full);
    f.w.on_chunk(c);
    c.is_final = true;
    c.text_diff = {};
    c.token_ids_diff = {};
    f.w.on_chunk(c);

    // Byte for byte, same buffer: the hook read the caller's text and ids, nothing more.
    CHECK(served == served_before);
    CHECK(served.data() == data_before);
    CHECK(full == full_before);
    CHECK(ids == ids_before);

    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].text == served_before);
    CHECK(records[0].frames == Strings{served_before});
}

TEST_CASE("without the directory nothing is recorded", "[raw_output][hook]")
{
    TempDir cwd_probe;
    LogCapture logs;
    IoRunner loop;
    RawOutputOptions o;  // no directory
    o.log = logs.sink();
    RawOutputWriter w(loop.executor(), o);
    w.start();
    loop.start();
    feed(w, {.req = 1, .text = "hello", .ids = {1, 2}});
    feed(w, {.req = 1, .text = " world", .ids = {3}, .final_ = true});
    feed(w, {.req = 2, .text = "x", .ids = {4}});
    w.on_request_end(2, "error");
    CHECK_FALSE(w.recording());
    CHECK(w.pending_outputs() == 0);  // no state kept

    const auto report = close(w);
    CHECK(report.stats == jsonlw::WriterStats{});  // nothing submitted, no drop counted
    const auto c = w.counters();
    CHECK(c.finished == 0);
    CHECK(c.partial == 0);
    CHECK(c.not_recorded == 0);
    CHECK(c.hook_failures == 0);
    CHECK(w.file_path().empty());  // no file
    INFO(logs.dump());
    // One warning, naming the missing setting; nothing else.
    REQUIRE(logs.size() == 1);
    const auto warnings = logs.matching(LogLevel::warning, "Raw output recording is off");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("TRTLLM_RAW_OUTPUT_DIR") != std::string::npos);
    CHECK(warnings[0].find("RawOutputOptions::directory") != std::string::npos);
}

// --- frames ---

TEST_CASE("streaming frames keep the chunk boundaries", "[raw_output][hook][frames]")
{
    Fixture f;
    const Strings chunks = {"<tool_call>{\"na", "me\": \"f\"}", "</tool_call>"};
    std::string so_far;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        so_far += chunks[i];
        feed(f.w, {.req = 3, .text = chunks[i], .ids = {static_cast<std::int32_t>(100 + i)},
                   .final_ = i + 1 == chunks.size(), .full_text = so_far});
    }
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    const Record& r = records[0];
    CHECK(r.frames == chunks);  // a marker split across chunks stays split
    CHECK(r.text == "<tool_call>{\"name\": \"f\"}</tool_call>");
    CHECK(r.frames_consistent);
    CHECK(r.streaming);
    CHECK_FALSE(r.partial);
    CHECK(r.request_id == "3");
    CHECK(r.output_index == 0);
}

TEST_CASE("chunks that add no text are not frames", "[raw_output][hook][frames]")
{
    Fixture f;
    feed(f.w, {.req = 4, .text = "a", .ids = {1}});
    feed(f.w, {.req = 4, .text = "", .ids = {2}});
    feed(f.w, {.req = 4, .text = "b", .ids = {3}});
    feed(f.w, {.req = 4, .text = "", .ids = {}, .final_ = true});
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].frames == Strings{"a", "b"});
    CHECK(records[0].text == "ab");
    CHECK(records[0].token_ids == Ids{1, 2, 3});
}

TEST_CASE("each output of a request keeps its own frames", "[raw_output][hook][frames]")
{
    Fixture f;  // n = 2, over two chunks; the outputs' chunks interleave
    feed(f.w, {.req = 5, .idx = 0, .text = "A1", .ids = {10}});
    feed(f.w, {.req = 5, .idx = 1, .text = "B1", .ids = {20}});
    feed(f.w, {.req = 5, .idx = 0, .text = "A2", .ids = {11}, .final_ = true});
    feed(f.w, {.req = 5, .idx = 1, .text = "B2", .ids = {21}, .final_ = true});
    CHECK(f.w.pending_outputs() == 0);
    const auto records = by_key(f.close_and_read());
    REQUIRE(records.size() == 2);
    CHECK(records.at("5/0").frames == Strings{"A1", "A2"});
    CHECK(records.at("5/0").token_ids == Ids{10, 11});
    CHECK(records.at("5/1").frames == Strings{"B1", "B2"});
    CHECK(records.at("5/1").token_ids == Ids{20, 21});
}

TEST_CASE("a non-streaming request records its one chunk", "[raw_output][hook][frames]")
{
    Fixture f;
    feed(f.w, {.req = 6, .text = "The whole answer.", .ids = {1, 2, 3, 4}, .final_ = true,
               .streaming = false, .full_text = "The whole answer."});
    CHECK(f.w.pending_outputs() == 0);
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].frames == Strings{"The whole answer."});
    CHECK(records[0].text == "The whole answer.");
    CHECK_FALSE(records[0].streaming);
    CHECK(records[0].frames_consistent);
}

// --- token ids ---

TEST_CASE("the token ids are recorded with the text", "[raw_output][hook][tokens]")
{
    Fixture f;
    // 151644 and 151645 add no text (special tokens the detokenizer skips).
    feed(f.w, {.req = 7, .text = "", .ids = {151644}});
    feed(f.w, {.req = 7, .text = "Hi", .ids = {13048}});
    feed(f.w, {.req = 7, .text = " there", .ids = {1052}});
    feed(f.w, {.req = 7, .text = "", .ids = {151645}, .final_ = true});
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].text == "Hi there");
    CHECK(records[0].frames == Strings{"Hi", " there"});
    CHECK(records[0].token_ids == Ids{151644, 13048, 1052, 151645});
    CHECK(records[0].num_output_tokens == 4);
}

TEST_CASE("a non-streaming request records all its token ids", "[raw_output][hook][tokens]")
{
    Fixture f;
    std::vector<std::int32_t> ids;
    for (std::int32_t i = 0; i < 300; ++i) ids.push_back(i * 7);
    feed(f.w, {.req = 8, .text = "long", .ids = ids, .final_ = true, .streaming = false});
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].token_ids == Ids(ids.begin(), ids.end()));
    CHECK(records[0].num_output_tokens == 300);
}

// --- records and files ---

TEST_CASE("one record is written when the output finishes", "[raw_output][hook][records]")
{
    Fixture f;
    feed(f.w, {.req = 9, .text = "a", .ids = {1}});
    feed(f.w, {.req = 9, .text = "b", .ids = {2}});
    flush(f.w);
    CHECK(read_records(f.dir.path()).empty());  // nothing before the final chunk
    CHECK(f.w.stats().submitted == 0);
    CHECK(f.w.pending_outputs() == 1);

    feed(f.w, {.req = 9, .text = "c", .ids = {3}, .final_ = true});
    flush(f.w);
    const auto records = read_records(f.dir.path());
    REQUIRE(records.size() == 1);  // one line per output, not per chunk
    CHECK(records[0].frames == Strings{"a", "b", "c"});
    CHECK(f.w.pending_outputs() == 0);
    CHECK(f.w.counters().finished == 1);
    CHECK(f.close_and_read().size() == 1);
}

TEST_CASE("a finished record is filed under its hour in a per-process file", "[raw_output][hook][records]")
{
    Harness h;
    // Two instances in one process (the in-proxy path and a worker, say) share one file.
    RawOutputWriter a(h.executor(), options(h));
    RawOutputWriter b(h.executor(), options(h));
    a.start();
    b.start();
    h.loop.start();
    const auto before = jsonlw::WallClock::now();
    feed(a, {.req = 1, .text = "from a", .ids = {1}, .final_ = true});
    feed(b, {.req = 2, .text = "from b", .ids = {2}, .final_ = true});
    close(a);
    close(b);
    const auto after = jsonlw::WallClock::now();

    const auto records = read_records(h.dir.path());  // checks each file against finished_at
    REQUIRE(records.size() == 2);
    CHECK(records[0].file == records[1].file);
    const std::string hour = records[0].file.parent_path().filename().string();
    CHECK((hour == jsonlw::utc_hour(before) || hour == jsonlw::utc_hour(after)));
    CHECK(records[0].file == h.dir.path() / hour / file_name());
    CHECK(by_key(records).at("1/0").text == "from a");
    CHECK(by_key(records).at("2/0").text == "from b");
}

TEST_CASE("the disaggregated request id is recorded as an exact string", "[raw_output][hook][records]")
{
    Fixture f;
    const std::uint64_t above_2_53 = (std::uint64_t{1} << 53) + 1;  // 9007199254740993
    feed(f.w, {.req = 18446744073709551615ULL, .text = "x", .ids = {1}, .disagg = above_2_53});
    feed(f.w, {.req = 18446744073709551615ULL, .text = "y", .final_ = true});
    feed(f.w, {.req = 11, .text = "z", .final_ = true});  // aggregated serving: null
    const auto records = by_key(f.close_and_read());
    REQUIRE(records.size() == 2);
    const Record& r = records.at("18446744073709551615/0");
    REQUIRE(r.disagg_request_id);
    CHECK(*r.disagg_request_id == "9007199254740993");
    CHECK(r.line.find("\"disagg_request_id\":\"9007199254740993\"") != std::string::npos);
    CHECK(r.line.find("\"request_id\":\"18446744073709551615\"") != std::string::npos);
    CHECK_FALSE(records.at("11/0").disagg_request_id);
    CHECK(records.at("11/0").line.find("\"disagg_request_id\":null") != std::string::npos);
}

TEST_CASE("an aborted output is recorded as aborted", "[raw_output][hook][records]")
{
    Fixture f;
    feed(f.w, {.req = 12, .text = "partial ans", .ids = {1, 2}});
    feed(f.w, {.req = 12, .text = "", .final_ = true, .aborted = true});
    feed(f.w, {.req = 13, .text = "complete", .ids = {3}, .final_ = true});
    const auto records = by_key(f.close_and_read());
    REQUIRE(records.size() == 2);
    CHECK(records.at("12/0").aborted);
    CHECK(records.at("12/0").text == "partial ans");
    CHECK_FALSE(records.at("12/0").partial);  // it did get its final chunk
    CHECK_FALSE(records.at("13/0").aborted);
}

TEST_CASE("it loads through the documented import path", "[raw_output][hook][records]")
{
    // This TU includes <jsonlw/raw_output_writer.hpp> before anything of jsonlw, and the
    // writer is enabled the documented way: the directory from TRTLLM_RAW_OUTPUT_DIR.
    Harness h;
    REQUIRE(::setenv(jsonlw::raw_output_dir_env, h.dir.path().c_str(), 1) == 0);
    const auto from_env = jsonlw::raw_output_dir_from_env();
    ::unsetenv(jsonlw::raw_output_dir_env);
    CHECK(from_env == h.dir.path());
    CHECK(jsonlw::raw_output_dir_from_env().empty());

    RawOutputWriter w(h.executor(), {.directory = from_env, .log = h.logs.sink()});
    h.start(w);
    CHECK(w.recording());
    feed(w, {.req = 1, .text = "ok", .final_ = true});
    close(w);
    REQUIRE(read_records(h.dir.path()).size() == 1);
    CHECK(h.logs.size() == 0);
}

// --- never raising ---

TEST_CASE("an unwritable directory costs the record not the response", "[raw_output][hook][faults]")
{
    Harness h;
    write_file(h.dir / "a-file", "not a directory");
    RawOutputWriter w(h.executor(), options(h.dir / "a-file" / "raw", h.logs));
    w.start();  // cannot create the directory: one error, the hook turns itself off
    h.loop.start();
    CHECK_FALSE(w.recording());

    std::string served = "still served";
    const std::string before = served;
    feed(w, {.req = 1, .text = served, .ids = {1}});
    feed(w, {.req = 1, .text = "", .final_ = true});
    feed(w, {.req = 2, .text = served, .final_ = true});
    CHECK(served == before);
    CHECK(w.pending_outputs() == 0);  // a hook that cannot record keeps nothing
    const auto c = w.counters();
    CHECK(c.not_recorded == 2);  // the records are what it costs
    CHECK(c.hook_failures == 0);

    const auto report = close(w);
    CHECK(invariant_holds(report.stats));
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::error, "Disabling raw output JSONL output") == 1);
    CHECK(h.logs.count(LogLevel::warning, "Dropped 1 raw output record(s): the writer is disabled") == 1);
    CHECK_FALSE(std::filesystem::exists(h.dir / "a-file" / "raw"));
}

TEST_CASE("a record the writer half cannot represent costs only that record", "[raw_output][hook][faults]")
{
    Harness h;
    auto o = options(h);
    // Hands the writer half request 2's record with frame ends that do not match its text: a
    // record the line cannot represent.
    o.before_submit = [](jsonlw::RawOutputRecord& r) {
        if (r.request_id == 2) r.frame_ends.push_back(r.frames_text.size() + 7);
    };
    RawOutputWriter w(h.executor(), o);
    h.start(w);
    for (std::uint64_t req = 1; req <= 3; ++req) {
        feed(w, {.req = req, .text = "t" + std::to_string(req), .ids = {1}});
        feed(w, {.req = req, .text = "!", .final_ = true});
    }
    CHECK(w.pending_outputs() == 0);
    const auto report = close(w);
    CHECK(report.stats.submitted == 3);
    CHECK(report.stats.written == 2);
    CHECK(report.stats.dropped.malformed == 1);
    CHECK(invariant_holds(report.stats));
    const auto records = by_key(read_records(h.dir.path()));
    REQUIRE(records.size() == 2);
    CHECK(records.at("1/0").text == "t1!");
    CHECK(records.at("3/0").text == "t3!");
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Dropped malformed raw output record") == 1);
}

// --- requests that end in an error ---

TEST_CASE("a request ended by an error is written as partial and released", "[raw_output][hook][end]")
{
    Fixture f;
    feed(f.w, {.req = 7, .idx = 0, .text = "<think>abc", .ids = {1, 2}, .disagg = 70});
    feed(f.w, {.req = 7, .idx = 1, .text = "<think>xy", .ids = {3}});
    feed(f.w, {.req = 7, .idx = 0, .text = "d", .ids = {4}});
    feed(f.w, {.req = 8, .text = "other", .ids = {5}});
    REQUIRE(f.w.pending_outputs() == 3);
    f.w.on_request_end(7, "error");
    CHECK(f.w.pending_outputs() == 1);
    f.w.on_request_end(8, "postprocessing_error");
    CHECK(f.w.pending_outputs() == 0);
    f.w.on_request_end(7, "error");  // released: ending it again finds nothing
    CHECK(f.w.counters().partial == 3);

    const auto records = by_key(f.close_and_read());
    REQUIRE(records.size() == 3);
    const Record& a = records.at("7/0");
    CHECK(a.partial == std::optional<bool>(true));
    CHECK(a.end_reason == std::optional<std::string>("error"));
    CHECK(a.frames == Strings{"<think>abc", "d"});
    CHECK(a.token_ids == Ids{1, 2, 4});
    CHECK(a.disagg_request_id == std::optional<std::string>("70"));
    CHECK_FALSE(a.frames_consistent);
    CHECK(records.at("7/1").end_reason == std::optional<std::string>("error"));
    CHECK(records.at("7/1").frames == Strings{"<think>xy"});
    CHECK(records.at("8/0").end_reason == std::optional<std::string>("postprocessing_error"));
}

TEST_CASE("ending one request leaves the others alone", "[raw_output][hook][end]")
{
    Fixture f;
    for (std::uint64_t req = 1; req <= 3; ++req)
        feed(f.w, {.req = req, .text = "r" + std::to_string(req), .ids = {1}});
    f.w.on_request_end(2, "error");
    CHECK(f.w.pending_outputs() == 2);
    feed(f.w, {.req = 1, .text = "+", .final_ = true});
    feed(f.w, {.req = 3, .text = "+", .final_ = true});
    const auto records = by_key(f.close_and_read());
    REQUIRE(records.size() == 3);
    CHECK(records.at("2/0").end_reason == std::optional<std::string>("error"));
    for (const char* k : {"1/0", "3/0"}) {
        CHECK_FALSE(records.at(k).partial);
        CHECK(records.at(k).frames.size() == 2);
        CHECK(records.at(k).frames_consistent);
    }
}

TEST_CASE("a request that ended before any output writes nothing", "[raw_output][hook][end]")
{
    Fixture f;
    feed(f.w, {.req = 1, .text = "", .ids = {}});  // a chunk that produced nothing
    f.w.on_request_end(1, "error");
    f.w.on_request_end(2, "error");  // and one the hook never saw
    CHECK(f.w.pending_outputs() == 0);
    CHECK(f.w.counters().released_empty == 1);
    CHECK(f.close_and_read().empty());
    CHECK(f.w.stats().submitted == 0);
}

TEST_CASE("a request that generated only hidden tokens is written", "[raw_output][hook][end]")
{
    Fixture f;
    feed(f.w, {.req = 1, .text = "", .ids = {151644, 151645}});
    f.w.on_request_end(1, "error");
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].text.empty());
    CHECK(records[0].frames.empty());
    CHECK(records[0].token_ids == Ids{151644, 151645});
    CHECK(records[0].end_reason == std::optional<std::string>("error"));
}

TEST_CASE("ended requests do not accumulate", "[raw_output][hook][end]")
{
    Fixture f;
    const std::string quarter(256, 'k');
    for (std::uint64_t req = 1; req <= 1000; ++req) {
        for (int i = 0; i < 4; ++i) feed(f.w, {.req = req, .text = quarter, .ids = {i}});  // 1 KiB
        f.w.on_request_end(req, "error");
    }
    CHECK(f.w.pending_outputs() == 0);  // no state left behind
    const auto c = f.w.counters();
    CHECK(c.partial == 1000);
    CHECK(c.pending == 0);
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1000);
    for (const auto& r : records) {
        CHECK(r.text.size() == 1024);
        CHECK(r.frames.size() == 4);
    }
}

TEST_CASE("ending an unknown request is harmless", "[raw_output][hook][end]")
{
    Fixture f;
    f.w.on_request_end(404, "error");  // nothing pending at all
    feed(f.w, {.req = 1, .text = "alive", .ids = {1}});
    f.w.on_request_end(404, "error");
    f.w.on_request_end(0, "");
    CHECK(f.w.pending_outputs() == 1);
    feed(f.w, {.req = 1, .text = "!", .final_ = true});
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].text == "alive!");
    CHECK_FALSE(records[0].partial);
    CHECK(f.w.hook_failures() == 0);
    INFO(f.logs.dump());
    CHECK(f.logs.size() == 0);
}

// --- Sampled sequences, and the limit on outputs held at once ---

TEST_CASE("a record that joins two sampled sequences is marked", "[raw_output][hook][sequences]")
{
    Fixture f;
    // best_of = 2, n = 1: sequence A holds index 0 first, then sequence B ranks higher and
    // takes index 0; the engine's text is B's whole text.
    feed(f.w, {.req = 1, .text = "Hello", .ids = {1}, .full_text = "Hello"});
    feed(f.w, {.req = 1, .text = " there", .ids = {2}, .final_ = true, .full_text = "Hi there"});
    // The same chunks from one sequence are consistent.
    feed(f.w, {.req = 2, .text = "Hi", .ids = {1}, .full_text = "Hi"});
    feed(f.w, {.req = 2, .text = " there", .ids = {2}, .final_ = true, .full_text = "Hi there"});
    // Caught mid-stream too, even when the final text happens to match the frames.
    feed(f.w, {.req = 3, .text = "ab", .ids = {1}, .full_text = "ab"});
    feed(f.w, {.req = 3, .text = "cd", .ids = {2}, .full_text = "xyzcd"});
    feed(f.w, {.req = 3, .text = "", .ids = {}, .final_ = true});
    const auto records = by_key(f.close_and_read());
    REQUIRE(records.size() == 3);
    const Record& joined = records.at("1/0");
    CHECK_FALSE(joined.frames_consistent);
    CHECK(joined.text == "Hi there");  // what the engine reports
    CHECK(joined.frames == Strings{"Hello", " there"});  // what the hook was handed
    CHECK(records.at("2/0").frames_consistent);
    CHECK(records.at("2/0").text == "Hi there");
    CHECK_FALSE(records.at("3/0").frames_consistent);
    CHECK(records.at("3/0").text == "abcd");
}

TEST_CASE("outputs past the limit are written as evicted", "[raw_output][hook][eviction]")
{
    Fixture f(2);
    CHECK(f.w.max_pending() == 2);
    feed(f.w, {.req = 1, .text = "one", .ids = {1}});
    feed(f.w, {.req = 2, .text = "two", .ids = {2}});
    feed(f.w, {.req = 3, .text = "three", .ids = {3}});  // a third output: 1 goes
    CHECK(f.w.pending_outputs() == 2);
    for (std::uint64_t req = 4; req <= 10; ++req) feed(f.w, {.req = req, .text = "n", .ids = {4}});
    CHECK(f.w.pending_outputs() == 2);  // bounded
    flush(f.w);
    const auto evicted = read_records(f.dir.path());
    REQUIRE(evicted.size() == 8);
    for (std::size_t i = 0; i < evicted.size(); ++i) {
        CHECK(evicted[i].request_id == std::to_string(i + 1));
        CHECK(evicted[i].partial == std::optional<bool>(true));
        CHECK(evicted[i].end_reason == std::optional<std::string>("evicted"));
    }
    CHECK(evicted[0].text == "one");
    CHECK(f.w.counters().evicted == 8);
    // An evicted output's later chunks start a new record.
    feed(f.w, {.req = 10, .text = "!", .final_ = true});
    const auto all = f.close_and_read();  // close writes output 9 as "shutdown"
    REQUIRE(all.size() == 10);
    CHECK(by_key(all).at("10/0").text == "n!");
    CHECK(by_key(all).at("9/0").end_reason == std::optional<std::string>("shutdown"));
}

TEST_CASE("the least recently updated output is evicted first", "[raw_output][hook][eviction]")
{
    Fixture f(3);
    feed(f.w, {.req = 1, .text = "A", .ids = {1}});
    feed(f.w, {.req = 2, .text = "B", .ids = {2}});
    feed(f.w, {.req = 3, .text = "C", .ids = {3}});
    feed(f.w, {.req = 1, .text = "a", .ids = {4}});  // 1 is now the most recently updated
    feed(f.w, {.req = 4, .text = "D", .ids = {5}});  // evicts 2, not 1 (the oldest inserted)
    feed(f.w, {.req = 3, .text = "c", .ids = {6}});
    feed(f.w, {.req = 5, .text = "E", .ids = {7}});  // evicts 1 (updated before 3 and 4)
    flush(f.w);
    const auto evicted = read_records(f.dir.path());
    REQUIRE(evicted.size() == 2);
    CHECK(evicted[0].request_id == "2");
    CHECK(evicted[1].request_id == "1");
    CHECK(evicted[1].frames == Strings{"A", "a"});
    for (std::uint64_t req : {3, 4, 5}) feed(f.w, {.req = req, .text = ".", .final_ = true});
    const auto records = by_key(f.close_and_read());
    REQUIRE(records.size() == 5);
    CHECK(records.at("3/0").frames == Strings{"C", "c", "."});
    CHECK_FALSE(records.at("3/0").partial);
}

TEST_CASE("an evicted output that produced nothing is not written", "[raw_output][hook][eviction]")
{
    Fixture f(1);
    feed(f.w, {.req = 1, .text = "", .ids = {}});
    feed(f.w, {.req = 2, .text = "x", .ids = {1}});  // evicts 1, which has nothing to show
    CHECK(f.w.pending_outputs() == 1);
    feed(f.w, {.req = 2, .text = "", .final_ = true});
    const auto c = f.w.counters();
    CHECK(c.released_empty == 1);
    CHECK(c.evicted == 0);
    const auto records = f.close_and_read();
    REQUIRE(records.size() == 1);
    CHECK(records[0].request_id == "2");
}
