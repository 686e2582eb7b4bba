// Lifetimes around the writer's destructor: the documented rule is "destroy the writer before
// the execution context of its executor". Once the destructor has returned, nothing the
// writer started may touch that context any more (its strand, its timers), however the
// context is run or destroyed afterwards. A race here shows up intermittently, so each
// scenario repeats many times; it has its own executable because a failure is a crash.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <memory>
#include <string>

using namespace jsonlw_test;
using jsonlw::SubmitResult;

namespace {

constexpr int kRounds = 200;

// A scenario's repetitions: each round gets a fresh IoRunner (started or not, as the round
// chooses), which is destroyed as the round ends, after the round's writer.
struct Rounds {
    template <class Round>
    void run(int rounds, Round round)
    {
        for (int r = 0; r < rounds; ++r) {
            auto loop = std::make_unique<IoRunner>();
            round(r, *loop);
            loop.reset();
        }
        SUCCEED("no crash, no hang");
    }

    TempDir dir;
    LogCapture logs;
    jsonlw::WriterOptions options = test_options(dir.path(), logs);
};

}  // namespace

TEST_CASE("a writer destroyed before its io_context ever ran leaves nothing that touches the context afterwards",
          "[integration][shutdown][lifetime]")
{
    Rounds rounds;
    rounds.run(kRounds, [&](int, IoRunner& loop) {
        {
            TestWriter w(loop.executor(), rounds.options);
            w.start();
            for (int i = 0; i < 10; ++i) w.submit(rec(i));
        }
        // The context runs briefly after the writer is gone, then is destroyed.
        loop.start();
        loop.stop();
    });
}

TEST_CASE("a writer that was never started, destroyed before its io_context, leaves nothing behind",
          "[integration][shutdown][lifetime]")
{
    Rounds rounds;
    rounds.run(kRounds, [&](int round, IoRunner& loop) {
        if (round % 2) loop.start();
        TestWriter w(loop.executor(), rounds.options);
        w.submit(rec(1));
    });
}

TEST_CASE("a writer destroyed while its loop runs, with the loop destroyed right after, leaves nothing behind",
          "[integration][shutdown][lifetime]")
{
    Rounds rounds;
    rounds.options.queue_capacity = 4096;
    rounds.run(kRounds, [&](int round, IoRunner& loop) {
        loop.start();
        TestWriter w(loop.executor(), rounds.options);
        w.start();
        for (int i = 0; i < (round % 2 ? 3000 : 50); ++i) w.submit(rec(i));
    });
}

TEST_CASE("a writer that was closed, then destroyed, with the loop destroyed right after, leaves nothing behind",
          "[integration][shutdown][lifetime]")
{
    Rounds rounds;
    rounds.run(kRounds / 4, [&](int, IoRunner& loop) {
        loop.start();
        TestWriter w(loop.executor(), rounds.options);
        w.start();
        for (int i = 0; i < 50; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        const auto report = close(w);
        REQUIRE(report.drained);
    });
}
