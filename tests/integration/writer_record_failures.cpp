// Records that cannot be written: malformed ones (MalformedRecord, a non-finite number, an error
// malformed_error() names) and unexpected ones (any other exception from serialize() or
// write_batch()) are dropped alone, counted and logged (rate-limited); the rest of their batch
// is written and the drain goes on.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

Rec malformed(int id) { return failing(id, &Rec::throw_malformed); }
Rec buggy(int id) { return failing(id, &Rec::throw_other); }
Rec key_error(int id) { return failing(id, &Rec::throw_key_error); }
Rec layout_bug(int id) { return failing(id, &Rec::fail_write_batch); }

}  // namespace

TEST_CASE("a record JSON cannot represent (NaN, infinity) is dropped alone and logged once", "[integration][writer][malformed]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    w.start();
    REQUIRE(w.submit(rec(0, "a", 1.5)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(1, "nan", std::nan(""))) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2, "inf", std::numeric_limits<double>::infinity())) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(3, "b", -2)) == SubmitResult::accepted);
    h.loop.start();  // the four are one batch
    flush(w);

    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(0, "a", "1.5"), line_of(3, "b", "-2.0")});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 2);
    CHECK(s.dropped.malformed == 2);
    CHECK(s.dropped.unexpected == 0);
    CHECK(s.batches == 1);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Dropped malformed test record") == 1);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("a malformed record (MalformedRecord from serialize) is dropped alone and logged; the rest of its batch is written",
          "[integration][writer][malformed]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 8192;  // the section queues 2,501 records at once
    o.batch_records = 4096;
    TestWriter w(h.executor(), o);
    w.start();
    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(w.submit(malformed(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(0, "r0"), line_of(2, "r2")});
    CHECK(w.stats().dropped.malformed == 1);
    INFO(h.logs.dump());
    const auto warnings = h.logs.matching(LogLevel::warning, "Dropped malformed test record");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].rfind("Dropped malformed test record: record 1 is bad", 0) == 0);

    SECTION("the malformed warning is rate-limited: the first, then every 1000th")
    {
        // 2,500 more malformed records (2,501 in all): warnings for the 1st, 1000th and 2000th.
        for (int i = 0; i < 2500; ++i) REQUIRE(w.submit(malformed(10 + i)) == SubmitResult::accepted);
        REQUIRE(w.submit(rec(9999)) == SubmitResult::accepted);
        flush(w);
        CHECK(h.logs.count(LogLevel::warning, "Dropped malformed test record") == 3);
        const auto s = w.stats();
        INFO("stats: " << s);
        CHECK(s.dropped.malformed == 2501);
        CHECK(s.written == 3);
        CHECK(invariant_holds(s));
        CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 2, 9999});
    }
}

TEST_CASE("a configuration decides which errors are malformed: KeyError is malformed, a serializer bug is unexpected with its message logged, the rest is written",
          "[integration][writer][malformed]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    w.start();
    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(w.submit(key_error(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    REQUIRE(w.submit(buggy(3)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(0, "r0"), line_of(2, "r2"), line_of(4, "r4")});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 3);
    CHECK(s.dropped.malformed == 1);
    CHECK(s.dropped.unexpected == 1);
    CHECK(invariant_holds(s));

    INFO(h.logs.dump());
    const auto warnings = h.logs.matching(LogLevel::warning, "Dropped malformed test record");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("'server'") != std::string::npos);
    const auto errors = h.logs.matching(LogLevel::error);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].find("serializer bug in 3") != std::string::npos);
}

TEST_CASE("unexpected errors are logged first, then every 1000th, per stage", "[integration][writer][unexpected]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 1;  // one write_batch() per record
    o.queue_capacity = 8192;
    TestWriter w(h.executor(), o);
    w.start();
    // 2,500 serializer bugs (stage serialize), then 1,500 layout bugs (stage write), then one
    // good record. Per stage: serialize logs #1, #1000, #2000; write logs its #1 and #1000 even
    // though 2,500 unexpected errors came before it.
    for (int i = 0; i < 2500; ++i) REQUIRE(w.submit(buggy(i)) == SubmitResult::accepted);
    for (int i = 0; i < 1500; ++i) REQUIRE(w.submit(layout_bug(10000 + i)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(99999)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    INFO(h.logs.dump().substr(0, 4000));
    CHECK(h.logs.count(LogLevel::error, "serializer bug") == 3);
    CHECK(h.logs.count(LogLevel::error, "layout bug") == 2);
    CHECK(h.logs.count(LogLevel::error) == 5);
    CHECK(h.logs.matching(LogLevel::error, "layout bug").front().find("layout bug at 10000") != std::string::npos);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.dropped.unexpected == 4000);
    CHECK(s.written == 1);
    CHECK(invariant_holds(s));
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{99999});
}

TEST_CASE("an unexpected failure in write_batch costs its batch, not the drain, and is logged with its message",
          "[integration][writer][unexpected]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    REQUIRE(w.submit(layout_bug(2)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);  // same batch as 2 (or not): checked by counts
    flush(w);
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    flush(w);

    const auto s = w.stats();
    INFO("stats: " << s);
    INFO(h.logs.dump());
    const auto ids = ids_of(read_lines(w.file_path()));
    REQUIRE(ids.size() >= 2);
    CHECK(ids.front() == 1);
    CHECK(ids.back() == 4);
    CHECK(s.written == ids.size());
    CHECK(s.dropped.unexpected == 4 - ids.size());
    CHECK(s.dropped.unexpected >= 1);
    CHECK(invariant_holds(s));
    CHECK(h.logs.count(LogLevel::error, "layout bug at 2") == 1);
}
