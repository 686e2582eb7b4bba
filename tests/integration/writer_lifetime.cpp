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
}

TEST_CASE("a writer destroyed before its io_context ever ran leaves nothing that touches the context afterwards",
          "[integration][shutdown][lifetime]")
{
    TempDir dir;
    LogCapture logs;
    auto o = test_options(dir.path(), logs);
    for (int round = 0; round < kRounds; ++round) {
        auto loop = std::make_unique<IoRunner>();
        {
            TestWriter w(loop->executor(), o);
            w.start();
            for (int i = 0; i < 10; ++i) w.submit(rec(i));
        }
        // The context runs briefly after the writer is gone, then is destroyed.
        loop->start();
        loop->stop();
        loop.reset();
    }
    SUCCEED("no crash, no hang");
}

TEST_CASE("a writer that was never started, destroyed before its io_context, leaves nothing behind",
          "[integration][shutdown][lifetime]")
{
    TempDir dir;
    LogCapture logs;
    auto o = test_options(dir.path(), logs);
    for (int round = 0; round < kRounds; ++round) {
        auto loop = std::make_unique<IoRunner>();
        if (round % 2) loop->start();
        {
            TestWriter w(loop->executor(), o);
            w.submit(rec(1));
        }
        loop.reset();
    }
    SUCCEED("no crash, no hang");
}

TEST_CASE("a writer destroyed while its loop runs, with the loop destroyed right after, leaves nothing behind",
          "[integration][shutdown][lifetime]")
{
    TempDir dir;
    LogCapture logs;
    auto o = test_options(dir.path(), logs);
    o.queue_capacity = 4096;
    for (int round = 0; round < kRounds; ++round) {
        auto loop = std::make_unique<IoRunner>();
        loop->start();
        {
            TestWriter w(loop->executor(), o);
            w.start();
            for (int i = 0; i < (round % 2 ? 3000 : 50); ++i) w.submit(rec(i));
        }
        loop.reset();
    }
    SUCCEED("no crash, no hang");
}

TEST_CASE("a writer that was closed, then destroyed, with the loop destroyed right after, leaves nothing behind",
          "[integration][shutdown][lifetime]")
{
    TempDir dir;
    LogCapture logs;
    auto o = test_options(dir.path(), logs);
    for (int round = 0; round < kRounds / 4; ++round) {
        auto loop = std::make_unique<IoRunner>();
        loop->start();
        {
            TestWriter w(loop->executor(), o);
            w.start();
            for (int i = 0; i < 50; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
            const auto report = close(w);
            REQUIRE(report.drained);
        }
        loop.reset();
    }
    SUCCEED("no crash, no hang");
}
