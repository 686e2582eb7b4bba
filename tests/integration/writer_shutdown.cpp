// Closing and destroying writers (and TensorRT-LLM's Python writer's close tests, ported):
// close drains, later submits are refused and counted, a stuck append cannot hold
// close past shutdown_timeout (+250 ms), and destructors never hang.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"
#include "observing_sink.hpp"

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;
using Clock = std::chrono::steady_clock;

namespace {

// A flush here waits for at most 1,500 small records, written in milliseconds: 5 s is still
// generous, and a flush that never completes fails its test in seconds rather than after the
// default 20 s (four tests here wait on a flush of queued records: 80 s together).
constexpr std::chrono::seconds flush_deadline{5};

}  // namespace

TEST_CASE("async_close writes every queued record before completing, and a later submit returns closed and is counted",
          "[integration][shutdown]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 4096;
    o.batch_records = 16;
    TestWriter w(h.executor(), o);
    w.start();
    for (int i = 0; i < 2000; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    const auto report = close(w);  // issued while (nearly) everything is still queued

    CHECK(report.drained);
    CHECK(report.stats.submitted == 2000);
    CHECK(report.stats.written == 2000);
    CHECK(report.stats.pending == 0);
    CHECK(report.stats.dropped.total() == 0);
    CHECK(invariant_holds(report.stats));
    CHECK(count_lines(w.file_path()) == 2000);
    std::vector<std::int64_t> want(2000);
    for (int i = 0; i < 2000; ++i) want[static_cast<std::size_t>(i)] = i;
    CHECK(ids_of(read_lines(w.file_path())) == want);

    CHECK(w.submit(rec(5000)) == SubmitResult::closed);
    CHECK(w.submit(rec(5001)) == SubmitResult::closed);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.submitted == 2002);
    CHECK(s.dropped.closed == 2);
    CHECK(s.written == 2000);
    CHECK(invariant_holds(s));
    CHECK(count_lines(w.file_path()) == 2000);

    // Flush and close again after close: both complete; the second close reports the same.
    flush(w, flush_deadline);
    const auto again = close(w);
    CHECK(again.drained);
    CHECK(again.stats.written == 2000);
    CHECK(invariant_holds(again.stats));
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("async_close of an idle writer completes at once with drained = true", "[integration][shutdown]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w, flush_deadline);
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == 1);
    CHECK(report.stats == w.stats());
}

TEST_CASE("async_close with an append stuck past shutdown_timeout completes within the timeout plus 250 ms and counts what was not written",
          "[integration][shutdown]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.shutdown_timeout = std::chrono::milliseconds(300);
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.start(w);

    REQUIRE(h.stick_append(w, rec(0)));  // record 0's append is stuck
    for (int i = 1; i <= 5; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);

    const auto t0 = Clock::now();
    auto pending = w.async_close(boost::asio::use_future);
    const auto report = get_within(pending);
    const auto took = Clock::now() - t0;
    CHECK(took >= std::chrono::milliseconds(300));
    CHECK(took < std::chrono::milliseconds(300 + 250));

    CHECK_FALSE(report.drained);
    const auto& s = report.stats;
    INFO("stats: " << s);
    CHECK(s.submitted == 6);
    CHECK(s.written == 0);
    CHECK(s.unknown == 1);            // record 0: its append never came back
    CHECK(s.dropped.shutdown == 5);   // still queued when time ran out
    CHECK(s.pending == 0);
    CHECK(invariant_holds(s));
    CHECK(w.submit(rec(6)) == SubmitResult::closed);

    // The stuck call returns later; the accounting stays consistent and the writer can go.
    h.seam->release();
    CHECK(wait_until([&] { return h.seam->writev_returned() >= 1; }));
    const auto after = w.stats();
    CHECK(invariant_holds(after));
    CHECK(after.submitted == 7);
    CHECK(after.dropped.closed == 1);
}

TEST_CASE("destroying a writer that was never closed does not hang", "[integration][shutdown]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 4096;
    std::filesystem::path path;

    SECTION("with the loop running and records queued")
    {
        h.loop.start();
        {
            TestWriter w(h.executor(), o);
            w.start();
            path = w.file_path();
            for (int i = 0; i < 3000; ++i) w.submit(rec(i));
        }
        // Whatever reached the file before the writer went is whole lines, in order.
        const auto lines = read_lines(path);
        CHECK(lines.size() <= 3000);
        for (std::size_t i = 0; i < lines.size(); ++i) CHECK(json_id(lines[i]) == static_cast<std::int64_t>(i));
    }
    // "With the loop never run" is in writer_lifetime.cpp, repeated, in its own executable.
    SECTION("never started")
    {
        {
            TestWriter w(h.executor(), o);
            w.submit(rec(1));
        }
        CHECK(files_in(h.dir.path()).empty());
    }
    SECTION("right after a flush, with the loop running")
    {
        h.loop.start();
        {
            TestWriter w(h.executor(), o);
            w.start();
            for (int i = 0; i < 10; ++i) w.submit(rec(i));
            flush(w, flush_deadline);
            path = w.file_path();
        }
        CHECK(count_lines(path) == 10);
    }
}

TEST_CASE("a close issued from the completion handler of a flush drains everything", "[integration][shutdown]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    std::promise<jsonlw::CloseReport> done;
    auto f = done.get_future();
    std::error_code flush_error = jsonlw::errc::timed_out;
    for (int i = 0; i < 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    // Chained on the loop thread: the close is issued from the flush's completion handler.
    w.async_flush([&](std::error_code ec) {
        flush_error = ec;
        w.async_close([&](std::error_code, jsonlw::CloseReport r) { done.set_value(r); });
    });
    const auto report = get_within(f, flush_deadline);  // the flush's completion closes
    CHECK_FALSE(flush_error);
    CHECK(report.drained);
    CHECK(report.stats.written == 100);
    CHECK(count_lines(w.file_path()) == 100);
}

TEST_CASE("the sink's close runs once on the I/O thread after every queued record is written, before close completes",
          "[integration][shutdown][sink_close]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 4096;
    auto memory = std::make_shared<jsonlw::MemorySink>();
    auto sink = std::make_shared<ObservingSink>(memory);
    o.sink = sink;
    TestWriter w(h.executor(), o);
    std::atomic<std::size_t> lines_seen{0};
    std::atomic<bool> on_loop{true};
    sink->on_close([&] {
        lines_seen = memory->lines().size();
        on_loop = h.executor().running_in_this_thread();
    });
    w.start();
    for (int i = 0; i < 1000; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    flush(w, flush_deadline);
    CHECK(sink->closes() == 0);  // a flush is not a close
    for (int i = 1000; i < 1500; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(sink->closes() == 1);
    CHECK(lines_seen.load() == 1500);
    CHECK_FALSE(on_loop.load());
    CHECK(sink->abandoned() == 0);
    close(w);
    CHECK(sink->closes() == 1);
}

TEST_CASE("after each batch the sink sees the writer's counters with that batch counted",
          "[integration][shutdown][sink_close]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 10;
    auto memory = std::make_shared<jsonlw::MemorySink>();
    auto sink = std::make_shared<ObservingSink>(memory);
    o.sink = sink;
    TestWriter w(h.executor(), o);
    w.start();
    for (int i = 0; i < 35; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    CHECK(close(w).drained);
    // Queued before the drain first ran: batches of 10, 10, 10 and 5, each counted before
    // the sink hears of it.
    CHECK(sink->written_at_batches() == std::vector<std::uint64_t>{10, 20, 30, 35});
    CHECK(memory->lines().size() == 35);
}

TEST_CASE("a close that runs out of time tells the sink once, on the strand, and closes it only when "
          "the stuck append has returned and the writer is destroyed; append_outlived_close "
          "says whether that append has returned",
          "[integration][shutdown][sink_close]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.shutdown_timeout = std::chrono::milliseconds(100);
    auto sink = std::make_shared<ObservingSink>(std::make_shared<jsonlw::FileSink>());
    o.sink = sink;
    {
        TestWriter w(h.executor(), o);
        ReleaseOnExit release(h.seam);
        h.start(w);
        CHECK_FALSE(w.append_outlived_close());
        REQUIRE(h.stick_append(w, rec(0)));
        CHECK_FALSE(w.append_outlived_close());  // stuck, but close has not given up on it
        const auto report = close(w);
        CHECK_FALSE(report.drained);
        CHECK(sink->abandoned() == 1);
        CHECK(sink->abandoned_thread() == h.loop.thread_id());
        CHECK(w.append_outlived_close());
        CHECK(sink->closes() == 0);
        h.seam->release();
        CHECK(wait_until([&] { return !w.append_outlived_close(); }));
        CHECK(h.seam->writev_returned() == 1);
        CHECK(sink->abandoned() == 1);
    }
    // The writer is gone: the engine closed the sink (the file got its final name).
    CHECK(wait_until([&] { return sink->closes() == 1; }));
    CHECK(sink->abandoned() == 1);
}

TEST_CASE("a close that drains in time never tells the sink it was abandoned", "[integration][shutdown][sink_close]")
{
    Harness h;
    auto o = h.options();
    auto sink = std::make_shared<ObservingSink>(std::make_shared<jsonlw::MemorySink>());
    o.sink = sink;
    TestWriter w(h.executor(), o);
    h.start(w);
    for (int i = 0; i < 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    CHECK(close(w).drained);
    CHECK(sink->abandoned() == 0);
    CHECK(sink->closes() == 1);
    CHECK_FALSE(w.append_outlived_close());
}

