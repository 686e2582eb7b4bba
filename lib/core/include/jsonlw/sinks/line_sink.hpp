// LineSink: where a writer's lines go — a file, a folder of files, a broker, several of them.
// The writer's engine owns the queue, the batches, the I/O thread and the counting; its
// encoder turns records into lines; a sink only takes groups of complete lines and says how
// many of their records landed. See docs/sinks.md.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/durability.hpp>
#include <jsonlw/file_io.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/writer_stats.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace jsonlw {

// What a file sink tells SinkContext::on_file_event: a file of the writer was opened to be
// written (created, or written again after it was closed), closed, or is about to be deleted
// by retention (it still exists when the callback runs).
struct FileEvent {
    enum class Kind { opened, closed, deleted };
    Kind kind = Kind::opened;
    // The file's final name relative to SinkContext::directory ("<stem>-…-000001.jsonl",
    // "2026-12-02T15/raw-output-host-1.jsonl"), not the open-suffixed name it has meanwhile.
    std::string file;
    // closed, deleted: the records of this writer in it (closed: appended since it was opened).
    std::uint64_t records = 0;
    // opened: how many lines of the append() in progress went to earlier files before this
    // one opened (a FileSink that rotates in the middle of a group), else 0.
    std::size_t group_offset = 0;
};

// What the writer tells its sink at start(): the writer's settings a destination needs.
struct SinkContext {
    std::filesystem::path directory;  // the writer's directory (exists at start())
    std::string stem;                 // WriterOptions::stem
    std::string subject;              // the noun of log lines ("perf metrics")
    std::string host;                 // this machine's name
    pid_t pid = 0;
    Durability durability = Durability::none;
    std::shared_ptr<FileIo> file_io;  // the system-call seam (never null)
    mode_t file_mode = 0640;
    LogSink log;                      // empty: stderr
    // The writer's counters, for a sink that publishes them (a sidecar): callable from any
    // thread for as long as the sink is the writer's; after_batch() sees each batch counted.
    std::function<WriterStats()> writer_stats;
    // Told about the files a file sink (FileSink, PartitionedFileSink and their retention)
    // opens, closes and deletes, on the I/O thread (or the thread of close()); empty: nobody
    // listens. A decorator that listens (ChainSink) chains to the one it was given.
    std::function<void(const FileEvent&)> on_file_event;

    // Logs through `log` (or stderr); never throws.
    void write_log(LogLevel level, std::string_view message) const noexcept;
    // Calls on_file_event for `path` (under directory) when set; never throws.
    void file_event(FileEvent::Kind kind, const std::filesystem::path& path,
                    std::uint64_t records = 0, std::size_t group_offset = 0) const noexcept;
};

// A destination for groups of complete lines. The writer calls start() once from its own
// start(); append(), after_batch(), sync(), reopen(), tick() and close() from its I/O thread
// only, one at a time, and describe() there too; close_abandoned() from the writer's strand;
// files() from any thread. A sink serves one writer.
class LineSink {
public:
    virtual ~LineSink() = default;

    // Once, before any other call. An error disables the writer (logged by it).
    virtual std::error_code start(const SinkContext& ctx)
    {
        (void)ctx;
        return {};
    }

    // Writes `lines` (lines.records complete lines, each ending in '\n') under `key`: empty
    // for the writer's one destination; a partitioned sink maps a key to a file (a relative
    // path under the directory), other sinks ignore it. The result says exactly how many of
    // the records landed (records_written, whose bytes are `landed`), surely did not
    // (records_failed) and may have (records_unknown); the three add up to lines.records.
    virtual AppendResult append(std::string_view key, const Lines& lines) noexcept = 0;

    // After each batch of the writer, once its records are counted (SinkContext::writer_stats
    // includes them). Default nothing.
    virtual void after_batch() noexcept {}

    // Makes what was appended durable (fsync, a broker's flush). Default nothing.
    virtual std::error_code sync() noexcept { return {}; }
    // Closes the current destination at a batch boundary; the next append opens a new one
    // (for SIGHUP and logrotate). Default nothing.
    virtual std::error_code reopen() noexcept { return {}; }
    // When the sink next needs tick() although nothing is appended (age rotation).
    virtual std::optional<std::chrono::steady_clock::time_point> next_tick() const noexcept
    {
        return std::nullopt;
    }
    virtual void tick() noexcept {}
    // Once, after the last append (durable: fsync what is still unsynced first). Also called
    // by the writer's destructor when close never ran; must be idempotent.
    virtual void close(bool durable) noexcept { (void)durable; }
    // Once, on the writer's strand, when async_close() ran out of time: the queued records
    // are counted as shutdown, the batch in flight as unknown, and the I/O thread may still be
    // inside append() — so this must not block or wait for it. close() comes later (when the
    // stuck append returns and the writer is destroyed), or never. Default nothing.
    virtual void close_abandoned() noexcept {}

    // The files written so far, oldest first (empty for a sink without files).
    virtual std::vector<std::filesystem::path> files() const { return {}; }
    // Where `key`'s lines go, for a failure's log line ("/var/log/x.jsonl", "topic t").
    virtual std::string describe(std::string_view key) const { return std::string(key); }
};

}  // namespace jsonlw
