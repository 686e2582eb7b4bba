// When records reach the file without a flush: a lone record with or without flush_interval
// (after an idle spell too, within flush_interval), a full batch at once under a long
// flush_interval, and flush and close never waiting for it.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <chrono>
#include <string>
#include <thread>
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

// After `spell` with no record (the drain backing off all the while), submits one record and
// returns how long it took to be written.
std::chrono::steady_clock::duration after_idle_spell(TestWriter& w, std::chrono::milliseconds spell,
                                                     int id)
{
    std::this_thread::sleep_for(spell);  // the idle spell itself, not a wait for an event
    const auto before = w.stats().written;
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(w.submit(rec(id)) == SubmitResult::accepted);
    REQUIRE(wait_until([&] { return w.stats().written == before + 1; }));
    return std::chrono::steady_clock::now() - t0;
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

TEST_CASE("after an idle spell a lone record is written within flush_interval, however far idle_poll_max lets the drain back off",
          "[integration][writer][flush]")
{
    using namespace std::chrono_literals;
    Harness h;
    // Without flush_interval's bound, quiet looks doubling from 1 ms after the first 50 ms
    // look at about 0.05 + 0.002 + ... + 0.512 = 1.07 s, then not until about 2.1 s: a record
    // submitted 1.2 s into the spell would wait ~0.9 s, plus its 100 ms linger.
    auto o = h.options();
    o.flush_interval = 100ms;
    o.idle_poll = 1ms;
    o.idle_poll_max = std::chrono::hours(1);
    TestWriter w(h.executor(), o);
    h.start(w);
    // Slack for a loaded machine (sanitizers, two tests at once): the append, the timer.
    constexpr auto slack = 200ms;
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round);
        CHECK(after_idle_spell(w, 1200ms, round) < o.flush_interval + slack);
    }
    // Without flush_interval the bound is idle_poll_max.
    auto q = h.options();
    q.stem = "quiet";
    q.idle_poll_max = 150ms;
    TestWriter v(h.executor(), q);
    h.start(v);
    for (int round = 0; round < 2; ++round) {
        INFO("round " << round);
        CHECK(after_idle_spell(v, 1s, 10 + round) < q.idle_poll_max + slack);
    }
    check_closed(w, 3);
    check_closed(v, 2);
}
