// Failing appends (and TensorRT-LLM's Python writer's write-failure tests, ported): real
// faults (a file that is a symlink to /dev/full gives ENOSPC; a directory path through a
// regular file gives ENOTDIR) and injected ones through the FileIo seam (EIO, EINTR, short
// writes). A failure costs its batch, is counted and warned about (rate-limited), never the
// drain; once the fault clears, later records are written again.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <cerrno>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

std::string line_of(int id)
{
    return R"({"id":)" + std::to_string(id) + R"(,"text":"r)" + std::to_string(id) + R"(","value":0.0})";
}

}  // namespace

TEST_CASE("an append the filesystem refuses (a symlink to /dev/full: ENOSPC) costs its batch with one warning; once the fault clears, records are written again",
          "[integration][faults]")
{
    Harness h;
    const auto target = h.dir / "full.jsonl";
    std::filesystem::create_symlink("/dev/full", target);
    RoutedWriter w(h.executor(), h.options(), RoutedWriter::to(target));
    h.start(w);

    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    flush(w);
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 0);
    CHECK(s.dropped.write_error == 2);
    CHECK(s.batches == 0);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump());
    auto warnings = h.logs.matching(LogLevel::warning, "Failed to write test JSONL");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("No space left on device") != std::string::npos);

    // Still failing: counted, not warned again (rate limit).
    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);
    flush(w);
    CHECK(w.stats().dropped.write_error == 3);
    CHECK(h.logs.count(LogLevel::warning, "Failed to write test JSONL") == 1);

    // The fault clears: the path becomes an ordinary (new) file.
    std::filesystem::remove(target);
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(5)) == SubmitResult::accepted);
    flush(w);
    s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 2);
    CHECK(s.dropped.write_error == 3);
    CHECK(invariant_holds(s));
    CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(target)));
    CHECK(read_lines(target) == std::vector<std::string>{line_of(4), line_of(5)});
    CHECK(h.logs.count(LogLevel::warning, "Failed to write test JSONL") == 1);
}

TEST_CASE("a directory path through a regular file (ENOTDIR) costs the batch with a warning; once the fault clears, records are written again",
          "[integration][faults]")
{
    Harness h;
    write_file(h.dir / "blocker", "not a directory\n");
    const auto target = h.dir / "blocker" / "x.jsonl";
    RoutedWriter w(h.executor(), h.options(), RoutedWriter::to(target));
    h.start(w);

    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 0);
    CHECK(s.dropped.write_error == 1);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump());
    const auto warnings = h.logs.matching(LogLevel::warning, "Failed to write test JSONL");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("Not a directory") != std::string::npos);

    std::filesystem::remove(h.dir / "blocker");
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    flush(w);
    s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 1);
    CHECK(s.dropped.write_error == 1);
    CHECK(invariant_holds(s));
    CHECK(read_lines(target) == std::vector<std::string>{line_of(2)});
}

TEST_CASE("an append that fails with EIO costs only its batch, warns once, and the drain goes on", "[integration][faults]")
{
    Harness h(with_seam);
    TestWriter w(h.executor(), h.options());
    h.start(w);

    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    h.seam->fail_writev(EIO, 1);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);
    flush(w);  // 2 and 3: one batch or two; only the failed one is lost
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    flush(w);

    const auto s = w.stats();
    INFO("stats: " << s);
    const auto ids = ids_of(read_lines(w.file_path()));
    INFO(h.logs.dump());
    REQUIRE(ids.size() >= 2);
    CHECK(ids.front() == 1);
    CHECK(ids.back() == 4);
    CHECK(s.written == ids.size());
    CHECK(s.dropped.write_error == 4 - ids.size());
    CHECK(s.dropped.write_error >= 1);
    CHECK(s.dropped.unexpected == 0);
    CHECK(invariant_holds(s));
    const auto warnings = h.logs.matching(LogLevel::warning, "Failed to write test JSONL");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("Input/output error") != std::string::npos);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("write failures are warned about first, then every 1000th", "[integration][faults]")
{
    Harness h(with_seam);
    h.seam->fail_writev(ENOSPC, -1);
    auto o = h.options();
    o.batch_records = 1;
    o.queue_capacity = 4096;
    TestWriter w(h.executor(), o);
    w.start();
    for (int i = 0; i < 2500; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.dropped.write_error == 2500);
    CHECK(s.written == 0);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump().substr(0, 2000));
    CHECK(h.logs.count(LogLevel::warning, "Failed to write test JSONL") == 3);
    CHECK(h.logs.count(LogLevel::warning, "No space left on device") == 3);
}

TEST_CASE("a write interrupted by EINTR is retried: nothing is lost or counted as an error", "[integration][faults]")
{
    Harness h(with_seam);
    h.seam->eintr_once();
    TestWriter w(h.executor(), h.options());
    w.start();
    for (int i = 0; i < 5; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(read_lines(w.file_path()) ==
          std::vector<std::string>{line_of(0), line_of(1), line_of(2), line_of(3), line_of(4)});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 5);
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));
    CHECK(h.seam->writev_count() >= 2);
    CHECK(h.logs.count(LogLevel::warning) == 0);
}

TEST_CASE("a short write is completed: every line reaches the file whole", "[integration][faults]")
{
    Harness h(with_seam);
    h.seam->short_write_once();
    TestWriter w(h.executor(), h.options());
    w.start();
    std::vector<std::string> want;
    for (int i = 0; i < 10; ++i) {
        REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        want.push_back(line_of(i));
    }
    h.loop.start();
    flush(w);

    CHECK(read_lines(w.file_path()) == want);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 10);
    CHECK(s.bytes == read_file(w.file_path()).size());
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));
    CHECK(h.seam->writev_count() >= 2);
    CHECK(h.logs.count(LogLevel::warning) == 0);
}

TEST_CASE("a disk that fills up in the middle of a line has that append cut back: no torn line, the record counted write_error, the next one on a line boundary",
          "[integration][faults][torn]")
{
    Harness h(with_seam);
    TestWriter w(h.executor(), h.options());
    h.start(w);

    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    const auto before = std::filesystem::file_size(w.file_path());
    h.seam->short_write_once(ENOSPC);  // half of record 2's line, then ENOSPC
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    flush(w);
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 1);
    CHECK(s.dropped.write_error == 1);
    CHECK(s.unknown == 0);
    CHECK(invariant_holds(s));
    CHECK(h.logs.count(LogLevel::warning, "Failed to write test JSONL") == 1);
    CHECK(std::filesystem::file_size(w.file_path()) == before);  // cut back to line 1's end

    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);
    flush(w);
    s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 2);
    CHECK(invariant_holds(s));
    const auto lines = read_lines(w.file_path());
    INFO(read_file(w.file_path()));
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == line_of(1));
    CHECK(lines[1] == line_of(3));
    CHECK(read_file(w.file_path()).back() == '\n');
}
