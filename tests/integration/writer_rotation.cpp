// Rotation of the default layout's file by the writer itself, for shippers: by size
// (rotate_bytes, split at line boundaries) and by age (rotate_interval, even when idle), by
// rename (never copy-truncate), with the open suffix so a loader globbing *.jsonl never reads a
// file still being written; exact accounting across rotations. Rotation by an outside tool:
// writer_reopen.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;
namespace fs = std::filesystem;

TEST_CASE("Rotating 50 times under load from two threads leaves every record in exactly one closed file, and a reader globbing *.jsonl meanwhile only ever sees complete files",
          "[integration][rotation]")
{
    Harness h;
    auto o = h.options();
    o.rotation.rotate_bytes = 4096;
    o.overflow = jsonlw::Overflow::block;
    o.block_timeout = std::chrono::seconds(10);
    o.queue_capacity = 256;
    TestWriter w(h.executor(), o);
    h.start(w);

    // ~40 bytes per line: 2 x 3000 records are ~240 KB, i.e. about 60 files of 4 KiB.
    constexpr int per_thread = 3000;
    std::atomic<bool> done{false};
    // The reader: every *.jsonl it sees must already be complete — the same bytes it will
    // hold at the end.
    std::map<fs::path, std::string> seen;
    std::thread reader([&] {
        while (!done.load()) {
            for (const fs::path& p : files_ending(h.dir.path(), ".jsonl"))
                if (!seen.count(p)) seen.emplace(p, read_file(p));
            std::this_thread::yield();
        }
    });
    std::vector<std::thread> producers;
    std::atomic<int> refused{0};
    for (int t = 0; t < 2; ++t)
        producers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i)
                if (w.submit(rec(t * per_thread + i)) != SubmitResult::accepted) ++refused;
        });
    for (auto& p : producers) p.join();
    const auto report = close(w);
    done = true;
    reader.join();

    INFO("stats: " << report.stats);
    REQUIRE(refused == 0);
    CHECK(report.drained);
    CHECK(report.stats.written == 2 * per_thread);
    CHECK(report.stats.dropped.total() == 0);
    CHECK(report.stats.unknown == 0);
    CHECK(report.stats.files_closed >= 50);

    // Nothing is left with the open suffix; the closed files are numbered 000000, 000001, …
    CHECK(files_ending(h.dir.path(), ".open").empty());
    const auto closed = files_ending(h.dir.path(), ".jsonl");
    REQUIRE(closed.size() >= 51);
    CHECK(closed.size() == report.stats.files_closed + 1);  // the last one closed by close()
    CHECK(w.files() == closed);
    CHECK(w.file_path() == closed.front());
    const std::regex name(R"(test-.+-\d+-\d{8}T\d{6}Z-(\d{6})\.jsonl)");
    std::vector<int> ids;
    std::map<int, int> last_of_thread{{0, -1}, {1, -1}};
    for (std::size_t i = 0; i < closed.size(); ++i) {
        std::smatch m;
        const std::string fname = closed[i].filename().string();
        REQUIRE(std::regex_match(fname, m, name));
        CHECK(std::stoul(m[1]) == i);
        const std::string text = read_file(closed[i]);
        CHECK(text.size() <= 4096);
        CHECK(!text.empty());
        CHECK(text.back() == '\n');
        for (const std::string& line : split_lines(text)) {
            const int id = static_cast<int>(json_id(line).value());
            ids.push_back(id);
            // Files in name order hold each thread's records in submission order.
            int& last = last_of_thread[id / per_thread];
            CHECK(id > last);
            last = id;
        }
    }
    std::sort(ids.begin(), ids.end());
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());  // none twice
    CHECK(ids.size() == 2 * per_thread);                              // none missing
    CHECK(ids.front() == 0);
    CHECK(ids.back() == 2 * per_thread - 1);

    REQUIRE(!seen.empty());
    for (const auto& [path, bytes] : seen) {
        INFO(path);
        CHECK(bytes == read_file(path));
    }
}

TEST_CASE("rotate_bytes splits a batch at line boundaries: no file exceeds it, and a line longer than it gets a file of its own",
          "[integration][rotation]")
{
    Harness h;
    auto o = h.options();
    o.rotation.rotate_bytes = 100;
    o.batch_records = 64;
    TestWriter w(h.executor(), o);
    // Queued before start(): the first batch holds all of them.
    for (int i = 0; i < 10; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(10, std::string(300, 'x'))) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(11)) == SubmitResult::accepted);
    h.start(w);
    const auto report = close(w);
    INFO("stats: " << report.stats);
    CHECK(report.stats.written == 12);
    CHECK(report.stats.batches == 1);  // one batch, split over files by the sink

    const auto closed = files_ending(h.dir.path(), ".jsonl");
    std::vector<std::int64_t> ids;
    bool long_alone = false;
    for (const fs::path& p : closed) {
        const auto lines = read_lines(p);
        for (const auto& l : lines) ids.push_back(json_id(l).value());
        if (fs::file_size(p) > 100) {
            REQUIRE(lines.size() == 1);
            long_alone = json_id(lines[0]) == 10;
        }
    }
    CHECK(long_alone);
    CHECK(ids == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    // Files are packed: the next file's first line would not have fit in the one before.
    for (std::size_t i = 0; i + 1 < closed.size(); ++i)
        CHECK(fs::file_size(closed[i]) + read_lines(closed[i + 1]).front().size() + 1 > 100);
    CHECK(closed.size() >= 5);
}

TEST_CASE("rotate_interval closes an idle file on time: it is renamed to .jsonl without another record, and the next record starts the next file",
          "[integration][rotation]")
{
    Harness h;
    auto o = h.options();
    o.rotation.rotate_interval = std::chrono::milliseconds(200);
    TestWriter w(h.executor(), o);
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    REQUIRE(files_ending(h.dir.path(), ".jsonl.open").size() == 1);
    CHECK(files_ending(h.dir.path(), ".jsonl").empty());

    // No record arrives: the drain's timer still rotates the file.
    REQUIRE(wait_until([&] { return w.stats().files_closed == 1; }));
    REQUIRE(wait_until([&] { return files_ending(h.dir.path(), ".jsonl").size() == 1; }));
    CHECK(files_ending(h.dir.path(), ".open").empty());
    CHECK(read_lines(files_ending(h.dir.path(), ".jsonl")[0]).size() == 1);

    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    flush(w);
    const auto open = files_ending(h.dir.path(), ".jsonl.open");
    REQUIRE(open.size() == 1);
    CHECK(open[0].filename().string().find("-000001.jsonl.open") != std::string::npos);
    const auto report = close(w);
    CHECK(report.stats.written == 2);
    CHECK(files_ending(h.dir.path(), ".jsonl").size() == 2);
    CHECK(files_ending(h.dir.path(), ".open").empty());
}
