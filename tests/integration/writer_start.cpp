// start() and the writer before it: records submitted before start() wait in the queue; a writer
// without an output directory is inert, and one whose directory cannot be created is disabled
// with one error log — neither creates, counts nor throws anything.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <filesystem>
#include <future>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

// async_flush / async_close through a callback: the error_code whatever it is.
template <class W>
std::error_code flush_ec(W& w)
{
    std::promise<std::error_code> p;
    auto f = p.get_future();
    w.async_flush([&p](std::error_code ec) { p.set_value(ec); });
    return get_within(f);
}
template <class W>
std::pair<std::error_code, jsonlw::CloseReport> close_ec(W& w)
{
    std::promise<std::pair<std::error_code, jsonlw::CloseReport>> p;
    auto f = p.get_future();
    w.async_close([&p](std::error_code ec, jsonlw::CloseReport r) { p.set_value({ec, r}); });
    return get_within(f);
}

// A disabled writer: no file, `submits` records refused as disabled and not counted, and a
// flush and a close that complete (disabled, or no error); the close's report.
template <class W>
jsonlw::CloseReport check_disabled(W& w, int submits)
{
    CHECK(w.file_path().empty());
    for (int i = 0; i < submits; ++i) CHECK(w.submit(rec(i)) == SubmitResult::disabled);
    CHECK(w.stats() == jsonlw::WriterStats{});
    const auto fec = flush_ec(w);
    CHECK((!fec || fec == jsonlw::errc::disabled));
    const auto [cec, report] = close_ec(w);
    CHECK((!cec || cec == jsonlw::errc::disabled));
    return report;
}

}  // namespace

TEST_CASE("records submitted before start() wait in the queue and are written once it starts", "[integration][writer][start]")
{
    Harness h;
    h.loop.start();
    TestWriter w(h.executor(), h.options());
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    CHECK(files_in(h.dir.path()).empty());  // nothing on disk before start()
    w.start();
    flush(w);
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{1, 2});
    CHECK(w.stats().written == 2);
}

TEST_CASE("a writer without an output directory is inert: nothing created, nothing counted, submit returns disabled",
          "[integration][writer][start]")
{
    Harness h;
    // Run from inside the empty temp dir, to see that nothing is created relative to it.
    const auto old_cwd = std::filesystem::current_path();
    std::filesystem::current_path(h.dir.path());
    struct Restore {
        std::filesystem::path p;
        ~Restore() { std::filesystem::current_path(p); }
    } restore{old_cwd};

    jsonlw::WriterOptions o;
    o.log = h.logs.sink();
    TestWriter w(h.executor(), o);
    w.start();
    w.start();
    h.loop.start();
    const jsonlw::CloseReport report = check_disabled(w, 5);
    CHECK(report.stats == jsonlw::WriterStats{});
    CHECK(w.stats() == jsonlw::WriterStats{});
    CHECK(files_in(h.dir.path()).empty());
    CHECK(h.logs.count(LogLevel::warning) == 0);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("an output directory that cannot be created disables the writer with one error log", "[integration][writer][start]")
{
    Harness h;
    write_file(h.dir / "blocker", "a regular file\n");
    auto o = test_options(h.dir / "blocker" / "sub", h.logs);
    TestWriter w(h.executor(), o);
    REQUIRE_NOTHROW(w.start());
    REQUIRE_NOTHROW(w.start());
    h.loop.start();

    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::error) == 1);
    CHECK(h.logs.count(LogLevel::error, "Disabling test JSONL output") == 1);
    check_disabled(w, 3);
    CHECK(h.logs.count(LogLevel::error) == 1);
    CHECK(std::filesystem::is_regular_file(h.dir / "blocker"));
    CHECK(files_in(h.dir.path()) == std::vector<std::string>{"blocker"});
}
