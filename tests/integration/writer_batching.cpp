// How queued records become batches: batch_records caps a batch, records queued while an
// append is slow are gathered into full batches, a polling drain takes what came during an
// append at its next look, one idle_poll later, unless a batch is already waiting, and at a
// steady rate it looks once per half batch, at least every idle_poll_max.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;

TEST_CASE("10 queued records with batch_records = 4 are appended as 4, 4 and 2", "[integration][writer][batching]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 4;
    TestWriter w(h.executor(), o);
    w.start();
    // All ten are queued before the drain first runs.
    for (int i = 0; i < 10; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{4, 4, 2});
    const auto calls = h.seam->writev_calls();
    REQUIRE(calls.size() == 3);
    std::size_t bytes = 0;
    for (const auto& c : calls) {
        CHECK(c.result == static_cast<ssize_t>(c.bytes));
        bytes += c.bytes;
    }
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.batches == 3);
    CHECK(s.written == 10);
    CHECK(s.bytes == bytes);
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    CHECK(invariant_holds(s));
}

TEST_CASE("while an append is slow, queued records are gathered into full batches", "[integration][writer][batching]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 64;
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.start(w);
    REQUIRE(h.stick_append(w, rec(0)));
    for (int i = 1; i <= 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.seam->release();
    flush(w);
    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{1, 64, 36});
    CHECK(w.stats().batches == 3);
    CHECK(count_lines(w.file_path()) == 101);
}

namespace {

// Each writev's entry time; start() has records submitted during the first one (on the I/O
// thread, while that append runs).
struct WritevTimes {
    std::mutex mutex;
    std::vector<std::chrono::steady_clock::time_point> entered;
    std::atomic<int> accepted{0};  // submits during the first append that were accepted (no
                                   // REQUIRE there: it runs on the I/O thread)

    // Starts `w` with record 0 queued (the drain's first look takes it); records
    // `from`..`to` are submitted inside its append. Declare the WritevTimes before the writer:
    // its hook may run until the writer is gone.
    void start(Harness& h, TestWriter& w, int from, int to)
    {
        h.seam->on_writev([this, &w, from, to] {
            bool first = false;
            {
                std::lock_guard lock(mutex);
                entered.push_back(std::chrono::steady_clock::now());
                first = entered.size() == 1;
            }
            if (first)
                for (int i = from; i <= to; ++i) accepted += w.submit(rec(i)) == SubmitResult::accepted;
        });
        w.start();
        REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
        h.loop.start();
    }
    std::chrono::steady_clock::duration gap(std::size_t i)
    {
        std::lock_guard lock(mutex);
        return entered.at(i + 1) - entered.at(i);
    }
};

// A writer over the seam whose drain polls every `poll` with no flush_interval (the default),
// batches of `batch`; started with record 0 queued and records `from`..`to` submitted inside
// its first append (WritevTimes::start).
struct PacedWriter {
    Harness h{with_seam};
    WritevTimes times;  // before the writer: its hook may run until the writer is gone
    TestWriter w;

    PacedWriter(std::size_t batch, std::chrono::microseconds poll, int from, int to)
        : w(h.executor(), options(h, batch, poll))
    {
        times.start(h, w, from, to);
    }
    static jsonlw::WriterOptions options(const Harness& h, std::size_t batch,
                                         std::chrono::microseconds poll)
    {
        auto o = h.options();
        o.batch_records = batch;
        o.idle_poll = poll;
        return o;
    }
};

}  // namespace

TEST_CASE("a polling drain with no flush_interval writes what came during an append one idle_poll later, with what came meanwhile, as one batch", "[integration][writer][batching]")
{
    // A pace ends early at 64 waiting (a quarter of 1,024 is more).
    PacedWriter p(64, 500ms, 1, 2);
    REQUIRE(wait_until([&] { return p.w.stats().written >= 1; }));
    REQUIRE(p.w.submit(rec(3)) == SubmitResult::accepted);  // while the drain waits out its pace
    REQUIRE(wait_until([&] { return p.w.stats().written == 4; }));

    // Not 1, 2, 1: records 1 and 2 were not popped the moment the first append returned.
    CHECK(p.times.accepted == 2);
    CHECK(p.h.seam->successful_write_lines() == std::vector<std::size_t>{1, 3});
    CHECK(p.times.gap(0) >= 500ms);
    CHECK(p.w.stats().batches == 2);
    CHECK(ids_of(read_lines(p.w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3});
}

TEST_CASE("a full batch queued during an append is written at once, not after the drain's pace", "[integration][writer][batching]")
{
    PacedWriter p(4, 10s, 1, 4);  // a pace would hold the second batch 10 s
    REQUIRE(wait_until([&] { return p.w.stats().written == 5; }));

    CHECK(p.times.accepted == 4);
    CHECK(p.h.seam->successful_write_lines() == std::vector<std::size_t>{1, 4});
    CHECK(p.times.gap(0) < 5s);
    CHECK(ids_of(read_lines(p.w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3, 4});
    flush(p.w);
}

TEST_CASE("async_flush while the drain waits out its pace completes without waiting for idle_poll", "[integration][writer][batching]")
{
    PacedWriter p(64, 10s, 1, 1);
    REQUIRE(wait_until([&] { return p.w.stats().written >= 1; }));
    flush(p.w, 5s);  // throws after 5 s: a pace that no flush cuts short lasts 10

    CHECK(p.times.accepted == 1);
    CHECK(p.h.seam->successful_write_lines() == std::vector<std::size_t>{1, 1});
    CHECK(p.w.stats().written == 2);
    CHECK(p.times.gap(0) < 5s);
}

TEST_CASE("at a steady rate the polling drain looks once per half batch of records, and at least every idle_poll_max", "[integration][writer][batching]")
{
    // A third to a half of the looks cost the caller's next submit() a cross-core miss, so a
    // steady stream is looked at once per half batch (64 records here), not every idle_poll
    // (1 ms: about 10 records at this rate) — unless idle_poll_max comes first
    // (docs/queue.md, "The tail").
    const bool ceiling = GENERATE(false, true);
    INFO((ceiling ? "idle_poll_max 2 ms" : "idle_poll_max 1 s"));
    Harness h(with_seam);
    auto o = h.options();
    o.queue_capacity = std::size_t{1} << 16;  // no burst wake-up however the test is delayed
    o.batch_records = 128;
    o.idle_poll = 1ms;
    o.idle_poll_max = ceiling ? 2ms : 1000ms;
    TestWriter w(h.executor(), o);
    h.start(w);
    // 2,000 records, one every 100 us (slower where the machine is loaded: the drain's pace
    // follows the rate it measures).
    for (int i = 0; i < 2000; ++i) {
        REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        std::this_thread::sleep_for(100us);
    }
    flush(w);
    std::vector<std::size_t> lines = h.seam->successful_write_lines();
    CAPTURE(lines.size());
    REQUIRE(lines.size() >= 3);
    std::sort(lines.begin(), lines.end());
    const std::size_t median = lines[lines.size() / 2];
    CAPTURE(median);
    // Half a batch is 64 records: about 6-10 ms at this rate. Looking every idle_poll would
    // write batches of about 10; idle_poll_max 2 ms, about 20 or fewer.
    if (ceiling) CHECK(median <= 32);
    else CHECK(median >= 40);
    CHECK(w.stats().written == 2000);
    CHECK(invariant_holds(w.stats()));
}
