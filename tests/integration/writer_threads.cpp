// Which threads write: the user's executor never runs the append or the serialization, and
// with WriterOptions::io_executor the appends run on that executor.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <thread>

using namespace jsonlw_test;
using jsonlw::SubmitResult;

TEST_CASE("the user's executor never runs the append or the serialization", "[integration][writer][threads]")
{
    Harness h(with_seam);
    TestWriter w(h.executor(), h.options());
    h.start(w);
    for (int i = 0; i < 50; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    flush(w);
    const auto calls = h.seam->writev_calls();
    REQUIRE_FALSE(calls.empty());
    for (const auto& c : calls) {
        CHECK(c.thread != h.loop.thread_id());
        CHECK(c.thread != std::this_thread::get_id());
    }
    const auto ser = w.serialize_threads();
    REQUIRE_FALSE(ser.empty());
    CHECK(ser.count(h.loop.thread_id()) == 0);
    CHECK(w.stats().written == 50);
}

TEST_CASE("with io_executor given, appends run on that executor and not on the user's", "[integration][writer][threads]")
{
    Harness h(with_seam);
    boost::asio::thread_pool pool(1);
    std::atomic<int> on_pool{0}, on_loop{0}, calls{0};
    h.seam->on_writev([&] {
        ++calls;
        on_pool += pool.get_executor().running_in_this_thread() ? 1 : 0;
        on_loop += h.executor().running_in_this_thread() ? 1 : 0;
    });
    auto o = h.options();
    o.io_executor = pool.get_executor();
    {
        TestWriter w(h.executor(), o);
        h.start(w);
        for (int i = 0; i < 20; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        flush(w);
        CHECK(w.stats().written == 20);
        CHECK(count_lines(w.file_path()) == 20);
    }
    REQUIRE(calls.load() > 0);
    CHECK(on_pool.load() == calls.load());
    CHECK(on_loop.load() == 0);
}
