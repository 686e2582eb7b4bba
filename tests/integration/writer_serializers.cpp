// WriterOptions::serializer_threads: with 4 serializer threads a writer writes the same bytes,
// in the same order, with the same counters as with 1 — malformed and failing records, a
// per-key write_batch layout, the envelope and RawJsonWriter's batch validation included — and
// a writer whose serialize() is not declared concurrent keeps it on the I/O thread. Each record
// is serialized exactly once whichever thread does it, and start() makes exactly
// serializer_threads - 1 helper threads (checked before anything waits on them). Order and
// accounting under concurrent producers: writer_concurrency.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <jsonlw/raw_json_writer.hpp>

#include <filesystem>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

constexpr std::size_t kRecords = 3000;

// Every 7th record malformed, every 11th a serializer bug, every 13th a "KeyError"
// (malformed by malformed_error()), text lengths varying so chunks differ in size.
std::vector<Rec> mixed_records()
{
    std::vector<Rec> out;
    for (std::size_t i = 0; i < kRecords; ++i) {
        Rec r = rec(static_cast<int>(i), std::string(1 + i % 97, char('a' + i % 26)), i * 0.5);
        r.key = "k" + std::to_string(i % 5);
        r.throw_malformed = i % 7 == 3;
        r.throw_other = i % 11 == 5;
        r.throw_key_error = i % 13 == 8;
        out.push_back(std::move(r));
    }
    return out;
}

struct Outcome {
    std::vector<std::string> files;  // relative path, then its bytes, for every file written
    jsonlw::WriterStats stats;
    std::size_t threads = 0;  // distinct threads serialize() ran on
    std::size_t warnings = 0;
    std::uint64_t serialize_calls = 0;
};

// Threads of this process now (Linux: /proc/self/task holds one entry per thread).
std::size_t process_threads()
{
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}

// Queues every record before the drain runs (so units are full), then closes the writer and
// collects every file under the directory.
template <class Writer, class Make>
Outcome run_with(std::size_t serializers, const std::vector<Rec>& records, Make make,
                 bool concurrent = true, std::size_t gate = 0)
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = records.size();
    o.batch_records = 64;  // many batches, and units of several of them
    o.serializer_threads = serializers;
    Writer w = make(h.executor(), o, h.dir.path());
    if (concurrent) w.declare_concurrent();
    w.gate_serialize(gate);
    // start() makes the helpers (the I/O thread exists since the constructor); nothing else
    // starts or ends a thread meanwhile. Without its helpers the gate below would only open
    // at its deadline, so this is checked first.
    const std::size_t threads_before = process_threads();
    w.start();
    REQUIRE(process_threads() - threads_before == (concurrent ? serializers - 1 : 0));
    for (const Rec& r : records) REQUIRE(w.submit(r) == SubmitResult::accepted);
    h.loop.start();
    const auto report = close(w);
    REQUIRE(report.drained);
    Outcome out;
    out.stats = report.stats;
    out.threads = w.serialize_threads().size();
    out.serialize_calls = w.serialize_calls();
    out.warnings = h.logs.count(LogLevel::warning, "serializer_threads");
    for (const auto& e : std::filesystem::recursive_directory_iterator(h.dir.path())) {
        if (!e.is_regular_file()) continue;
        std::string rel = std::filesystem::relative(e.path(), h.dir.path()).string();
        // The default layout's name holds the start time: keep only what does not vary.
        if (rel.rfind(o.stem + "-", 0) == 0) rel = o.stem + ".jsonl";
        out.files.push_back(rel);
        out.files.push_back(read_file(e.path()));
    }
    return out;
}

TestWriter make_plain(boost::asio::any_io_executor ex, jsonlw::WriterOptions o,
                      const std::filesystem::path&)
{
    return TestWriter(std::move(ex), std::move(o));
}

void check_same(const Outcome& one, const Outcome& four)
{
    CHECK(four.files == one.files);
    CHECK(four.stats.written == one.stats.written);
    CHECK(four.stats.dropped.malformed == one.stats.dropped.malformed);
    CHECK(four.stats.dropped.unexpected == one.stats.dropped.unexpected);
    CHECK(four.stats.bytes == one.stats.bytes);
    CHECK(four.stats.submitted == one.stats.submitted);
    CHECK(invariant_holds(four.stats));
}

// serialize() checks throw_malformed first, then throw_other, then throw_key_error.
std::uint64_t expected_malformed()
{
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < kRecords; ++i)
        n += (i % 7 == 3) || (i % 11 != 5 && i % 13 == 8);
    return n;
}
std::uint64_t expected_unexpected()
{
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < kRecords; ++i) n += i % 7 != 3 && i % 11 == 5;
    return n;
}

}  // namespace

TEST_CASE("4 serializer threads write the same bytes and counters as 1 and serialize each record exactly once, a malformed, a failing and a KeyError record each dropped alone",
          "[integration][serializers]")
{
    const auto records = mixed_records();
    const Outcome one = run_with<TestWriter>(1, records, make_plain);
    // The gate holds each serialize() until 4 threads are in one: all four took part.
    const Outcome four = run_with<TestWriter>(4, records, make_plain, true, 4);
    CHECK(one.threads == 1);
    CHECK(four.threads == 4);
    CHECK(one.stats.dropped.malformed == expected_malformed());
    CHECK(one.stats.dropped.unexpected == expected_unexpected());
    CHECK(one.stats.written == kRecords - expected_malformed() - expected_unexpected());
    check_same(one, four);
    // Once each, on whichever thread: never again on the I/O thread after a helper.
    CHECK(one.serialize_calls == kRecords);
    CHECK(four.serialize_calls == kRecords);
    CHECK(four.warnings == 0);
    REQUIRE(four.files.size() == 2);
    CHECK(ids_of(split_lines(four.files[1])).size() == four.stats.written);
}

TEST_CASE("a per-key write_batch layout with 4 serializer threads: every key's file holds exactly its records, in order, as with 1",
          "[integration][serializers][layout]")
{
    const auto records = mixed_records();
    const auto make = [](boost::asio::any_io_executor ex, jsonlw::WriterOptions o,
                         const std::filesystem::path& dir) {
        return RoutedWriter(std::move(ex), std::move(o), RoutedWriter::by_key(dir));
    };
    const Outcome one = run_with<RoutedWriter>(1, records, make);
    const Outcome four = run_with<RoutedWriter>(4, records, make, true, 4);
    CHECK(four.threads == 4);
    REQUIRE(one.files.size() == 10);  // 5 keys
    check_same(one, four);
    CHECK(one.serialize_calls == kRecords);
    CHECK(four.serialize_calls == kRecords);
    // Within a file, ids increase and all share the key.
    for (std::size_t f = 0; f < four.files.size(); f += 2) {
        const auto ids = ids_of(split_lines(four.files[f + 1]));
        CHECK(std::is_sorted(ids.begin(), ids.end()));
        for (const auto id : ids) CHECK("k" + std::to_string(id % 5) + "/part.jsonl" == four.files[f]);
    }
}

TEST_CASE("a write_batch that throws for one batch of a 4-batch unit costs that batch alone, as with 1 serializer",
          "[integration][serializers][faults]")
{
    auto records = mixed_records();
    for (auto& r : records) r.throw_malformed = r.throw_other = r.throw_key_error = false;
    records[100].fail_write_batch = true;  // the second batch of 64
    const Outcome one = run_with<TestWriter>(1, records, make_plain);
    const Outcome four = run_with<TestWriter>(4, records, make_plain);
    CHECK(one.stats.dropped.unexpected == 64);
    CHECK(one.stats.written == kRecords - 64);
    check_same(one, four);
}

TEST_CASE("under the envelope, 4 serializer threads number the records 0 .. n-1 in file order",
          "[integration][serializers][envelope]")
{
    auto records = mixed_records();
    for (auto& r : records) r.throw_malformed = r.throw_other = r.throw_key_error = false;
    const auto make = [](boost::asio::any_io_executor ex, jsonlw::WriterOptions o,
                         const std::filesystem::path&) {
        o.envelope = true;
        return TestWriter(std::move(ex), std::move(o));
    };
    const Outcome four = run_with<TestWriter>(4, records, make, true, 4);
    CHECK(four.serialize_calls == kRecords);
    REQUIRE(four.files.size() == 2);
    const auto lines = split_lines(four.files[1]);
    REQUIRE(lines.size() == kRecords);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        INFO(lines[i]);
        CHECK(lines[i].rfind("{\"seq\":" + std::to_string(i) + ",\"writer\":", 0) == 0);
        CHECK(json_id(lines[i]) == static_cast<std::int64_t>(i));
    }
}

TEST_CASE("a writer whose serialize() is not declared concurrent logs one warning and serializes on its I/O thread alone",
          "[integration][serializers]")
{
    const auto records = mixed_records();
    const Outcome one = run_with<TestWriter>(1, records, make_plain, false);
    const Outcome four = run_with<TestWriter>(4, records, make_plain, false);
    CHECK(four.warnings == 1);
    CHECK(one.warnings == 0);
    CHECK(four.threads == 1);
    CHECK(four.serialize_calls == kRecords);
    check_same(one, four);
}

TEST_CASE("RawJsonWriter with 4 serializer threads validates each chunk as one stream: the same lines and drops as with 1",
          "[integration][serializers][raw_json]")
{
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < kRecords; ++i) {
        switch (i % 9) {
        case 0: texts.push_back("{\"id\": " + std::to_string(i) + ", \"a\" : [1, 2]}"); break;  // minified
        case 4: texts.push_back("{\"id\":" + std::to_string(i) + ",\"bad\":}"); break;           // invalid
        case 6: texts.push_back("[" + std::to_string(i) + "]"); break;                           // not an object
        default: texts.push_back("{\"id\":" + std::to_string(i) + ",\"s\":\"x y\"}"); break;    // compact
        }
    }
    const auto run = [&](std::size_t serializers) {
        Harness h;
        auto o = h.options();
        o.queue_capacity = texts.size();
        o.serializer_threads = serializers;
        jsonlw::RawJsonWriter w(h.executor(), o);
        w.start();
        for (const auto& t : texts) REQUIRE(w.submit(t) == SubmitResult::accepted);
        h.loop.start();
        const auto report = close(w);
        REQUIRE(report.drained);
        CHECK(h.logs.count(LogLevel::warning, "serializer_threads") == 0);
        return std::make_pair(read_file(w.file_path()), report.stats);
    };
    const auto [bytes1, s1] = run(1);
    const auto [bytes4, s4] = run(4);
    CHECK(s1.dropped.malformed == 666);  // 333 with i % 9 == 4, 333 with i % 9 == 6
    CHECK(s1.written == kRecords - s1.dropped.malformed);
    CHECK(bytes4 == bytes1);
    CHECK(s4.written == s1.written);
    CHECK(s4.dropped.malformed == s1.dropped.malformed);
    const auto lines = split_lines(bytes4);
    REQUIRE(!lines.empty());
    CHECK(lines.front() == "{\"id\":0,\"a\":[1,2]}");
}
