// A per-key layout through write_batch/serialize_batch/append, durability (fsync_batch,
// fsync_interval) and torn-tail isolation when appending to an existing file.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::Durability;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

std::string line_of(int id)
{
    return R"({"id":)" + std::to_string(id) + R"(,"text":"r)" + std::to_string(id) + R"(","value":0.0})";
}

Rec keyed(int id, std::string key, bool bad = false)
{
    Rec r = rec(id);
    r.key = std::move(key);
    r.throw_malformed = bad;
    return r;
}

}  // namespace

TEST_CASE("a per-key layout routes records into <dir>/<key>/part.jsonl through serialize_batch and append; its malformed records are still counted",
          "[integration][layout]")
{
    Harness h;
    const auto out = h.dir / "by_key";
    RoutedWriter w(h.executor(), h.options(), RoutedWriter::by_key(out));
    w.start();
    REQUIRE(w.submit(keyed(0, "alpha")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(1, "beta")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(2, "alpha")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(3, "beta", true)) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(4, "gamma")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(5, "gamma", true)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(read_lines(out / "alpha" / "part.jsonl") == std::vector<std::string>{line_of(0), line_of(2)});
    CHECK(read_lines(out / "beta" / "part.jsonl") == std::vector<std::string>{line_of(1)});
    CHECK(read_lines(out / "gamma" / "part.jsonl") == std::vector<std::string>{line_of(4)});
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 4);
    CHECK(s.dropped.malformed == 2);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Dropped malformed test record: record 3 is bad") == 1);

    // Later batches append to the same files.
    REQUIRE(w.submit(keyed(6, "alpha")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(7, "delta")) == SubmitResult::accepted);
    flush(w);
    CHECK(ids_of(read_lines(out / "alpha" / "part.jsonl")) == std::vector<std::int64_t>{0, 2, 6});
    CHECK(read_lines(out / "delta" / "part.jsonl") == std::vector<std::string>{line_of(7)});
    s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 6);
    CHECK(s.bytes == read_file(out / "alpha" / "part.jsonl").size() + read_file(out / "beta" / "part.jsonl").size() +
                         read_file(out / "gamma" / "part.jsonl").size() + read_file(out / "delta" / "part.jsonl").size());
    CHECK(invariant_holds(s));
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == 6);
}

TEST_CASE("appending to an existing file whose last byte is not a newline writes a newline first, so a torn tail never glues onto a new record",
          "[integration][durability][torn]")
{
    Harness h;
    const auto torn = h.dir / "torn.jsonl";
    const auto whole = h.dir / "whole.jsonl";
    const auto empty = h.dir / "empty.jsonl";
    write_file(torn, "{\"a\":1}\n{\"tor");
    write_file(whole, "{\"a\":1}\n");
    write_file(empty, "");
    auto route = [&](const Rec& r) { return r.key == "torn" ? torn : r.key == "whole" ? whole : empty; };
    RoutedWriter w(h.executor(), h.options(), route);
    w.start();
    REQUIRE(w.submit(keyed(1, "torn")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(2, "torn")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(3, "whole")) == SubmitResult::accepted);
    REQUIRE(w.submit(keyed(4, "empty")) == SubmitResult::accepted);
    h.loop.start();  // one batch: three appends, in this order
    flush(w);

    CHECK(read_file(torn) == "{\"a\":1}\n{\"tor\n" + line_of(1) + "\n" + line_of(2) + "\n");
    CHECK(read_file(whole) == "{\"a\":1}\n" + line_of(3) + "\n");
    CHECK(read_file(empty) == line_of(4) + "\n");
    const auto results = w.append_results();
    REQUIRE(results.size() == 3);
    CHECK(results[0].ok());
    CHECK(results[0].isolated_fragment);  // torn.jsonl: a '\n' went first
    CHECK(results[0].landed == 2 * (line_of(1).size() + 1));
    CHECK(results[1].ok());
    CHECK_FALSE(results[1].isolated_fragment);
    CHECK(results[2].ok());
    CHECK_FALSE(results[2].isolated_fragment);
    CHECK(results[2].offset == 0);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 4);
    CHECK(invariant_holds(s));
}

TEST_CASE("fsync_batch fsyncs every batch before its records count as written", "[integration][durability]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.durability = Durability::fsync_batch;
    o.batch_records = 8;
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    w.start();
    for (int i = 0; i < 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 100);
    CHECK(s.batches == 13);  // 12 x 8 + 4
    CHECK(h.seam->fsync_count() >= static_cast<int>(s.batches));
    CHECK(count_lines(w.file_path()) == 100);

    SECTION("while a batch's fsync has not returned, its records are not counted as written")
    {
        h.seam->hold_fsync();
        for (int i = 100; i < 105; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        REQUIRE(h.seam->wait_fsync_held());
        // The bytes are in the file (write returned) but not yet durable.
        CHECK(wait_until([&] { return count_lines(w.file_path()) >= 101; }));
        s = w.stats();
        INFO("stats: " << s);
        CHECK(s.written == 100);
        CHECK(s.pending == 5);
        CHECK(invariant_holds(s));

        h.seam->release();
        flush(w);
        s = w.stats();
        INFO("stats: " << s);
        CHECK(s.written == 105);
        CHECK(s.pending == 0);
        CHECK(invariant_holds(s));
    }
}

TEST_CASE("a failed fsync under fsync_batch never counts its batch as written, and warns", "[integration][durability][faults]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.durability = Durability::fsync_batch;
    TestWriter w(h.executor(), o);
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    h.seam->fail_fsync(EIO, 1);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    flush(w);
    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);
    flush(w);

    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 2);
    // Its bytes reached the file but not stable storage: lost (write_error) or unknown.
    CHECK(s.dropped.write_error + s.unknown == 1);
    CHECK(invariant_holds(s));
    CHECK(count_lines(w.file_path()) >= 2);
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "test JSONL") == 1);
    CHECK(h.logs.count(LogLevel::warning, "Input/output error") == 1);
}

TEST_CASE("fsync_interval fsyncs unsynced data within the interval without a flush", "[integration][durability]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.durability = Durability::fsync_interval;
    o.fsync_interval = std::chrono::milliseconds(50);
    TestWriter w(h.executor(), o);
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    CHECK(wait_until([&] { return h.seam->fsync_returned() >= 1; }));
    CHECK(wait_until([&] { return w.stats().written == 1; }));
}

TEST_CASE("fsync_interval counts records as written after write, fsyncs at most once per interval and once more at close",
          "[integration][durability]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.durability = Durability::fsync_interval;
    o.fsync_interval = std::chrono::hours(1);
    TestWriter w(h.executor(), o);
    h.start(w);
    for (int round = 0; round < 5; ++round) {
        REQUIRE(w.submit(rec(round)) == SubmitResult::accepted);
        flush(w);
    }
    CHECK(w.stats().written == 5);  // not waiting for any fsync
    const int before_close = h.seam->fsync_count();
    CHECK(before_close <= 1);
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(h.seam->fsync_count() > before_close);
    CHECK(count_lines(w.file_path()) == 5);
}

TEST_CASE("Durability::none never fsyncs", "[integration][durability]")
{
    Harness h(with_seam);
    TestWriter w(h.executor(), h.options());
    h.start(w);
    for (int i = 0; i < 10; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    flush(w);
    close(w);
    CHECK(h.seam->fsync_count() == 0);
    CHECK(count_lines(w.file_path()) == 10);
}
