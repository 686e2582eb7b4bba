// Retention (docs/sinks.md, docs/shipping.md): keeps a sink's closed files within a count, a
// byte total and an age, oldest first, never touching the open file or anyone else's files,
// with each deletion counted (files, bytes, records). FileSink with size and time rotation,
// PartitionedFileSink with hour folders; the sinks are driven directly (sink_rig.hpp).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include "sink_rig.hpp"
#include "wait.hpp"

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <thread>

using namespace jsonlw;
using namespace jsonlw_test;
namespace fs = std::filesystem;

namespace {

// The .jsonl files under `dir` (recursively), sorted.
std::vector<fs::path> jsonl_files(const fs::path& dir)
{
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

// Yields until the sink asks for a tick (its next_tick() has come), within a generous bound.
bool tick_due(const LineSink& sink)
{
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < give_up) {
        const auto t = sink.next_tick();
        if (t && std::chrono::steady_clock::now() >= *t) return true;
        std::this_thread::yield();
    }
    return false;
}

}  // namespace

TEST_CASE("retain_files keeps the newest N closed files of a size-rotated FileSink and never the open one",
          "[sinks][retention]")
{
    SinkRig rig;
    // One 9-byte line per file (a second does not fit in 10 bytes).
    FileSink sink(FileSinkOptions{.rotation = {.rotate_bytes = 10, .retention = {.retain_files = 2}}});
    rig.start(sink);
    for (int i = 0; i < 6; ++i) CHECK(rig.put(sink, {}, i, 1).records_written == 1);
    // Five closed (0..4), one open (5): closed 0, 1, 2 are deleted.
    auto on_disk = jsonl_files(rig.dir.path());
    REQUIRE(on_disk.size() == 3);
    CHECK(read_file(on_disk[0]) == numbered(3, 1));
    CHECK(read_file(on_disk[1]) == numbered(4, 1));
    CHECK(on_disk[2].extension() == ".open");
    CHECK(read_file(on_disk[2]) == numbered(5, 1));
    FileSinkCounters c = sink.counters();
    CHECK(c.files_deleted == 3);
    CHECK(c.bytes_deleted == 27);
    CHECK(c.records_deleted == 3);
    CHECK(sink.files().size() == 3);  // deleted files leave the list

    sink.close(false);  // the open file is sealed: the oldest closed one goes
    on_disk = jsonl_files(rig.dir.path());
    REQUIRE(on_disk.size() == 2);
    CHECK(read_file(on_disk[0]) == numbered(4, 1));
    CHECK(read_file(on_disk[1]) == numbered(5, 1));
    c = sink.counters();
    CHECK(c.files_deleted == 4);
    CHECK(c.records_deleted == 4);
    CHECK(rig.logs.count(LogLevel::info, "retain_files = 2 files") == 1);  // once per rule
}

TEST_CASE("retain_bytes keeps at most B bytes of closed files, oldest deleted first, and leaves files it did not write",
          "[sinks][retention]")
{
    SinkRig rig;
    write_file(rig.dir / "someone-else.jsonl", numbered(100, 10));
    // Files of four lines (ids 0-9: 9 bytes a line, 10-19: 10 bytes); keep at most 80
    // bytes of them: the last two (40 + 40).
    FileSink sink(FileSinkOptions{.rotation = {.rotate_bytes = 40, .retention = {.retain_bytes = 80}}});
    rig.start(sink);
    for (int i = 0; i < 5; ++i) CHECK(rig.put(sink, {}, 4 * i, 4).records_written == 4);
    sink.close(false);
    const FileSinkCounters c = sink.counters();
    CHECK(c.files_deleted == 3);
    CHECK(c.bytes_deleted == 36 + 36 + 38);
    CHECK(c.records_deleted == 12);
    auto on_disk = jsonl_files(rig.dir.path());
    REQUIRE(on_disk.size() == 3);
    CHECK(read_file(on_disk[0]) == numbered(100, 10));  // not ours: untouched
    CHECK(read_file(on_disk[1]) == numbered(12, 4));
    CHECK(read_file(on_disk[2]) == numbered(16, 4));
    CHECK(rig.logs.count(LogLevel::info, "retain_bytes = 80 bytes") == 1);
}

TEST_CASE("retain_age deletes closed files once they have been closed that long, at the sink's tick, with time rotation",
          "[sinks][retention]")
{
    SinkRig rig;
    FileSink sink(FileSinkOptions{.rotation = {.rotate_interval = std::chrono::milliseconds(1),
                                               .retention = {.retain_age = std::chrono::milliseconds(1)}}});
    rig.start(sink);
    CHECK(rig.put(sink, {}, 0, 3).records_written == 3);
    REQUIRE(tick_due(sink));  // the file's rotation
    sink.tick();
    CHECK(sink.files_closed() == 1);
    CHECK(jsonl_files(rig.dir.path()).size() == 1);  // closed, not yet expired
    REQUIRE(tick_due(sink));  // its expiry
    sink.tick();
    CHECK(jsonl_files(rig.dir.path()).empty());
    CHECK(rig.put(sink, {}, 3, 2).records_written == 2);  // a new file, untouched
    const auto on_disk = jsonl_files(rig.dir.path());
    REQUIRE(on_disk.size() == 1);
    CHECK(read_file(on_disk[0]) == numbered(3, 2));
    const FileSinkCounters c = sink.counters();
    CHECK(c.files_deleted == 1);
    CHECK(c.records_deleted == 3);
    CHECK(c.bytes_deleted == 27);
}

TEST_CASE("Hour folders: a file is sealed once a later hour is written, retention deletes the oldest and its emptied folder, and a late record keeps a sealed file",
          "[sinks][retention]")
{
    SinkRig rig;
    PartitionedFileSink sink(PartitionedFileSinkOptions{.retention = {.retain_files = 1}});
    rig.start(sink);
    const auto key = [](int h) { return "2026-01-01T0" + std::to_string(h) + "/raw-42.jsonl"; };
    CHECK(rig.put(sink, key(0), 0, 2).records_written == 2);
    CHECK(rig.put(sink, key(1), 2, 3).records_written == 3);  // hour 0 sealed: 1 closed file
    CHECK(fs::exists(rig.dir / key(0)));
    CHECK(rig.put(sink, key(2), 5, 4).records_written == 4);  // hour 1 sealed too: hour 0 goes
    CHECK_FALSE(fs::exists(rig.dir / "2026-01-01T00"));      // with its emptied folder
    FileSinkCounters c = sink.counters();
    CHECK(c.files_deleted == 1);
    CHECK(c.records_deleted == 2);
    CHECK(c.bytes_deleted == 18);

    // A late record for hour 1: its file is written again, so it is no candidate while hour
    // 2 is sealed (two closed files otherwise: hour 1 would go).
    CHECK(rig.put(sink, key(1), 10, 1).records_written == 1);
    CHECK(sink.counters().files_deleted == 1);
    CHECK(read_file(rig.dir / key(1)) == numbered(2, 3) + numbered(10, 1));
    CHECK(read_file(rig.dir / key(2)) == numbered(5, 4));

    sink.close(false);  // hour 1 sealed again, now the newest: hour 2 goes
    CHECK(jsonl_files(rig.dir.path()) == std::vector<fs::path>{rig.dir / key(1)});
    c = sink.counters();
    CHECK(c.files_deleted == 2);
    CHECK(c.records_deleted == 6);
    CHECK(c.bytes_deleted == 54);
    CHECK(sink.files() == std::vector<fs::path>{rig.dir / key(1)});
}

TEST_CASE("Without a retention rule nothing is deleted, and the max_open constructor still works",
          "[sinks][retention]")
{
    SinkRig rig;
    PartitionedFileSink sink(2);
    rig.start(sink);
    for (int h = 0; h < 5; ++h)
        CHECK(rig.put(sink, "2026-01-01T0" + std::to_string(h) + "/x.jsonl", h, 1).records_written == 1);
    sink.close(false);
    CHECK(jsonl_files(rig.dir.path()).size() == 5);
    CHECK(sink.counters().files_deleted == 0);
    CHECK(sink.options().max_open == 2);
}

TEST_CASE("A sealed file that someone else removed is counted as removed when the sink closes",
          "[sinks][retention]")
{
    SinkRig rig;
    FileSink sink(FileSinkOptions{.rotation = {.rotate_bytes = 10}});
    rig.start(sink);
    for (int i = 0; i < 3; ++i) CHECK(rig.put(sink, {}, i, 1).records_written == 1);
    REQUIRE(fs::remove(sink.files().front()));
    sink.close(false);
    CHECK(sink.counters().records_removed == 1);
    CHECK(sink.counters().files_deleted == 0);
}
