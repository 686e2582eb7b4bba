// The {"seq","writer"} envelope: seq numbers every record a writer accepted, so max(seq)+1 -
// count(*) equals the drops counted after accepting (queue_full refusals included), every
// file's first line is unique, and the writer id is <host>-<pid>-<generation>. A record that is
// not a JSON object is malformed under it; a per-key layout is numbered too.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;
namespace fs = std::filesystem;

namespace {

std::int64_t member_int(std::string_view line, const char* key)
{
    simdjson::dom::element doc;
    REQUIRE(json_parser().parse(line.data(), line.size()).get(doc) == simdjson::SUCCESS);
    std::int64_t v = -1;
    if (doc[key].get_int64().get(v) != simdjson::SUCCESS) {
        std::uint64_t u = 0;
        REQUIRE(doc[key].get_uint64().get(u) == simdjson::SUCCESS);
        v = static_cast<std::int64_t>(u);
    }
    return v;
}

std::string member_string(std::string_view line, const char* key)
{
    simdjson::dom::element doc;
    REQUIRE(json_parser().parse(line.data(), line.size()).get(doc) == simdjson::SUCCESS);
    std::string_view v;
    REQUIRE(doc[key].get_string().get(v) == simdjson::SUCCESS);
    return std::string(v);
}

// Serializes its record as it is: a number, an empty object, an object.
class ShapeEncoder final : public jsonlw::RecordEncoder<int> {
public:
    void serialize(const int& r, jsonlw::JsonLine& line) override
    {
        if (r < 0) line.value(r);  // not an object
        else if (r == 0) line.begin_object().end_object();
        else line.begin_object().field("id", r).end_object();
    }
};

}  // namespace

TEST_CASE("The envelope numbers every record: max(seq)+1-count(*) equals the drops counted (evicted, malformed), and every file's first line is unique",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    o.rotation.rotate_bytes = 300;
    o.queue_capacity = 8;
    o.overflow = jsonlw::Overflow::drop_oldest;
    TestWriter w(h.executor(), o);
    // Before start(): 12 into a queue of 8 evicts the 4 oldest (seq 0-3).
    for (int i = 0; i < 12; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.start(w);
    flush(w);
    // Then records one at a time, every fifth malformed (15, 20, 25, 30, 35).
    for (int i = 12; i < 40; ++i) {
        auto r = rec(i);
        r.throw_malformed = i % 5 == 0;
        REQUIRE(w.submit(r) == SubmitResult::accepted);
        flush(w);
    }
    const auto report = close(w);
    INFO("stats: " << report.stats);
    CHECK(report.stats.dropped.oldest_evicted == 4);
    CHECK(report.stats.dropped.malformed == 5);
    CHECK(report.stats.dropped.seq_gaps() == 9);

    const auto files = files_ending(h.dir.path(), ".jsonl");
    REQUIRE(files.size() >= 3);
    std::set<std::string> first_lines;
    std::set<std::int64_t> seqs;
    std::size_t count = 0;
    for (const fs::path& p : files) {
        const auto lines = read_lines(p);
        REQUIRE(!lines.empty());
        first_lines.insert(lines.front());
        for (const auto& l : lines) {
            CHECK(l.rfind(R"({"seq":)", 0) == 0);  // the envelope comes first
            CHECK(member_string(l, "writer") == w.writer_id());
            const auto seq = member_int(l, "seq");
            // No refusal here: seq is the record's queue position (ids were submitted in
            // order from 0).
            CHECK(seq == json_id(l).value());
            seqs.insert(seq);
            ++count;
        }
    }
    CHECK(first_lines.size() == files.size());
    CHECK(seqs.size() == count);
    const auto max_seq = *seqs.rbegin();
    CHECK(static_cast<std::uint64_t>(max_seq + 1) - count == report.stats.dropped.seq_gaps());
    CHECK(count == report.stats.written);
    CHECK(*seqs.begin() == 4);  // 0-3 were evicted
}

TEST_CASE("Refusals of a full queue become seq gaps too: max(seq)+1-count(*) equals every drop the writer counted, queue_full included",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    o.queue_capacity = 4;  // Overflow::drop_newest (the default)
    TestWriter w(h.executor(), o);
    int accepted = 0;
    // Before start(): 4 accepted, 6 refused.
    for (int i = 0; i < 10; ++i) accepted += w.submit(rec(i)) == SubmitResult::accepted;
    REQUIRE(accepted == 4);
    h.start(w);
    flush(w);
    // Then one at a time (never refused), one malformed.
    for (int i = 10; i < 16; ++i) {
        auto r = rec(i);
        r.throw_malformed = i == 12;
        REQUIRE(w.submit(r) == SubmitResult::accepted);
        flush(w);
    }
    REQUIRE(w.submit(rec(16)) == SubmitResult::accepted);
    const auto report = close(w);
    REQUIRE(w.submit(rec(17)) == SubmitResult::closed);
    INFO("stats: " << w.stats());
    CHECK(w.stats().dropped.queue_full == 6);
    CHECK(w.stats().dropped.malformed == 1);
    CHECK(w.stats().dropped.closed == 1);
    CHECK(w.stats().dropped.seq_gaps() == 7);

    std::vector<std::int64_t> seqs;
    for (const auto& l : read_lines(w.file_path())) seqs.push_back(member_int(l, "seq"));
    REQUIRE(seqs.size() == report.stats.written);
    CHECK(std::is_sorted(seqs.begin(), seqs.end()));
    CHECK(std::adjacent_find(seqs.begin(), seqs.end()) == seqs.end());
    // Every submit before close() has a number: 17 of them, 10 lines, 7 gaps.
    CHECK(seqs.back() + 1 == 17);
    CHECK(static_cast<std::uint64_t>(seqs.back() + 1) - seqs.size() == w.stats().dropped.seq_gaps());
}

TEST_CASE("The writer id is <host>-<pid>-<generation> and differs between two writers of one process",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    TestWriter a(h.executor(), o);
    o.stem = "other";
    TestWriter b(h.executor(), o);
    a.start();
    b.start();
    h.loop.start();
    CHECK(a.writer_id() != b.writer_id());
    const std::regex id(R"(.+-(\d+)-(\d{16,}))");
    std::smatch m;
    REQUIRE(std::regex_match(a.writer_id(), m, id));
    CHECK(std::stol(m[1]) == ::getpid());
    REQUIRE(a.submit(rec(1)) == SubmitResult::accepted);
    close(a);
    close(b);
    const auto lines = read_lines(a.file_path());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == R"({"seq":0,"writer":")" + a.writer_id() + R"(","id":1,"text":"r1","value":0.0})");
}

TEST_CASE("Under the envelope a record that is not a JSON object is malformed, and an empty object gets the envelope alone",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    jsonlw::JsonlRecordWriter<int> w(h.executor(), o, std::make_shared<ShapeEncoder>());
    h.start(w);
    REQUIRE(w.submit(0) == SubmitResult::accepted);
    REQUIRE(w.submit(-1) == SubmitResult::accepted);
    REQUIRE(w.submit(7) == SubmitResult::accepted);
    const auto report = close(w);
    CHECK(report.stats.written == 2);
    CHECK(report.stats.dropped.malformed == 1);
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "must be a JSON object") == 1);
    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == R"({"seq":0,"writer":")" + w.writer_id() + R"("})");
    CHECK(lines[1] == R"({"seq":2,"writer":")" + w.writer_id() + R"(","id":7})");
}

TEST_CASE("The envelope also numbers the records of a per-key layout (serialize_batch over pointers)",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    RoutedWriter w(h.executor(), o, RoutedWriter::by_key(h.dir.path()));
    for (int i = 0; i < 6; ++i) {
        auto r = rec(i);
        r.key = i % 2 ? "odd" : "even";
        REQUIRE(w.submit(r) == SubmitResult::accepted);
    }
    h.start(w);
    close(w);
    for (const char* key : {"even", "odd"}) {
        for (const auto& l : read_lines(h.dir / key / "part.jsonl"))
            CHECK(member_int(l, "seq") == json_id(l).value());
    }
}
