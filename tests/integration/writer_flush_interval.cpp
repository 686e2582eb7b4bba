// When records reach the file without a flush: a lone record with or without flush_interval, a
// full batch at once under a long flush_interval, and flush and close never waiting for it.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <chrono>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;

namespace {

// A flush_interval of an hour and batches of 4: a record under a batch waits for the hour.
jsonlw::WriterOptions hour_interval(const Harness& h)
{
    auto o = h.options();
    o.flush_interval = std::chrono::hours(1);
    o.batch_records = 4;
    return o;
}

// Closes `w`: everything resolved in time, exactly `n` records written.
void check_closed(TestWriter& w, std::uint64_t n)
{
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == n);
}

}  // namespace

TEST_CASE("with a long flush_interval, a full batch is written at once, and flush and close do not wait for the interval",
          "[integration][writer][flush]")
{
    Harness h;
    TestWriter w(h.executor(), hour_interval(h));
    h.start(w);
    for (int i = 0; i < 4; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 4; }));
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    flush(w);
    CHECK(count_lines(w.file_path()) == 5);
    REQUIRE(w.submit(rec(5)) == SubmitResult::accepted);
    check_closed(w, 6);
    CHECK(count_lines(w.file_path()) == 6);
}

TEST_CASE("with a long flush_interval and a batch as large as the queue, a quarter of the queue ends the wait, polling or parked, and nothing is refused",
          "[integration][writer][flush]")
{
    for (const auto poll : {std::chrono::microseconds(1000), std::chrono::microseconds(0)}) {
        INFO("idle_poll " << poll.count() << " us");
        Harness h;
        auto o = h.options();
        o.flush_interval = std::chrono::hours(1);
        o.queue_capacity = 1024;
        o.batch_records = 1024;  // the default: a full batch would be a full queue
        o.idle_poll = poll;
        TestWriter w(h.executor(), o);
        h.start(w);
        REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);  // the drain starts to linger
        for (int i = 1; i < 256; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        // 256 waiting: the linger ends and the step takes them all, without a flush.
        CHECK(wait_until([&] { return w.stats().written == 256; }));
        CHECK(count_lines(w.file_path()) == 256);
        // The queue then takes a second quarter the same way: no record waited for the hour,
        // none was refused.
        for (int i = 256; i < 512; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        CHECK(wait_until([&] { return w.stats().written == 512; }));
        CHECK(w.stats().dropped.total() == 0);
        check_closed(w, 512);
    }
}

TEST_CASE("with a long flush_interval, a reopen asked for while the drain lingers completes without waiting for the interval",
          "[integration][writer][flush][reopen]")
{
    Harness h;
    auto o = hour_interval(h);
    o.rotation.open_suffix = ".open";
    TestWriter w(h.executor(), o);
    h.start(w);
    // Under a batch: once the drain sees a record it lingers for the hour. A reopen ends the
    // linger (the record is written, then the file closed) or, asked before the drain saw
    // the record, runs first; either way it completes now. Which one happens is a race (the
    // linger about 4 times in 10 here), so eight rounds.
    int lingering = 0;
    for (int i = 0; i < 8; ++i) {
        const std::uint64_t closed_before = w.stats().files_closed;
        REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        get_within(w.async_reopen(boost::asio::use_future));
        lingering += static_cast<int>(w.stats().files_closed - closed_before);
    }
    INFO("rounds in which the reopen ended a linger: " << lingering);
    check_closed(w, 8);
    std::size_t lines = 0;
    for (const auto& f : files_ending(h.dir.path(), ".jsonl")) lines += read_lines(f).size();
    CHECK(lines == 8);
}

TEST_CASE("with flush_interval a lone record reaches the file without further submits or a flush", "[integration][writer][flush]")
{
    Harness h;
    auto o = h.options();
    o.flush_interval = std::chrono::milliseconds(50);
    TestWriter w(h.executor(), o);
    h.start(w);
    REQUIRE(w.submit(rec(42)) == SubmitResult::accepted);
    // Waits on the file itself (generous deadline), not on a sleep and not on async_flush.
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 1; }));
    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(42, "r42")});
    CHECK(wait_until([&] { return w.stats().written == 1; }));

    // And again for a second lone record, after the drain went idle.
    REQUIRE(w.submit(rec(43)) == SubmitResult::accepted);
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 2; }));
}

TEST_CASE("without flush_interval a lone record also reaches the file without a flush", "[integration][writer][flush]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    REQUIRE(w.submit(rec(7)) == SubmitResult::accepted);
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 1; }));
}
