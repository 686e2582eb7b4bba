// LineSink: where a writer's lines go — a file, a folder of files, a broker, several of them.
// The writer's engine owns the queue, the batches, the I/O thread, the counting and, under
// Durability::fsync_batch, when sync() is called; its encoder turns records into lines; a sink
// only takes groups of complete lines and says how many of their records landed.
//
// The contract, for whoever writes a sink (docs/sinks.md "The contract" at length;
// jsonlw::testing::check_sink(), jsonlw/testing/sink_conformance.hpp, checks a sink against it):
//
// Threads and order. start() once, first, on the thread that calls the writer's start(); if
// it fails, the writer is disabled and nothing else is called. Then every call on the writer's
// I/O thread (its own, or one of WriterOptions::io_executor's), one at a time: per batch,
// append() once per group (a write_batch() override may make several), each followed under
// fsync_batch by sync() when it reported records written, then after_batch() once. reopen()
// and tick() come between batches only; sync() also between batches under fsync_interval, and
// once before close() when the writer is durable. close(durable) comes last, once — the
// destructor may call it again, so it is idempotent. Only close_abandoned() (the writer's
// strand, maybe while append() runs) and files() (any thread, any time) come from elsewhere.
//
// Counting. append() is the final word on its group: records_written + records_failed +
// records_unknown == lines.records, and nothing can be reported later. Written: the record's
// whole line is where a reader finds it (next paragraph). Failed: surely none of its bytes are
// there. Unknown: anything between — part of the line landed, a broker that did not answer.
// A record still in the sink's own memory when append() returns cannot be counted written, so
// a buffering or compressing sink writes its buffer out before append() returns.
//
// When a record is written. Its whole line has left the sink's memory and lies where sync(),
// or close(true), makes it durable with nothing more from the sink: in the kernel (write(2) or
// writev(2) returned) or acknowledged by a broker. A compressing sink counts a record once the
// compressed bytes holding all of its line are written — after flushing the compressor (zlib's
// Z_SYNC_FLUSH, or a finished gzip member), not when the line entered it. Under none and
// fsync_interval the writer counts such records at once. Under fsync_batch it calls sync()
// right after the append and counts them written only when sync() succeeds; a failed sync()
// counts them unknown (in the destination, durable or not — as a FileSink's own failed fsync
// counts them) and is logged. So sync() makes durable all that append() wrote (fsync every
// descriptor written since the last sync(), a broker's flush) and returns the error; a sink
// that fsyncs inside append() (the file sinks do) has a sync() that finds nothing left and
// costs nothing. Under fsync_interval a failed sync() is logged and changes no count.
//
// AppendResult beyond the counts (append_result.hpp): ec, the error behind the records not
// written; attempted, false when nothing of the group reached the destination (it would not
// open), true once any byte may have; offset, where the group's bytes begin in the
// destination (a file's size before the append; 0 where that means nothing, a broker);
// landed, the bytes that reached the destination as it stores them (compressed, for a
// compressing sink; 0 with every record written means the lines as given); isolated_fragment,
// true only when a '\n' went first to end a torn last line found in an append-only file.
// The durable request trace's ledger reads offset, landed and isolated_fragment.
//
// Lines. A group is lines.records complete lines, each ending in '\n' — but under
// LineFormat::otlp one line (an OTLP LogsData) holds all lines.records records and
// lines.log_records is true: count them all or none, never the '\n's. The bytes live until
// append() returns: copy what you keep.
//
// SinkContext. start() gets a reference to a temporary of the writer's start(): copy what you
// need (it is copyable; its file_io, log and on_file_event stay valid while the sink serves
// the writer; writer_stats may be called from any thread while the writer lives, not after).
// Write files through ctx.file_io, so that tests can inject faults; log through write_log().
//
// files(). The files the sink wrote, oldest first, the one being written included, as paths
// that exist (absolute, or relative to ctx.directory); empty for a sink without files. The
// writer's files() returns it as it is. file_path() and files_closed() are what the writer's
// file_path() and WriterStats::files_closed report: a FileSink's, passed up by the sinks that
// wrap one; a sink of your own keeps the defaults (empty, 0) unless it is one file.
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
// files() from any thread (the contract above says in which order). A sink serves one writer.
class LineSink {
public:
    virtual ~LineSink() = default;

    // Once, before any other call. An error disables the writer (logged by it).
    virtual std::error_code start(const SinkContext& ctx)
    {
        (void)ctx;
        return {};
    }

    // Writes `lines` (lines.records complete lines, each ending in '\n'; one line of them all
    // under lines.log_records) under `key`: empty for the writer's one destination; a
    // partitioned sink maps a key to a file (a relative path under the directory), other
    // sinks ignore it. The result says exactly how many of the records landed
    // (records_written, whose bytes are `landed`), surely did not (records_failed) and may
    // have (records_unknown); the three add up to lines.records.
    virtual AppendResult append(std::string_view key, const Lines& lines) noexcept = 0;

    // After each batch of the writer, once its records are counted (SinkContext::writer_stats
    // includes them). Default nothing.
    virtual void after_batch() noexcept {}

    // Makes all that append() wrote durable (fsync, a broker's flush) and says whether it did:
    // under fsync_batch the writer counts an append's records written only after this
    // succeeds. Cheap when nothing is unsynced. Default nothing (success).
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

    // The files written so far, oldest first, each one that exists (empty for a sink without
    // files). Any thread, also during an append().
    virtual std::vector<std::filesystem::path> files() const { return {}; }
    // The writer's file_path(): the one file of the sink (a FileSink's first), read once after
    // start(). Default empty: a sink that is not one file.
    virtual std::filesystem::path file_path() const { return {}; }
    // Files closed by rotation or reopen() (WriterStats::files_closed). Any thread. Default 0.
    virtual std::uint64_t files_closed() const noexcept { return 0; }
    // Where `key`'s lines go, for a failure's log line ("/var/log/x.jsonl", "topic t").
    virtual std::string describe(std::string_view key) const { return std::string(key); }
};

}  // namespace jsonlw
