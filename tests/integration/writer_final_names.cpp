// The open suffix's other half: a file always gets its final name (the suffix dropped) — from a
// writer destroyed without async_close(), and, at the next start(), from a process of this stem
// and host that crashed (its pid has ended); the .open files of live processes and other hosts
// are left alone.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;
namespace fs = std::filesystem;

TEST_CASE("A writer destroyed without async_close() still gives its file the final name",
          "[integration][rotation][lifetime][final_name]")
{
    Harness h;
    {
        auto o = h.options();
        o.rotation.rotate_bytes = 1 << 20;
        TestWriter w(h.executor(), o);
        h.start(w);
        for (int i = 0; i < 4; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        flush(w);
        REQUIRE(files_ending(h.dir.path(), ".open").size() == 1);
    }
    // The rename runs when the writer's loop lets go of its drain, right after.
    CHECK(wait_until([&] { return files_ending(h.dir.path(), ".open").empty(); }));
    const auto closed = files_ending(h.dir.path(), ".jsonl");
    REQUIRE(closed.size() == 1);
    CHECK(read_lines(closed[0]).size() == 4);
}

TEST_CASE("start() renames the .open files a crashed process of this stem and host left, and leaves those of live processes and other hosts alone",
          "[integration][rotation][crash][final_name]")
{
    Harness h;
    char host[256] = {};
    REQUIRE(::gethostname(host, sizeof host - 1) == 0);
    // A pid that has ended: a child that exited and was reaped.
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    REQUIRE(child > 0);
    REQUIRE(::waitpid(child, nullptr, 0) == child);
    const std::string dead = fmt::format("test-{}-{}-20260101T000000Z-000003.jsonl.open", host, child);
    const std::string live = fmt::format("test-{}-{}-20260101T000000Z-000000.jsonl.open", host, ::getppid());
    const std::string other = fmt::format("test-elsewhere.example-{}-20260101T000000Z-000000.jsonl.open", child);
    const std::string stem = fmt::format("other-{}-{}-20260101T000000Z-000000.jsonl.open", host, child);
    for (const auto& n : {dead, live, other, stem}) write_file(h.dir / n, "{\"id\":1}\n");

    auto o = h.options();
    o.rotation.rotate_bytes = 1 << 20;
    TestWriter w(h.executor(), o);
    h.start(w);
    INFO(h.logs.dump());
    CHECK(fs::exists(h.dir / dead.substr(0, dead.size() - 5)));
    CHECK(!fs::exists(h.dir / dead));
    CHECK(fs::exists(h.dir / live));
    CHECK(fs::exists(h.dir / other));
    CHECK(fs::exists(h.dir / stem));
    CHECK(h.logs.count(LogLevel::info, "Renamed 1 test JSONL file(s) left open by ended processes") == 1);
    close(w);
}
