// RawJsonWriter: records are JSON texts, validated in full with simdjson and minified to one
// line; anything else is malformed and dropped alone (scenario d of issue 2 point 5).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::RawJsonOptions;
using jsonlw::RawJsonWriter;
using jsonlw::SubmitResult;

namespace {

// Submits every text before the drain runs (one batch), flushes, returns the file's lines.
std::vector<std::string> write_all(RawJsonWriter& w, IoRunner& loop, const std::vector<std::string>& texts)
{
    w.start();
    for (const auto& t : texts) REQUIRE(w.submit(t) == SubmitResult::accepted);
    loop.start();
    flush(w);
    return read_lines(w.file_path());
}

}  // namespace

TEST_CASE("a JSON object is accepted and minified to one line", "[integration][raw_json]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner loop;
    RawJsonWriter w(loop.executor(), test_options(dir.path(), logs));
    const auto lines = write_all(w, loop, {
        "{ \"a\" : 1 , \"b\" : [ 1 , 2 , { \"c\" : null } ] }",
        "{\n  \"multi\": \"line\",\n  \"n\": -1.5e3\n}\n",
        "\t{\"s\":\"with \\n escape and \\\"quote\\\"\",\"u\":\"\xC3\xA9\\u00e9\"}  ",
        "{}",
    });
    CHECK(lines == std::vector<std::string>{
                       R"({"a":1,"b":[1,2,{"c":null}]})",
                       R"({"multi":"line","n":-1.5e3})",
                       "{\"s\":\"with \\n escape and \\\"quote\\\"\",\"u\":\"\xC3\xA9\\u00e9\"}",
                       "{}",
                   });
    for (const auto& l : lines) CHECK(is_valid_json(l));
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 4);
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));
}

TEST_CASE("a non-object JSON value is malformed by default and accepted with allow_any_value", "[integration][raw_json]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner loop;
    const std::vector<std::string> texts = {"[1, 2]", "{\"ok\":true}", "42", "\"str\"", "null", "true"};

    SECTION("default: only objects")
    {
        RawJsonWriter w(loop.executor(), test_options(dir.path(), logs));
        const auto lines = write_all(w, loop, texts);
        CHECK(lines == std::vector<std::string>{R"({"ok":true})"});
        const auto s = w.stats();
        INFO("stats: " << s);
        CHECK(s.written == 1);
        CHECK(s.dropped.malformed == 5);
        CHECK(invariant_holds(s));
        INFO(logs.dump());
        CHECK(logs.count(LogLevel::warning, "Dropped malformed test record") == 1);
    }
    SECTION("RawJsonOptions{.allow_any_value = true}")
    {
        RawJsonWriter w(loop.executor(), test_options(dir.path(), logs), RawJsonOptions{.allow_any_value = true});
        const auto lines = write_all(w, loop, texts);
        CHECK(lines == std::vector<std::string>{"[1,2]", R"({"ok":true})", "42", "\"str\"", "null", "true"});
        CHECK(w.stats().written == 6);
        CHECK(w.stats().dropped.malformed == 0);
    }
}

TEST_CASE("invalid JSON, trailing garbage, several documents and invalid UTF-8 are malformed and dropped alone", "[integration][raw_json][malformed]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner loop;
    RawJsonWriter w(loop.executor(), test_options(dir.path(), logs));
    const std::vector<std::string> texts = {
        R"({"id":0})",
        R"({"a":})",             // missing value
        R"({"id":1})",
        R"({"a":1} x)",          // trailing garbage
        R"({"a":1}{"b":2})",     // two documents
        "{\"a\":\"\xFF\"}",      // invalid UTF-8
        R"({"a":1)",             // unterminated
        "",                      // empty
        "   ",                   // whitespace only
        R"({'a':1})",            // not JSON quotes
        R"({"a":NaN})",          // not a JSON number
        R"({"id":2})",
    };
    const auto lines = write_all(w, loop, texts);
    CHECK(lines == std::vector<std::string>{R"({"id":0})", R"({"id":1})", R"({"id":2})"});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 3);
    CHECK(s.dropped.malformed == 9);
    CHECK(s.sanitized == 0);
    CHECK(s.dropped.unexpected == 0);
    CHECK(invariant_holds(s));
    INFO(logs.dump());
    const auto warnings = logs.matching(LogLevel::warning, "Dropped malformed test record");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].rfind("Dropped malformed test record: ", 0) == 0);
    CHECK(logs.count(LogLevel::error) == 0);
}

TEST_CASE("a large record with deep nesting is minified whole", "[integration][raw_json]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner loop;
    RawJsonWriter w(loop.executor(), test_options(dir.path(), logs));
    std::string big = "{ \"blob\" : \"" + std::string(200'000, 'x') + "\", \"deep\": ";
    std::string minified = "{\"blob\":\"" + std::string(200'000, 'x') + "\",\"deep\":";
    for (int i = 0; i < 100; ++i) {
        big += "[ ";
        minified += "[";
    }
    for (int i = 0; i < 100; ++i) {
        big += " ]";
        minified += "]";
    }
    big += " }";
    minified += "}";
    const auto lines = write_all(w, loop, {big, "{\"after\":1}"});
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == minified);
    CHECK(lines[1] == R"({"after":1})");
}

TEST_CASE("batch_bytes caps a batch by the records' sizes", "[integration][raw_json][batching]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner loop;
    auto seam = std::make_shared<SeamFileIo>();
    auto o = test_options(dir.path(), logs);
    o.batch_bytes = 100;
    o.file_io = seam;
    RawJsonWriter w(loop.executor(), o);
    std::vector<std::string> texts;
    for (int i = 0; i < 10; ++i) {
        std::string t = "{\"id\":" + std::to_string(i) + ",\"pad\":\"";
        t += std::string(40 - t.size() - 2, 'p') + "\"}";
        REQUIRE(t.size() == 40);
        texts.push_back(t);
    }
    // 40-byte records, 100-byte cap: a batch stops growing once it reaches 100 bytes (3 records).
    const auto lines = write_all(w, loop, texts);
    CHECK(lines == texts);
    CHECK(seam->successful_write_lines() == std::vector<std::size_t>{3, 3, 3, 1});
    CHECK(w.stats().batches == 4);
}

TEST_CASE("submitting from many threads keeps every accepted JSON text whole", "[integration][raw_json][concurrency]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner loop;
    auto o = test_options(dir.path(), logs);
    o.queue_capacity = 1 << 14;
    RawJsonWriter w(loop.executor(), o);
    w.start();
    loop.start();
    std::atomic<long> accepted{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < 3; ++p)
        threads.emplace_back([&, p] {
            for (int i = 0; i < 3000; ++i)
                accepted += w.submit("{ \"id\" : " + std::to_string(p * 1'000'000 + i) + " }") == SubmitResult::accepted;
        });
    for (auto& t : threads) t.join();
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == static_cast<std::uint64_t>(accepted.load()));
    const auto lines = read_lines(w.file_path());
    CHECK(lines.size() == report.stats.written);
    std::size_t bad = 0;
    for (const auto& l : lines) bad += !json_id(l).has_value() || l.find(' ') != std::string::npos;
    CHECK(bad == 0);
}
