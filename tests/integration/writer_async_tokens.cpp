// async_flush / async_close with every completion-token style:
// a plain callback, use_awaitable inside a coroutine, use_future from another thread; each
// completes on the handler's associated executor.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <exception>
#include <future>
#include <string>
#include <thread>

using namespace jsonlw_test;
using jsonlw::SubmitResult;
namespace asio = boost::asio;

namespace {

struct Completion {
    std::error_code ec;
    bool on_strand = false;
    std::thread::id thread;
    std::size_t lines = 0;  // lines in the file when the handler ran
    jsonlw::CloseReport report;
};

}  // namespace

TEST_CASE("async_flush and async_close work with a plain callback and complete on the handler's associated executor",
          "[integration][async]")
{
    // The handlers' context outlives the writer's loop: the loop thread may still hold a copy
    // of the handler's executor (a strand of `other`) for a moment after the handler ran, as
    // with any Asio operation. Declared first, `other` is destroyed after `h.loop` has stopped.
    IoRunner other;  // a second context: its strand is the handlers' executor
    Harness h;
    auto strand = asio::make_strand(other.io());
    TestWriter w(h.executor(), h.options());
    h.start(w);
    other.start();

    for (int i = 0; i < 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    std::promise<Completion> flushed;
    auto ff = flushed.get_future();
    w.async_flush(asio::bind_executor(strand, [&](std::error_code ec) {
        flushed.set_value({ec, strand.running_in_this_thread(), std::this_thread::get_id(),
                           count_lines(w.file_path()), {}});
    }));
    const auto f = get_within(ff);
    CHECK_FALSE(f.ec);
    CHECK(f.on_strand);
    CHECK(f.thread == other.thread_id());
    CHECK(f.lines == 100);

    // Without an associated executor, the handler runs on the writer's executor (the loop).
    for (int i = 100; i < 110; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    std::promise<Completion> plain;
    auto pf = plain.get_future();
    w.async_flush([&](std::error_code ec) {
        plain.set_value({ec, false, std::this_thread::get_id(), count_lines(w.file_path()), {}});
    });
    const auto p = get_within(pf);
    CHECK_FALSE(p.ec);
    CHECK(p.thread == h.loop.thread_id());
    CHECK(p.lines == 110);

    for (int i = 110; i < 120; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    std::promise<Completion> closed;
    auto cf = closed.get_future();
    w.async_close(asio::bind_executor(strand, [&](std::error_code ec, jsonlw::CloseReport r) {
        closed.set_value({ec, strand.running_in_this_thread(), std::this_thread::get_id(),
                          count_lines(w.file_path()), r});
    }));
    const auto c = get_within(cf);
    CHECK_FALSE(c.ec);
    CHECK(c.on_strand);
    CHECK(c.lines == 120);
    CHECK(c.report.drained);
    CHECK(c.report.stats.written == 120);
    CHECK(invariant_holds(c.report.stats));
}

TEST_CASE("async_flush and async_close work with use_awaitable inside a coroutine and resume on its executor",
          "[integration][async]")
{
    IoRunner other;  // destroyed after `h.loop` (see above)
    Harness h;
    auto strand = asio::make_strand(other.io());
    TestWriter w(h.executor(), h.options());
    h.start(w);
    other.start();

    struct Seen {
        bool on_strand_after_flush = false;
        bool on_strand_after_close = false;
        std::size_t lines_after_flush = 0;
        jsonlw::CloseReport report;
        SubmitResult after_close = SubmitResult::accepted;
    } seen;

    // The coroutine submits, flushes and closes; it is spawned on another context's strand.
    auto body = [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 50; ++i) w.submit(rec(i));
        co_await w.async_flush(asio::use_awaitable);
        seen.on_strand_after_flush = strand.running_in_this_thread();
        seen.lines_after_flush = count_lines(w.file_path());
        for (int i = 50; i < 60; ++i) w.submit(rec(i));
        seen.report = co_await w.async_close(asio::use_awaitable);
        seen.on_strand_after_close = strand.running_in_this_thread();
        seen.after_close = w.submit(rec(99));
    };
    std::promise<std::exception_ptr> done;
    auto df = done.get_future();
    asio::co_spawn(strand, body, [&](std::exception_ptr e) { done.set_value(e); });
    const std::exception_ptr error = get_within(df);
    REQUIRE_FALSE(error);

    CHECK(seen.on_strand_after_flush);
    CHECK(seen.on_strand_after_close);
    CHECK(seen.lines_after_flush == 50);
    CHECK(seen.report.drained);
    CHECK(seen.report.stats.written == 60);
    CHECK(seen.after_close == SubmitResult::closed);
    CHECK(count_lines(w.file_path()) == 60);
}

TEST_CASE("async_flush and async_close work with use_future from another thread", "[integration][async]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);

    // Submitted and awaited from a thread that is neither the loop nor the test's main thread.
    auto worker = std::async(std::launch::async, [&] {
        for (int i = 0; i < 500; ++i) w.submit(rec(i));
        std::future<void> f = w.async_flush(asio::use_future);
        f.get();
        const std::size_t lines = count_lines(w.file_path());
        std::future<jsonlw::CloseReport> c = w.async_close(asio::use_future);
        return std::make_pair(lines, c.get());
    });
    const auto [lines, report] = get_within(worker);
    CHECK(lines == 500);
    CHECK(report.drained);
    CHECK(report.stats.written == 500);
    CHECK(invariant_holds(report.stats));
}

TEST_CASE("async_flush completes only once every record submitted before it is written or counted", "[integration][async]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 256;
    TestWriter w(h.executor(), o);
    h.start(w);
    std::uint64_t accepted = 0;
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 500; ++i) accepted += w.submit(rec(round * 1000 + i)) == SubmitResult::accepted;
        flush(w);
        const auto s = w.stats();
        INFO("stats: " << s);
        CHECK(s.pending == 0);
        CHECK(s.written == accepted);
        CHECK(count_lines(w.file_path()) == accepted);
        CHECK(invariant_holds(s));
    }
}
