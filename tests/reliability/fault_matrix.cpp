// The fault matrix: each fault — ENOSPC (a file linked to /dev/full), ENOTDIR, EIO, a short
// write (alone, and cut off by ENOSPC), EINTR, a failed fsync, the directory removed (or
// replaced by a file) while running, an append stuck in the kernel — is injected between
// records that go through, then cleared. For each: the accounting is checked exactly (every
// record written, write_error or unknown, as the fault dictates), records after the fault are
// written again, the file holds valid lines only (a torn line only where bytes of a failed
// append landed, and never glued to the next record), and a timer on the event loop keeps
// firing on time throughout.
// (tests/integration/writer_faults.cpp covers each fault's logging and single-fault shape.)
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"
#include "heartbeat.hpp"

#include <cerrno>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;
namespace fs = std::filesystem;

namespace {

// A generous bound: a loop that blocked on a fault (a stuck append, an fsync) would miss
// its 5 ms ticks by the length of the fault, here seconds.
constexpr auto kLateBound = std::chrono::milliseconds(1500);
constexpr int kBefore = 10, kDuring = 6, kAfter = 10;

enum class Outcome { written, write_error, unknown };

struct Fault {
    const char* name;
    // Where records go, relative to the writer's directory.
    fs::path target = "data/out.jsonl";
    jsonlw::Durability durability = jsonlw::Durability::none;
    std::function<void(const fs::path& dir, SeamFileIo&)> inject;
    std::function<void(const fs::path& dir, SeamFileIo&)> clear;
    // What becomes of each record submitted while the fault is active (one batch each).
    std::vector<Outcome> during;
    // Records written before the fault are still in the file afterwards (false when the
    // fault replaced the file or its directory).
    bool keeps_earlier = true;
    // Lines of the final file that may be torn (not JSON): where bytes of a failed append
    // landed.
    int torn = 0;
};

std::vector<Outcome> all(Outcome o) { return std::vector<Outcome>(kDuring, o); }

std::vector<Fault> faults()
{
    std::vector<Fault> f;
    f.push_back({.name = "ENOSPC: the file replaced by a link to /dev/full",
                 .inject = [](const fs::path& d, SeamFileIo&) {
                     fs::remove(d / "data/out.jsonl");
                     fs::create_symlink("/dev/full", d / "data/out.jsonl");
                 },
                 .clear = [](const fs::path& d, SeamFileIo&) { fs::remove(d / "data/out.jsonl"); },
                 .during = all(Outcome::write_error),
                 .keeps_earlier = false});
    f.push_back({.name = "ENOTDIR: the directory replaced by a regular file",
                 .inject = [](const fs::path& d, SeamFileIo&) {
                     fs::remove_all(d / "data");
                     write_file(d / "data", "a file where a directory was\n");
                 },
                 .clear = [](const fs::path& d, SeamFileIo&) { fs::remove(d / "data"); },
                 .during = all(Outcome::write_error),
                 .keeps_earlier = false});
    f.push_back({.name = "the directory removed while running",
                 .inject = [](const fs::path& d, SeamFileIo&) { fs::remove_all(d / "data"); },
                 .clear = [](const fs::path&, SeamFileIo&) {},
                 // Recreated by the next append: nothing is lost after the removal.
                 .during = all(Outcome::written),
                 .keeps_earlier = false});
    f.push_back({.name = "EIO on every write",
                 .inject = [](const fs::path&, SeamFileIo& s) { s.fail_writev(EIO, -1); },
                 .clear = [](const fs::path&, SeamFileIo& s) { s.fail_writev(0, 0); },
                 .during = all(Outcome::write_error)});
    f.push_back({.name = "ENOSPC on every write (injected)",
                 .inject = [](const fs::path&, SeamFileIo& s) { s.fail_writev(ENOSPC, -1); },
                 .clear = [](const fs::path&, SeamFileIo& s) { s.fail_writev(0, 0); },
                 .during = all(Outcome::write_error)});
    f.push_back({.name = "a short write, completed by the retry",
                 .inject = [](const fs::path&, SeamFileIo& s) { s.short_write_once(); },
                 .clear = [](const fs::path&, SeamFileIo&) {},
                 .during = all(Outcome::written)});
    // The sink cuts the file back to its length before the append: no torn line stays, and
    // the record whose bytes partly landed is surely not there (write_error).
    f.push_back({.name = "a short write cut off by ENOSPC (cut back, no torn line)",
                 .inject = [](const fs::path&, SeamFileIo& s) { s.short_write_once(ENOSPC); },
                 .clear = [](const fs::path&, SeamFileIo&) {},
                 .during = [] {
                     auto v = all(Outcome::written);
                     v[0] = Outcome::write_error;
                     return v;
                 }(),
                 .torn = 0});
    f.push_back({.name = "EINTR, retried",
                 .inject = [](const fs::path&, SeamFileIo& s) { s.eintr_once(); },
                 .clear = [](const fs::path&, SeamFileIo&) {},
                 .during = all(Outcome::written)});
    f.push_back({.name = "EIO from fsync under fsync_batch",
                 .durability = jsonlw::Durability::fsync_batch,
                 .inject = [](const fs::path&, SeamFileIo& s) { s.fail_fsync(EIO, -1); },
                 .clear = [](const fs::path&, SeamFileIo& s) { s.fail_fsync(0, 0); },
                 // The bytes are in the file, their durability is not known: unknown.
                 .during = all(Outcome::unknown)});
    return f;
}

std::string describe(const jsonlw::WriterStats& s)
{
    std::ostringstream o;
    o << s;
    return o.str();
}

}  // namespace

TEST_CASE("under every fault of the matrix the accounting is exact, records after the fault are written again, and the event loop keeps its timer on time",
          "[reliability][faults]")
{
    static int injected = 0;        // over the runs Catch makes, one per section
    static long lines_checked = 0;
    for (const Fault& fault : faults()) {
        DYNAMIC_SECTION(fault.name)
        {
            Harness h(with_seam);
            auto o = h.options();
            o.durability = fault.durability;
            RoutedWriter w(h.executor(), o, RoutedWriter::to(h.dir / fault.target));
            ReleaseOnExit release(h.seam);
            h.start(w);
            Heartbeat beat(h.executor(), std::chrono::milliseconds(5));
            INFO(h.logs.dump());

            int id = 0;
            for (; id < kBefore; ++id) REQUIRE(w.submit(rec(id)) == SubmitResult::accepted);
            flush(w);
            REQUIRE(w.stats().written == kBefore);

            fault.inject(h.dir.path(), *h.seam);
            ++injected;
            std::uint64_t want_written = kBefore, want_error = 0, want_unknown = 0;
            std::set<std::int64_t> in_file;  // ids the file must hold at the end
            if (fault.keeps_earlier)
                for (int i = 0; i < kBefore; ++i) in_file.insert(i);
            for (Outcome outcome : fault.during) {
                // One record per batch: each outcome is exact.
                REQUIRE(w.submit(rec(id)) == SubmitResult::accepted);
                flush(w);
                switch (outcome) {
                case Outcome::written:
                    ++want_written;
                    in_file.insert(id);
                    break;
                case Outcome::write_error: ++want_error; break;
                case Outcome::unknown:
                    ++want_unknown;
                    if (fault.durability != jsonlw::Durability::none) in_file.insert(id);
                    break;
                }
                ++id;
                const auto s = w.stats();
                INFO("during " << fault.name << ": " << describe(s));
                CHECK(s.written == want_written);
                CHECK(s.dropped.write_error == want_error);
                CHECK(s.unknown == want_unknown);
                CHECK(s.pending == 0);
                CHECK(invariant_holds(s));
            }
            // The loop ticks while the fault is still there.
            CHECK(beat.wait_ticks(3));
            fault.clear(h.dir.path(), *h.seam);

            for (int i = 0; i < kAfter; ++i, ++id) {
                REQUIRE(w.submit(rec(id)) == SubmitResult::accepted);
                in_file.insert(id);
            }
            const auto report = close(w);
            beat.stop();
            const auto& s = report.stats;
            INFO("final: " << describe(s));
            CHECK(report.drained);
            CHECK(s.submitted == std::uint64_t(kBefore + kDuring + kAfter));
            CHECK(s.written == want_written + kAfter);
            CHECK(s.dropped.write_error == want_error);
            CHECK(s.unknown == want_unknown);
            CHECK(s.dropped.total() == want_error);
            CHECK(s.pending == 0);
            CHECK(invariant_holds(s));

            // The file: valid lines, each id once, exactly the ids expected; a torn line only
            // where the fault tore one, and on a line of its own.
            const auto lines = read_lines(h.dir / fault.target);
            std::set<std::int64_t> seen;
            int torn = 0;
            for (const auto& l : lines) {
                ++lines_checked;
                const auto line_id = json_id(l);
                if (!line_id) {
                    ++torn;
                    continue;
                }
                CHECK(seen.insert(*line_id).second);  // never duplicated
            }
            CHECK(torn == fault.torn);
            CHECK(seen == in_file);
            CHECK(read_file(h.dir / fault.target).back() == '\n');

            CHECK(beat.max_late() < kLateBound);
        }
    }
    std::printf("fault matrix: %d faults injected, %ld lines checked\n", injected, lines_checked);
}

TEST_CASE("an append stuck in the kernel does not stop the event loop: its timer keeps firing on time, and the records are written once it returns",
          "[reliability][faults]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.durability = jsonlw::Durability::fsync_batch;
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.start(w);
    Heartbeat beat(h.executor(), std::chrono::milliseconds(5));

    SECTION("a stuck write")
    {
        REQUIRE(h.stick_append(w, rec(0)));
    }
    SECTION("a stuck fsync")
    {
        h.seam->hold_fsync();
        REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
        REQUIRE(h.seam->wait_fsync_held());
    }
    // While the append is stuck: submits return at once, the loop ticks on time.
    for (int i = 1; i < 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    REQUIRE(beat.wait_ticks(20));
    CHECK(w.stats().written == 0);
    CHECK(w.stats().pending == 100);
    h.seam->release();
    const auto report = close(w);
    beat.stop();
    CHECK(report.drained);
    CHECK(report.stats.written == 100);
    CHECK(invariant_holds(report.stats));
    CHECK(count_lines(w.file_path()) == 100);
    CHECK(beat.max_late() < kLateBound);
}
