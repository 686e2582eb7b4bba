// reopen() and async_reopen(), for logrotate and a SIGHUP handler: with the open suffix the file
// is renamed to its final name and records go on in the next file; without it, a file moved
// away is created anew. A rename the filesystem refuses (through the FileIo seam) keeps the
// records in the .open file, warns once, counts exactly and is reported to async_reopen()'s
// caller.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/use_future.hpp>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;
namespace fs = std::filesystem;

namespace {

// A seam whose rename fails with `err` (every call) once armed.
class RenameFails : public SeamFileIo {
public:
    explicit RenameFails(int err) : err_(err) {}
    int rename(const char* from, const char* to) noexcept override
    {
        ++renames;
        if (armed.load()) {
            errno = err_;
            return -1;
        }
        return FileIo::rename(from, to);
    }
    std::atomic<bool> armed{false};
    std::atomic<int> renames{0};

private:
    int err_;
};

// A started writer with the open suffix whose renames fail with `err` once the seam is armed,
// record 1 written. reopen() arms the seam and returns what async_reopen() completed with.
struct RenameRefused {
    explicit RenameRefused(int err) : seam(std::make_shared<RenameFails>(err)), w(h.executor(), options())
    {
        h.start(w);
        REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
        flush(w);
    }

    jsonlw::error_code reopen()
    {
        seam->armed = true;
        std::promise<jsonlw::error_code> done;
        w.async_reopen([&](jsonlw::error_code ec) { done.set_value(ec); });
        return get_within(done.get_future());
    }

    Harness h;
    std::shared_ptr<RenameFails> seam;
    TestWriter w;

private:
    jsonlw::WriterOptions options() const
    {
        auto o = h.options();
        o.rotation.open_suffix = ".open";
        o.file_io = seam;
        return o;
    }
};

}  // namespace

TEST_CASE("async_reopen() with the open suffix completes once the file is renamed; records after it go to the next file",
          "[integration][rotation][reopen]")
{
    Harness h;
    auto o = h.options();
    o.rotation.open_suffix = ".open";  // numbered files and the suffix, without automatic rotation
    TestWriter w(h.executor(), o);
    h.start(w);
    for (int i = 0; i < 5; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    flush(w);
    CHECK(files_ending(h.dir.path(), ".jsonl").empty());
    get_within(w.async_reopen(boost::asio::use_future));
    auto closed = files_ending(h.dir.path(), ".jsonl");
    REQUIRE(closed.size() == 1);
    CHECK(closed[0] == w.file_path());
    CHECK(read_lines(closed[0]).size() == 5);
    CHECK(w.stats().files_closed == 1);

    // A reopen with nothing written since does not make an empty file.
    get_within(w.async_reopen(boost::asio::use_future));
    CHECK(w.stats().files_closed == 1);

    for (int i = 5; i < 8; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    const auto report = close(w);
    closed = files_ending(h.dir.path(), ".jsonl");
    REQUIRE(closed.size() == 2);
    CHECK(read_lines(closed[1]).size() == 3);
    CHECK(report.stats.written == 8);
    CHECK(w.files() == closed);
}

TEST_CASE("reopen() without a suffix, after logrotate moved the file away, creates file_path() anew for the records that follow",
          "[integration][rotation][reopen]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    flush(w);
    const fs::path rotated = w.file_path().string() + ".1";
    fs::rename(w.file_path(), rotated);  // what logrotate (create, no copytruncate) does
    get_within(w.async_reopen(boost::asio::use_future));
    for (int i = 3; i < 5; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    const auto report = close(w);
    CHECK(report.stats.written == 5);
    const auto old_lines = read_lines(rotated);
    const auto new_lines = read_lines(w.file_path());
    REQUIRE(old_lines.size() == 3);
    REQUIRE(new_lines.size() == 2);
    CHECK(json_id(new_lines[0]) == 3);
    CHECK(w.files() == std::vector<fs::path>{w.file_path()});
}

TEST_CASE("A rename the filesystem refuses keeps the records in the .open file, with a warning and exact counts; the writer goes on in the next file",
          "[integration][rotation][faults][reopen]")
{
    RenameRefused t(EACCES);
    auto& [h, seam, w] = t;
    CHECK(t.reopen() == boost::system::errc::permission_denied);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    flush(w);
    seam->armed = false;
    const auto report = close(w);
    INFO(h.logs.dump());
    CHECK(report.stats.written == 2);
    CHECK(report.stats.dropped.total() == 0);
    CHECK(h.logs.count(LogLevel::warning, "Failed to rename test JSONL file") == 1);
    const auto stuck = files_ending(h.dir.path(), ".jsonl.open");
    REQUIRE(stuck.size() == 1);
    CHECK(stuck[0].filename().string().find("-000000.jsonl.open") != std::string::npos);
    CHECK(read_lines(stuck[0]).size() == 1);
    const auto closed = files_ending(h.dir.path(), ".jsonl");
    REQUIRE(closed.size() == 1);
    CHECK(closed[0].filename().string().find("-000001.jsonl") != std::string::npos);
    CHECK(seam->renames == 2);
}

TEST_CASE("async_reopen() reports the rename's error to its caller", "[integration][rotation][faults][reopen]")
{
    RenameRefused t(EXDEV);
    CHECK(t.reopen() == boost::system::errc::cross_device_link);
    t.seam->armed = false;
}
