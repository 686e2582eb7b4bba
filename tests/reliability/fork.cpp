// fork(): a child forked while a writer has files open shares their descriptors — and the
// files' O_APPEND offsets — with the parent. jsonlw's rule: a writer inherited by a child never
// writes through them: each append in the child is refused
// (counted as write_error, nothing written), while a writer the child creates itself works.
// The child here only drives the writer's event loop on its single thread (the writer's
// appends run on a second io_context it also drives, so no thread is lost by the fork), then
// _exit()s; the parent checks that its file holds none of the child's records and that it
// goes on writing.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/io_context.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <set>
#include <string>

using namespace jsonlw_test;
using jsonlw::SubmitResult;
namespace asio = boost::asio;

namespace {

// Runs both contexts on this thread until `pred` holds (or a generous deadline passes).
template <class Pred>
bool drive(asio::io_context& a, asio::io_context& b, Pred pred)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        a.restart();
        a.poll();
        b.restart();
        b.poll();
    }
    return true;
}

// Waits for the child (a generous deadline); a child that has not exited by then is killed,
// so a hang fails the test without leaving a process behind.
bool reap(pid_t pid, int& status)
{
    if (wait_until([&] { return ::waitpid(pid, &status, WNOHANG) == pid; })) return true;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return false;
}

}  // namespace

TEST_CASE("after fork() a writer inherited by the child never writes into the parent's file: its appends are refused and counted; the parent keeps writing",
          "[reliability][fork]")
{
    TempDir dir;
    LogCapture logs;
    asio::io_context loop, io;
    auto o = test_options(dir / "parent", logs);
    o.io_executor = io.get_executor();
    TestWriter w(loop.get_executor(), o);
    w.start();
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    REQUIRE(drive(loop, io, [&] { return w.stats().written == 3; }));
    const auto file = w.file_path();
    REQUIRE(count_lines(file) == 3);

    loop.notify_fork(asio::execution_context::fork_prepare);
    io.notify_fork(asio::execution_context::fork_prepare);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // The child: use the inherited writer, then a writer of its own, then _exit.
        loop.notify_fork(asio::execution_context::fork_child);
        io.notify_fork(asio::execution_context::fork_child);
        int code = 0;
        for (int i = 100; i < 105; ++i)
            if (w.submit(rec(i)) != SubmitResult::accepted) code |= 1;
        if (!drive(loop, io, [&] { return w.stats().dropped.write_error == 5; })) code |= 2;
        if (w.stats().written != 3) code |= 4;
        {
            auto co = test_options(dir / "child", logs);
            co.io_executor = io.get_executor();
            TestWriter own(loop.get_executor(), co);
            own.start();
            for (int i = 200; i < 202; ++i) own.submit(rec(i));
            if (!drive(loop, io, [&] { return own.stats().written == 2; })) code |= 8;
            bool closed = false;
            own.async_close([&](jsonlw::error_code, jsonlw::CloseReport) { closed = true; });
            if (!drive(loop, io, [&] { return closed; })) code |= 16;
        }
        ::_exit(code);
    }
    loop.notify_fork(asio::execution_context::fork_parent);
    io.notify_fork(asio::execution_context::fork_parent);

    int status = 0;
    REQUIRE(reap(pid, status));
    REQUIRE(WIFEXITED(status));
    INFO("child exit code bits: 1 submit refused, 2 appends not refused, 4 child wrote, "
         "8/16 child's own writer failed");
    CHECK(WEXITSTATUS(status) == 0);

    // The parent's writer goes on; its file holds its records only.
    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);
    REQUIRE(drive(loop, io, [&] { return w.stats().written == 4; }));
    const auto s = w.stats();
    CHECK(s.dropped.write_error == 0);
    CHECK(invariant_holds(s));
    CHECK(ids_of(read_lines(file)) == std::vector<std::int64_t>{0, 1, 2, 3});
    // The child's own writer wrote its own file (named with the child's pid).
    std::size_t child_lines = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir / "child")) {
        CHECK(e.path().filename().string().find("-" + std::to_string(pid) + "-") != std::string::npos);
        child_lines += count_lines(e.path());
    }
    CHECK(child_lines == 2);
    bool closed = false;
    w.async_close([&](jsonlw::error_code, jsonlw::CloseReport) { closed = true; });
    CHECK(drive(loop, io, [&] { return closed; }));
}

TEST_CASE("after fork() a child closing or reopening its inherited rotating writer never renames the parent's open file",
          "[reliability][fork][rotation]")
{
    TempDir dir;
    LogCapture logs;
    asio::io_context loop, io;
    auto o = test_options(dir.path(), logs);
    o.io_executor = io.get_executor();
    o.rotation.open_suffix = ".open";
    TestWriter w(loop.get_executor(), o);
    w.start();
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    REQUIRE(drive(loop, io, [&] { return w.stats().written == 3; }));
    const auto files = w.files();
    REQUIRE(files.size() == 1);
    const auto open_file = files.front();
    REQUIRE(open_file.extension() == ".open");

    loop.notify_fork(asio::execution_context::fork_prepare);
    io.notify_fork(asio::execution_context::fork_prepare);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        loop.notify_fork(asio::execution_context::fork_child);
        io.notify_fork(asio::execution_context::fork_child);
        int code = 0;
        bool reopened = false, closed = false;
        w.async_reopen([&](jsonlw::error_code) { reopened = true; });
        if (!drive(loop, io, [&] { return reopened; })) code |= 1;
        w.async_close([&](jsonlw::error_code, jsonlw::CloseReport) { closed = true; });
        if (!drive(loop, io, [&] { return closed; })) code |= 2;
        if (!std::filesystem::exists(open_file)) code |= 4;
        ::_exit(code);
    }
    loop.notify_fork(asio::execution_context::fork_parent);
    io.notify_fork(asio::execution_context::fork_parent);
    int status = 0;
    REQUIRE(reap(pid, status));
    REQUIRE(WIFEXITED(status));
    INFO("child exit code bits: 1 reopen, 2 close did not complete, 4 the parent's file was renamed");
    CHECK(WEXITSTATUS(status) == 0);

    // The parent's file is still open under its name; the parent closes it itself.
    CHECK(std::filesystem::exists(open_file));
    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);
    bool closed = false;
    w.async_close([&](jsonlw::error_code, jsonlw::CloseReport) { closed = true; });
    REQUIRE(drive(loop, io, [&] { return closed; }));
    CHECK(!std::filesystem::exists(open_file));
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3});
}

TEST_CASE("after fork() a child's inherited size-rotating writer, whose file is too full for the next line, refuses that line instead of spinning",
          "[reliability][fork][rotation]")
{
    TempDir dir;
    LogCapture logs;
    asio::io_context loop, io;
    auto o = test_options(dir.path(), logs);
    o.io_executor = io.get_executor();
    o.rotation.rotate_bytes = 50;  // one ~33-byte line fits, two do not
    TestWriter w(loop.get_executor(), o);
    w.start();
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    REQUIRE(drive(loop, io, [&] { return w.stats().written == 1; }));

    loop.notify_fork(asio::execution_context::fork_prepare);
    io.notify_fork(asio::execution_context::fork_prepare);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        loop.notify_fork(asio::execution_context::fork_child);
        io.notify_fork(asio::execution_context::fork_child);
        int code = 0;
        if (w.submit(rec(2)) != SubmitResult::accepted) code |= 1;
        // Not rotated (the file is the parent's), not written (refused): counted.
        if (!drive(loop, io, [&] { return w.stats().dropped.write_error == 1; })) code |= 2;
        ::_exit(code);
    }
    loop.notify_fork(asio::execution_context::fork_parent);
    io.notify_fork(asio::execution_context::fork_parent);
    int status = 0;
    REQUIRE(reap(pid, status));
    REQUIRE(WIFEXITED(status));
    INFO("child exit code bits: 1 submit refused, 2 the line was not counted as write_error");
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(w.files().size() == 1);  // the parent's file was neither rotated nor renamed
    bool closed = false;
    w.async_close([&](jsonlw::error_code, jsonlw::CloseReport) { closed = true; });
    REQUIRE(drive(loop, io, [&] { return closed; }));
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{1});
}
