// Files for shippers: rotation of the default layout's file by size
// and by age, by rename (never copy-truncate), with the open suffix so a loader globbing
// *.jsonl never reads a file still being written; reopen()/async_reopen() for external
// rotation tools; exact accounting across rotations; the {"seq","writer"} envelope whose gaps
// equal the drops the writer counted after accepting, and which makes every file's first line
// unique. Faults: a rename refused (through the FileIo seam), a writer destroyed unclosed.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;
namespace fs = std::filesystem;

namespace {

// The directory's files whose name ends with `suffix`, sorted by name.
std::vector<fs::path> files_ending(const fs::path& dir, std::string_view suffix)
{
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::int64_t member_int(std::string_view line, const char* key)
{
    simdjson::dom::element doc;
    REQUIRE(json_parser().parse(line.data(), line.size()).get(doc) == simdjson::SUCCESS);
    std::int64_t v = -1;
    if (doc[key].get_int64().get(v) != simdjson::SUCCESS) {
        std::uint64_t u = 0;
        REQUIRE(doc[key].get_uint64().get(u) == simdjson::SUCCESS);
        v = static_cast<std::int64_t>(u);
    }
    return v;
}

std::string member_string(std::string_view line, const char* key)
{
    simdjson::dom::element doc;
    REQUIRE(json_parser().parse(line.data(), line.size()).get(doc) == simdjson::SUCCESS);
    std::string_view v;
    REQUIRE(doc[key].get_string().get(v) == simdjson::SUCCESS);
    return std::string(v);
}

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

// Serializes its record as it is: a number, an empty object, an object.
class ShapeEncoder final : public jsonlw::RecordEncoder<int> {
public:
    void serialize(const int& r, jsonlw::JsonLine& line) override
    {
        if (r < 0) line.value(r);  // not an object
        else if (r == 0) line.begin_object().end_object();
        else line.begin_object().field("id", r).end_object();
    }
};

}  // namespace

TEST_CASE("Rotating 50 times under load from two threads leaves every record in exactly one closed file, and a reader globbing *.jsonl meanwhile only ever sees complete files",
          "[integration][rotation]")
{
    Harness h;
    auto o = h.options();
    o.rotate_bytes = 4096;
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
    o.rotate_bytes = 100;
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
    o.rotate_interval = std::chrono::milliseconds(200);
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

TEST_CASE("async_reopen() with the open suffix completes once the file is renamed; records after it go to the next file",
          "[integration][rotation][reopen]")
{
    Harness h;
    auto o = h.options();
    o.open_suffix = ".open";  // numbered files and the suffix, without automatic rotation
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
          "[integration][rotation][faults]")
{
    Harness h;
    auto seam = std::make_shared<RenameFails>(EACCES);
    auto o = h.options();
    o.open_suffix = ".open";
    o.file_io = seam;
    TestWriter w(h.executor(), o);
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    seam->armed = true;
    std::promise<jsonlw::error_code> reopened;
    w.async_reopen([&](jsonlw::error_code ec) { reopened.set_value(ec); });
    CHECK(get_within(reopened.get_future()) == boost::system::errc::permission_denied);
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

TEST_CASE("async_reopen() reports the rename's error to its caller", "[integration][rotation][faults]")
{
    Harness h;
    auto seam = std::make_shared<RenameFails>(EXDEV);
    auto o = h.options();
    o.open_suffix = ".open";
    o.file_io = seam;
    TestWriter w(h.executor(), o);
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    seam->armed = true;
    std::promise<jsonlw::error_code> got;
    w.async_reopen([&](jsonlw::error_code ec) { got.set_value(ec); });
    const auto ec = get_within(got.get_future());
    CHECK(ec == boost::system::errc::cross_device_link);
    seam->armed = false;
}

TEST_CASE("A writer destroyed without async_close() still gives its file the final name",
          "[integration][rotation][lifetime]")
{
    Harness h;
    {
        auto o = h.options();
        o.rotate_bytes = 1 << 20;
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

TEST_CASE("The envelope numbers every record: max(seq)+1-count(*) equals the drops counted (evicted, malformed), and every file's first line is unique",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    o.rotate_bytes = 300;
    o.queue_capacity = 8;
    o.overflow = jsonlw::Overflow::drop_oldest;
    TestWriter w(h.executor(), o);
    // Before start(): 12 into a queue of 8 evicts the 4 oldest (seq 0-3).
    for (int i = 0; i < 12; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.start(w);
    flush(w);
    // Then records one at a time, every fifth malformed (15, 20, 25, 30, 35).
    for (int i = 12; i < 40; ++i) {
        auto r = rec(i);
        r.throw_malformed = i % 5 == 0;
        REQUIRE(w.submit(r) == SubmitResult::accepted);
        flush(w);
    }
    const auto report = close(w);
    INFO("stats: " << report.stats);
    CHECK(report.stats.dropped.oldest_evicted == 4);
    CHECK(report.stats.dropped.malformed == 5);
    CHECK(report.stats.dropped.seq_gaps() == 9);

    const auto files = files_ending(h.dir.path(), ".jsonl");
    REQUIRE(files.size() >= 3);
    std::set<std::string> first_lines;
    std::set<std::int64_t> seqs;
    std::size_t count = 0;
    for (const fs::path& p : files) {
        const auto lines = read_lines(p);
        REQUIRE(!lines.empty());
        first_lines.insert(lines.front());
        for (const auto& l : lines) {
            CHECK(l.rfind(R"({"seq":)", 0) == 0);  // the envelope comes first
            CHECK(member_string(l, "writer") == w.writer_id());
            const auto seq = member_int(l, "seq");
            // No refusal here: seq is the record's queue position (ids were submitted in
            // order from 0).
            CHECK(seq == json_id(l).value());
            seqs.insert(seq);
            ++count;
        }
    }
    CHECK(first_lines.size() == files.size());
    CHECK(seqs.size() == count);
    const auto max_seq = *seqs.rbegin();
    CHECK(static_cast<std::uint64_t>(max_seq + 1) - count == report.stats.dropped.seq_gaps());
    CHECK(count == report.stats.written);
    CHECK(*seqs.begin() == 4);  // 0-3 were evicted
}

TEST_CASE("Refusals of a full queue become seq gaps too: max(seq)+1-count(*) equals every drop the writer counted, queue_full included",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    o.queue_capacity = 4;  // Overflow::drop_newest (the default)
    TestWriter w(h.executor(), o);
    int accepted = 0;
    // Before start(): 4 accepted, 6 refused.
    for (int i = 0; i < 10; ++i) accepted += w.submit(rec(i)) == SubmitResult::accepted;
    REQUIRE(accepted == 4);
    h.start(w);
    flush(w);
    // Then one at a time (never refused), one malformed.
    for (int i = 10; i < 16; ++i) {
        auto r = rec(i);
        r.throw_malformed = i == 12;
        REQUIRE(w.submit(r) == SubmitResult::accepted);
        flush(w);
    }
    REQUIRE(w.submit(rec(16)) == SubmitResult::accepted);
    const auto report = close(w);
    REQUIRE(w.submit(rec(17)) == SubmitResult::closed);
    INFO("stats: " << w.stats());
    CHECK(w.stats().dropped.queue_full == 6);
    CHECK(w.stats().dropped.malformed == 1);
    CHECK(w.stats().dropped.closed == 1);
    CHECK(w.stats().dropped.seq_gaps() == 7);

    std::vector<std::int64_t> seqs;
    for (const auto& l : read_lines(w.file_path())) seqs.push_back(member_int(l, "seq"));
    REQUIRE(seqs.size() == report.stats.written);
    CHECK(std::is_sorted(seqs.begin(), seqs.end()));
    CHECK(std::adjacent_find(seqs.begin(), seqs.end()) == seqs.end());
    // Every submit before close() has a number: 17 of them, 10 lines, 7 gaps.
    CHECK(seqs.back() + 1 == 17);
    CHECK(static_cast<std::uint64_t>(seqs.back() + 1) - seqs.size() == w.stats().dropped.seq_gaps());
}

TEST_CASE("The writer id is <host>-<pid>-<generation> and differs between two writers of one process",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    TestWriter a(h.executor(), o);
    o.stem = "other";
    TestWriter b(h.executor(), o);
    a.start();
    b.start();
    h.loop.start();
    CHECK(a.writer_id() != b.writer_id());
    const std::regex id(R"(.+-(\d+)-(\d{16,}))");
    std::smatch m;
    REQUIRE(std::regex_match(a.writer_id(), m, id));
    CHECK(std::stol(m[1]) == ::getpid());
    REQUIRE(a.submit(rec(1)) == SubmitResult::accepted);
    close(a);
    close(b);
    const auto lines = read_lines(a.file_path());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == R"({"seq":0,"writer":")" + a.writer_id() + R"(","id":1,"text":"r1","value":0.0})");
}

TEST_CASE("Under the envelope a record that is not a JSON object is malformed, and an empty object gets the envelope alone",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    jsonlw::JsonlRecordWriter<int> w(h.executor(), o, std::make_shared<ShapeEncoder>());
    h.start(w);
    REQUIRE(w.submit(0) == SubmitResult::accepted);
    REQUIRE(w.submit(-1) == SubmitResult::accepted);
    REQUIRE(w.submit(7) == SubmitResult::accepted);
    const auto report = close(w);
    CHECK(report.stats.written == 2);
    CHECK(report.stats.dropped.malformed == 1);
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "must be a JSON object") == 1);
    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == R"({"seq":0,"writer":")" + w.writer_id() + R"("})");
    CHECK(lines[1] == R"({"seq":2,"writer":")" + w.writer_id() + R"(","id":7})");
}

TEST_CASE("The envelope also numbers the records of a per-key layout (serialize_batch over pointers)",
          "[integration][envelope]")
{
    Harness h;
    auto o = h.options();
    o.envelope = true;
    RoutedWriter w(h.executor(), o, RoutedWriter::by_key(h.dir.path()));
    for (int i = 0; i < 6; ++i) {
        auto r = rec(i);
        r.key = i % 2 ? "odd" : "even";
        REQUIRE(w.submit(r) == SubmitResult::accepted);
    }
    h.start(w);
    close(w);
    for (const char* key : {"even", "odd"}) {
        for (const auto& l : read_lines(h.dir / key / "part.jsonl"))
            CHECK(member_int(l, "seq") == json_id(l).value());
    }
}

TEST_CASE("start() renames the .open files a crashed process of this stem and host left, and leaves those of live processes and other hosts alone",
          "[integration][rotation][crash]")
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
    o.rotate_bytes = 1 << 20;
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
