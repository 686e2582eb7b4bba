// Shutdown under load: async_close while 4 producers are still submitting, and while an append
// is stuck. Close completes within shutdown_timeout + 250 ms, the report's counts add up
// against the producers' own tallies, and nothing outlives the writer: the process's thread
// count returns to what it was, and the event loop runs out of work (no timer, handler or
// coroutine of the writer is left on it). Under ASan/LSan (the sanitizer phase of CI) a leaked
// coroutine frame or record would also fail the run.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kProducers = 4;

// Threads of this process. A runtime may start a thread of its own the first time the
// process creates one (ThreadSanitizer's background thread does), so a thread is started and
// joined once first: the baseline then includes it.
std::size_t thread_count()
{
    static const bool settled = [] {
        std::thread([] {}).join();
        return true;
    }();
    (void)settled;
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}

// An io_context on its own thread, whose run() returns once it has no work left after
// release(): the proof that nothing of the writer is still queued or waiting on it.
class Loop {
public:
    Loop() : guard_(io_.get_executor()), thread_([this] {
                 io_.run();
                 finished_.store(true);
             })
    {
    }
    ~Loop()
    {
        guard_.reset();
        if (!finished_.load()) io_.stop();
        thread_.join();
    }
    boost::asio::io_context::executor_type executor() { return io_.get_executor(); }
    void release() { guard_.reset(); }
    bool finished() const { return finished_.load(); }

private:
    boost::asio::io_context io_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
    std::atomic<bool> finished_{false};
    std::thread thread_;
};

struct Tally {
    std::uint64_t accepted = 0, queue_full = 0, closed = 0;
};

// Producers that submit until submit() says closed.
class Producers {
public:
    template <class W>
    explicit Producers(W& w)
    {
        for (int p = 0; p < kProducers; ++p)
            threads_.emplace_back([this, &w, p] {
                Tally& t = tally_[static_cast<std::size_t>(p)];
                for (int i = 0;; ++i) {
                    switch (w.submit(rec(p * 1'000'000 + i))) {
                    case SubmitResult::accepted: ++t.accepted; break;
                    case SubmitResult::dropped_queue_full: ++t.queue_full; break;
                    case SubmitResult::closed: ++t.closed; break;
                    case SubmitResult::disabled: return;
                    }
                    if (t.closed >= 100) return;  // well after close: stop
                    started_.fetch_add(1, std::memory_order_relaxed);
                }
            });
    }
    ~Producers() { join(); }
    void join()
    {
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }
    long started() const { return started_.load(); }
    Tally total() const
    {
        Tally s;
        for (const Tally& t : tally_) {
            s.accepted += t.accepted;
            s.queue_full += t.queue_full;
            s.closed += t.closed;
        }
        return s;
    }

private:
    std::array<Tally, kProducers> tally_{};
    std::atomic<long> started_{0};
    std::vector<std::thread> threads_;
};

}  // namespace

TEST_CASE("async_close while 4 producers are still submitting drains in time, its report adds up to the producers' tallies, and no thread or work of the writer outlives it",
          "[reliability][shutdown]")
{
    const std::size_t threads_before = thread_count();
    TempDir dir;
    LogCapture logs;
    std::filesystem::path file;
    {
        Loop loop;
        const std::size_t threads_with_loop = thread_count();
        auto o = test_options(dir.path(), logs);
        o.queue_capacity = 1024;
        o.shutdown_timeout = std::chrono::seconds(5);
        std::optional<TestWriter> w(std::in_place, loop.executor(), o);
        w->start();
        file = w->file_path();
        {
            Producers producers(*w);
            REQUIRE(wait_until([&] { return producers.started() > 20'000; }));
            const auto t0 = Clock::now();
            const auto report = close(*w);
            const auto took = Clock::now() - t0;
            producers.join();
            const Tally t = producers.total();
            INFO("report: " << report.stats);
            CHECK(took < o.shutdown_timeout + std::chrono::milliseconds(250));
            CHECK(report.drained);
            CHECK(invariant_holds(report.stats));
            CHECK(report.stats.pending == 0);
            // The final counters: every submit() result is counted once, where it says.
            const auto s = w->stats();
            INFO("final: " << s);
            CHECK(invariant_holds(s));
            CHECK(s.submitted == t.accepted + t.queue_full + t.closed);
            CHECK(s.written == t.accepted);
            CHECK(s.dropped.queue_full == t.queue_full);
            CHECK(s.dropped.closed == t.closed);
            CHECK(s.dropped.closed >= kProducers * 100);
            CHECK(report.stats.written == s.written);
            CHECK(count_lines(file) == s.written);
        }
        w.reset();
        // The writer's I/O thread is gone once the writer is.
        CHECK(wait_until([&] { return thread_count() == threads_with_loop; }));
        loop.release();
        CHECK(wait_until([&] { return loop.finished(); }));  // no work of the writer left
    }
    CHECK(wait_until([&] { return thread_count() == threads_before; }));
}

TEST_CASE("async_close while producers submit and an append is stuck completes within the timeout plus 250 ms, counts what is stuck as unknown and what is queued as shutdown, and leaves nothing behind",
          "[reliability][shutdown]")
{
    const std::size_t threads_before = thread_count();
    TempDir dir;
    LogCapture logs;
    {
        Loop loop;
        const std::size_t threads_with_loop = thread_count();
        auto seam = std::make_shared<SeamFileIo>();
        auto o = test_options(dir.path(), logs);
        o.file_io = seam;
        o.queue_capacity = 1024;
        o.batch_records = 64;  // the stuck append takes a batch; the rest stays queued
        o.shutdown_timeout = std::chrono::milliseconds(300);
        std::optional<TestWriter> w(std::in_place, loop.executor(), o);
        ReleaseOnExit release(seam);
        w->start();
        seam->hold_writev();
        {
            Producers producers(*w);
            REQUIRE(seam->wait_writev_held());
            REQUIRE(wait_until([&] { return w->stats().dropped.queue_full > 1000; }));

            const auto t0 = Clock::now();
            const auto report = close(*w);
            const auto took = Clock::now() - t0;
            CHECK(took >= std::chrono::milliseconds(300));
            CHECK(took < std::chrono::milliseconds(300 + 250));
            producers.join();
            const Tally t = producers.total();
            const auto& r = report.stats;
            INFO("report: " << r);
            CHECK_FALSE(report.drained);
            CHECK(invariant_holds(r));
            CHECK(r.pending == 0);
            CHECK(r.written == 0);
            CHECK(r.unknown >= 1);  // the stuck batch
            CHECK(r.dropped.shutdown + r.unknown == t.accepted);
            CHECK(r.dropped.shutdown > 0);

            seam->release();  // the stuck call returns; nothing is counted twice
            CHECK(wait_until([&] { return seam->writev_returned() >= 1; }));
            const auto s = w->stats();
            INFO("final: " << s);
            CHECK(invariant_holds(s));
            CHECK(s.submitted == t.accepted + t.queue_full + t.closed);
            CHECK(s.dropped.queue_full == t.queue_full);
            CHECK(s.dropped.closed == t.closed);
            CHECK(s.written + s.unknown + s.dropped.shutdown == t.accepted);
        }
        w.reset();
        CHECK(wait_until([&] { return thread_count() == threads_with_loop; }));
        loop.release();
        CHECK(wait_until([&] { return loop.finished(); }));
    }
    CHECK(wait_until([&] { return thread_count() == threads_before; }));
}

TEST_CASE("many flushes outstanding at once each complete once, in any order of resolution, while producers go on",
          "[reliability][shutdown][flush]")
{
    // Regression: completing the first of several waiting flushes used to move-assign the
    // others' any_completion_handler, which recursed without end in Boost 1.81.
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 4;
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.start(w);
    REQUIRE(h.stick_append(w, rec(0)));
    constexpr int kFlushes = 50;
    std::atomic<int> completed{0};
    for (int i = 1; i <= kFlushes; ++i) {
        REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        w.async_flush([&](jsonlw::error_code ec) {
            if (!ec) ++completed;
        });
    }
    h.seam->release();
    CHECK(wait_until([&] { return completed.load() == kFlushes; }));
    const auto report = close(w);
    CHECK(completed.load() == kFlushes);
    CHECK(report.stats.written == kFlushes + 1);
    CHECK(invariant_holds(report.stats));
}
