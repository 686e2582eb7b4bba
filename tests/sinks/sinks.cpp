// Scenarios: a writer's lines go to its LineSink — in memory, teed, partitioned by key, or a
// sink of the test's own — and the writer counts exactly what the sink reports.
#include "common.hpp"

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>
#include <jsonlw/sinks/tee_sink.hpp>

#include <catch2/catch.hpp>

#include <functional>

using namespace jsonlw;
using namespace jsonlw_test;

namespace {

// A Harness and a TestWriter whose destination is `sink` (other options: the harness's, then
// `tweak`) and whose encoder is `encoder`.
struct SinkedWriter : Harness {
    std::unique_ptr<TestWriter> w;

    explicit SinkedWriter(std::shared_ptr<LineSink> sink,
                          const std::function<void(WriterOptions&)>& tweak = {},
                          std::shared_ptr<TestEncoder> encoder = std::make_shared<TestEncoder>())
    {
        WriterOptions o = options();
        o.sink = std::move(sink);
        if (tweak) tweak(o);
        w = std::make_unique<TestWriter>(executor(), o, std::move(encoder));
    }
    // Submits records 0..n-1, all in one batch (the drain starts after they are queued).
    void write(int n)
    {
        for (int i = 0; i < n; ++i) REQUIRE(w->submit(rec(i)) == SubmitResult::accepted);
        start(*w);
        flush(*w);
    }
};

std::string expected_line(int i)
{
    return "{\"id\":" + std::to_string(i) + ",\"text\":\"r" + std::to_string(i) + "\",\"value\":0.0}";
}

// A sink that claims more records than it was given.
struct OverclaimingSink final : LineSink {
    AppendResult append(std::string_view, const Lines& lines) noexcept override
    {
        AppendResult r;
        r.records_written = lines.records + 5;
        r.landed = lines.bytes.size();
        return r;
    }
};

// A layout by key through the writer's sink: records with an even id under "even/…".
class KeyedEncoder final : public TestEncoder {
public:
    void write_batch(std::span<const Rec> batch, BatchOutput<Rec>& out) override
    {
        std::vector<const Rec*> even, odd;
        for (const Rec& r : batch) (r.id % 2 == 0 ? even : odd).push_back(&r);
        out.write_lines("even/part.jsonl", out.serialize_batch(std::span<const Rec* const>(even)));
        out.write_lines("odd/part.jsonl", out.serialize_batch(std::span<const Rec* const>(odd)));
    }
};

}  // namespace

TEST_CASE("A writer given a MemorySink writes every line there and no file in its directory")
{
    auto mem = std::make_shared<MemorySink>();
    SinkedWriter s(mem);
    s.write(5);
    const auto lines = mem->lines();
    REQUIRE(lines.size() == 5);
    std::uint64_t bytes = 0;
    for (int i = 0; i < 5; ++i) {
        CHECK(lines[i].text == expected_line(i));
        CHECK(lines[i].key.empty());
        bytes += lines[i].text.size() + 1;
    }
    const WriterStats st = s.w->stats();
    CHECK(st.written == 5);
    CHECK(st.bytes == bytes);
    CHECK(st.batches == 1);
    CHECK(files_in(s.dir.path()).empty());
    CHECK(s.w->file_path().empty());
    close(*s.w);
    CHECK(mem->closed());
}

TEST_CASE("A sink that fails part of a group: the writer counts exactly what it reports and logs once")
{
    auto mem = std::make_shared<MemorySink>();
    mem->fail_next(std::make_error_code(std::errc::no_space_on_device), 1, /*landed=*/2,
                   /*torn=*/true);
    SinkedWriter s(mem);
    s.write(5);
    const WriterStats st = s.w->stats();
    CHECK(st.written == 2);
    CHECK(st.unknown == 1);
    CHECK(st.dropped.write_error == 2);
    CHECK(st.pending == 0);
    CHECK(mem->lines().size() == 2);
    CHECK(s.logs.count(LogLevel::warning, "Failed to write test JSONL: No space left on device") == 1);
    // The next batch lands whole.
    REQUIRE(s.w->submit(rec(5)) == SubmitResult::accepted);
    flush(*s.w);
    CHECK(s.w->stats().written == 3);
    CHECK(mem->lines().back().text == expected_line(5));
}

TEST_CASE("A sink that claims more records than it was given is counted once per record")
{
    SinkedWriter s(std::make_shared<OverclaimingSink>());
    s.write(4);
    const WriterStats st = s.w->stats();
    CHECK(st.written == 4);
    CHECK(st.unknown == 0);
    CHECK(st.dropped.total() == 0);
    CHECK(st.pending == 0);
}

TEST_CASE("A tee counts each branch on its own; the writer counts the first")
{
    auto first = std::make_shared<MemorySink>();
    auto second = std::make_shared<MemorySink>();
    second->fail_next(std::make_error_code(std::errc::io_error), 1, /*landed=*/1);
    auto tee = std::make_shared<TeeSink>(std::vector<std::shared_ptr<LineSink>>{first, second});
    SinkedWriter s(tee);
    s.write(3);
    CHECK(s.w->stats().written == 3);
    CHECK(s.w->stats().dropped.write_error == 0);
    const auto a = tee->branch(0), b = tee->branch(1);
    CHECK(a.written == 3);
    CHECK(a.failed == 0);
    CHECK(b.written == 1);
    CHECK(b.failed == 2);
    CHECK(b.unknown == 0);
    CHECK(b.bytes == expected_line(0).size() + 1);
    CHECK(first->lines().size() == 3);
    CHECK(second->lines().size() == 1);
    close(*s.w);
    CHECK(first->closed());
    CHECK(second->closed());
}

TEST_CASE("A tee of a file and memory: the file holds the same bytes as memory")
{
    auto file = std::make_shared<FileSink>();
    auto mem = std::make_shared<MemorySink>();
    SinkedWriter s(std::make_shared<TeeSink>(std::vector<std::shared_ptr<LineSink>>{file, mem}));
    s.write(7);
    close(*s.w);
    REQUIRE(file->files().size() == 1);
    CHECK(read_file(file->files().front()) == mem->text());
    CHECK(s.w->file_path() == file->files().front());  // the tee's first branch, its record of truth
    CHECK(s.w->files() == file->files());
}

TEST_CASE("A PartitionedFileSink puts each key's lines in its own file under the directory")
{
    SinkedWriter s(std::make_shared<PartitionedFileSink>(), {}, std::make_shared<KeyedEncoder>());
    s.write(6);
    const auto dir = s.dir.path();
    CHECK(s.w->stats().written == 6);
    CHECK(read_lines(dir / "even" / "part.jsonl") ==
          std::vector<std::string>{expected_line(0), expected_line(2), expected_line(4)});
    CHECK(read_lines(dir / "odd" / "part.jsonl") ==
          std::vector<std::string>{expected_line(1), expected_line(3), expected_line(5)});
    CHECK(s.w->files() == std::vector<std::filesystem::path>{dir / "even" / "part.jsonl",
                                                            dir / "odd" / "part.jsonl"});
}

TEST_CASE("A key whose folder cannot be made fails that group alone, counted as write_error")
{
    SinkedWriter s(std::make_shared<PartitionedFileSink>(), {}, std::make_shared<KeyedEncoder>());
    write_file(s.dir.path() / "even", "a regular file where a folder should be\n");
    s.write(6);
    CHECK(s.w->stats().written == 3);
    CHECK(s.w->stats().dropped.write_error == 3);
    CHECK(s.logs.count(LogLevel::warning, (s.dir.path() / "even" / "part.jsonl").native()) == 1);
    CHECK(count_lines(s.dir.path() / "odd" / "part.jsonl") == 3);
}

TEST_CASE("reopen, fsync and close reach the sink")
{
    auto mem = std::make_shared<MemorySink>();
    SinkedWriter s(mem, [](WriterOptions& o) { o.durability = Durability::fsync_interval; });
    s.write(2);
    REQUIRE_NOTHROW(get_within(s.w->async_reopen(boost::asio::use_future)));
    CHECK(mem->reopens() == 1);
    CHECK(mem->syncs() == 0);
    const CloseReport r = close(*s.w);
    CHECK(r.drained);
    CHECK(mem->syncs() >= 1);  // the final fsync of unsynced data (and maybe the interval's)
    CHECK(mem->closed());
}

TEST_CASE("A FileSink with its own options rotates as the writer's options would")
{
    FileSinkOptions fo;
    fo.rotation.rotate_bytes = 60;
    auto file = std::make_shared<FileSink>(fo);
    SinkedWriter s(file);
    s.write(6);  // lines of 33 bytes: two do not fit in 60, so one per file
    close(*s.w);
    const auto files = file->files();
    REQUIRE(files.size() == 6);
    for (std::size_t i = 0; i < files.size(); ++i)
        CHECK(read_file(files[i]) == expected_line(static_cast<int>(i)) + "\n");
    CHECK(s.w->file_path() == files.front());
    CHECK(s.w->stats().files_closed == 5);
}
