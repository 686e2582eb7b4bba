// The disk under a file sink (docs/reliability.md): a file sink notices at the next batch that its file
// was removed or moved (and appends again a batch that landed in a removed file), and a
// failed append leaves no partial line behind. The sinks are driven directly, as the writer's
// I/O thread drives them (sink_rig.hpp); faults are real (rm, rename) or the FileIo seam's
// (ENOSPC part-way).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include "sink_rig.hpp"

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>

using namespace jsonlw;
using namespace jsonlw_test;
namespace fs = std::filesystem;

TEST_CASE("A file removed between batches is noticed at the next one, which goes to a new file at its path",
          "[sinks][faults]")
{
    SinkRig rig;
    FileSink sink;
    rig.start(sink);
    CHECK(rig.put(sink, {}, 0, 3).records_written == 3);
    REQUIRE(fs::remove(sink.file_path()));

    const AppendResult r = rig.put(sink, {}, 3, 2);
    CHECK(r.records_written == 2);
    CHECK(read_file(sink.file_path()) == numbered(3, 2));
    const FileSinkCounters c = sink.counters();
    CHECK(c.reopened_removed == 1);
    CHECK(c.records_removed == 3);  // counted written, then removed with the file
    CHECK(c.records_reappended == 0);
    CHECK(c.reopened_moved == 0);
}

TEST_CASE("A batch that lands in a file whose hour folder is removed while it is written is appended again to a new file in a recreated folder",
          "[sinks][faults]")
{
    SinkRig rig;
    PartitionedFileSink sink;
    rig.start(sink);
    const std::string key = "2026-01-01T00/raw-42.jsonl";
    CHECK(rig.put(sink, key, 0, 4).records_written == 4);
    // Inside the next writev, before its bytes go in: rm -rf of the hour folder.
    bool removed = false;
    rig.seam->on_writev([&] {
        if (removed) return;
        removed = true;
        fs::remove_all(rig.dir / "2026-01-01T00");
    });
    const AppendResult r = rig.put(sink, key, 4, 3);
    CHECK(removed);
    CHECK(r.ok());
    CHECK(r.records_written == 3);
    CHECK(r.offset == 0);  // in the new file
    CHECK(read_file(rig.dir / key) == numbered(4, 3));
    CHECK(rig.seam->writev_count() == 3);  // 4 lines; 3 into the unlinked file; 3 again
    CHECK(rig.put(sink, key, 7, 1).records_written == 1);
    CHECK(read_file(rig.dir / key) == numbered(4, 4));

    const FileSinkCounters c = sink.counters();
    CHECK(c.reopened_removed == 1);
    CHECK(c.records_reappended == 3);
    CHECK(c.records_removed == 4);
    CHECK(rig.logs.count(LogLevel::warning, "was removed") == 1);
}

TEST_CASE("A file moved away keeps what it holds, the batch after the move opens a new file at the path, and moves are logged once",
          "[sinks][faults]")
{
    SinkRig rig;
    PartitionedFileSink sink;
    rig.start(sink);
    const std::string key = "kind/part.jsonl";
    CHECK(rig.put(sink, key, 0, 3).records_written == 3);
    fs::rename(rig.dir / key, rig.dir / "moved-1.jsonl");
    // This batch still goes into the moved file (its descriptor); the check after it sees
    // that the path names no file any more, while the descriptor's file is still linked.
    CHECK(rig.put(sink, key, 3, 2).records_written == 2);
    CHECK_FALSE(fs::exists(rig.dir / key));
    CHECK(rig.put(sink, key, 5, 4).records_written == 4);
    // A second move, this time replaced by another file at the path (logrotate's create).
    fs::rename(rig.dir / key, rig.dir / "moved-2.jsonl");
    write_file(rig.dir / key, "");
    CHECK(rig.put(sink, key, 9, 1).records_written == 1);
    CHECK(rig.put(sink, key, 10, 2).records_written == 2);

    CHECK(read_file(rig.dir / "moved-1.jsonl") == numbered(0, 5));
    CHECK(read_file(rig.dir / "moved-2.jsonl") == numbered(5, 5));
    CHECK(read_file(rig.dir / key) == numbered(10, 2));
    const FileSinkCounters c = sink.counters();
    CHECK(c.reopened_moved == 2);
    CHECK(c.records_moved == 10);
    CHECK(c.reopened_removed == 0);
    CHECK(c.records_reappended == 0);
    CHECK(rig.logs.count(LogLevel::warning, "was moved away") == 1);
}

TEST_CASE("A FileSink that rotates notices a removed open file too, and its sealed files are where rotation put them",
          "[sinks][faults]")
{
    SinkRig rig;
    FileSink sink(FileSinkOptions{.rotation = {.rotate_bytes = 40}});  // four 9-byte lines per file
    rig.start(sink);
    CHECK(rig.put(sink, {}, 0, 4).records_written == 4);  // file 0
    CHECK(rig.put(sink, {}, 4, 2).records_written == 2);  // file 1 (.open)
    const auto files = sink.files();
    REQUIRE(files.size() == 2);
    REQUIRE(fs::remove(files[1]));
    CHECK(rig.put(sink, {}, 6, 2).records_written == 2);  // file 1 again, anew
    sink.close(false);
    const auto after = sink.files();
    REQUIRE(after.size() == 2);
    CHECK(read_file(after[0]) == numbered(0, 4));
    CHECK(read_file(after[1]) == numbered(6, 2));
    CHECK(sink.counters().reopened_removed == 1);
    CHECK(sink.counters().records_removed == 2);
}

TEST_CASE("A disk that fills up in the middle of a batch leaves the file as it was before the batch, and appending resumes on a line boundary",
          "[sinks][faults][torn]")
{
    SinkRig rig;
    FileSink sink;
    rig.start(sink);
    CHECK(rig.put(sink, {}, 0, 2).records_written == 2);
    rig.seam->short_write_once(ENOSPC);  // half of the batch lands, then ENOSPC
    const AppendResult r = rig.put(sink, {}, 2, 3);
    CHECK(r.ec.value() == ENOSPC);
    CHECK(r.records_written == 0);
    CHECK(r.records_unknown == 0);
    CHECK(r.records_failed == 3);  // cut off again: surely not on disk
    CHECK(r.landed == 0);
    CHECK(read_file(sink.file_path()) == numbered(0, 2));
    CHECK(sink.counters().appends_rolled_back == 1);

    CHECK(rig.put(sink, {}, 5, 2).records_written == 2);
    CHECK(read_file(sink.file_path()) == numbered(0, 2) + numbered(5, 2));
}

TEST_CASE("Under fsync_batch a batch cut off by ENOSPC is rolled back too, and one whose fsync fails stays (unknown)",
          "[sinks][faults][torn]")
{
    SinkRig rig(Durability::fsync_batch);
    PartitionedFileSink sink;
    rig.start(sink);
    const std::string key = "d/x.jsonl";
    CHECK(rig.put(sink, key, 0, 1).records_written == 1);
    rig.seam->short_write_once(ENOSPC);
    AppendResult r = rig.put(sink, key, 1, 4);
    CHECK(r.records_failed == 4);
    CHECK(r.records_unknown == 0);
    CHECK(read_file(rig.dir / key) == numbered(0, 1));

    rig.seam->fail_fsync(EIO, 1);
    r = rig.put(sink, key, 5, 2);
    CHECK(r.records_unknown == 2);  // in the file, durability not known
    CHECK(r.records_failed == 0);
    CHECK(read_file(rig.dir / key) == numbered(0, 1) + numbered(5, 2));
    CHECK(rig.put(sink, key, 7, 1).records_written == 1);
    CHECK(read_file(rig.dir / key) == numbered(0, 1) + numbered(5, 3));
    CHECK(sink.counters().appends_rolled_back == 1);
}

TEST_CASE("A failed append after a torn tail a crash left is cut back to that tail, which the next append still isolates",
          "[sinks][faults][torn]")
{
    SinkRig rig;
    PartitionedFileSink sink;
    rig.start(sink);
    const std::string key = "x.jsonl";
    const std::string old = numbered(0, 1) + "{\"id\":";  // a crash's torn last line
    write_file(rig.dir / key, old);
    rig.seam->short_write_once(EIO);
    const AppendResult r = rig.put(sink, key, 1, 4);
    CHECK(r.records_failed == 4);
    CHECK(read_file(rig.dir / key) == old);
    const AppendResult next = rig.put(sink, key, 5, 1);
    CHECK(next.records_written == 1);
    CHECK(next.isolated_fragment);
    CHECK(read_file(rig.dir / key) == old + "\n" + numbered(5, 1));
}

TEST_CASE("ENOSPC from a file that is not a regular one (a link to /dev/full) cannot be cut back and counts as before",
          "[sinks][faults]")
{
    SinkRig rig;
    PartitionedFileSink sink;
    rig.start(sink);
    fs::create_symlink("/dev/full", rig.dir / "full.jsonl");
    const AppendResult r = rig.put(sink, "full.jsonl", 0, 3);
    CHECK(r.ec.value() == ENOSPC);
    CHECK(r.records_failed == 3);
    CHECK(sink.counters().appends_rolled_back == 0);
    CHECK(sink.counters().reopened_removed == 0);  // the link still names /dev/full
}
