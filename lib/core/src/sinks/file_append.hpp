// FileAppender: appends whole lines to files kept open, through the FileIo seam.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/file_io.hpp>
#include <jsonlw/lines.hpp>

#include "sink_counters.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/types.h>

namespace jsonlw::detail {

// One instance per sink, used from its I/O thread only (the sink owns it). Descriptors stay
// open (O_APPEND) between appends; a failed append closes its descriptor so the next one
// reopens (a fault that clears — a replaced file, a recreated directory — is picked up).
//
// A record counts as written only once it is in a file a reader finds (docs/reliability.md):
// before each append the descriptor's link count is checked (fstat), after it the path's
// device and inode against the descriptor's (stat), as CPython's Lib/logging/handlers.py
// WatchedFileHandler does — two system calls a batch. A file found unlinked is replaced by a
// new one at its path (folders recreated) and a batch that landed in it is appended again; a
// file renamed away keeps what it has, and the next batch opens a new file at the path.
//
// A failed append that left part of its bytes (ENOSPC, EIO, a short write that cannot
// complete) is cut back with ftruncate to the file's length before it, so no file ends in a
// partial line and its records surely did not land (each file is this process's own). Where
// that is impossible (not a regular file, ftruncate fails) the partial bytes stay, and the
// next append writes '\n' first, as it does for a torn line a crash left: a torn tail never
// glues onto a new record.
//
// After fork(), an appender inherited by the child refuses every append (EPERM, nothing
// written, its inherited descriptors left alone): they share the parent's file offsets and
// files, so a child writing through them would interleave with the parent. A writer created
// in the child gets an appender of its own and works normally.
class FileAppender {
public:
    // Told when a file is closed for good here (evicted as least recently used, close(),
    // close_all()): its path and the records appended through that descriptor.
    using ClosedFn = std::function<void(const std::string& path, std::uint64_t records)>;
    // Told when a file is found removed (true) or moved away (false), for a log line.
    using NoticeFn = std::function<void(const std::string& path, bool removed)>;

    // `counters` (owned by the sink, may be null) gets reopens, re-appended records and
    // roll-backs.
    explicit FileAppender(std::shared_ptr<FileIo> io, std::size_t max_open = 64,
                          mode_t file_mode = 0640, SinkCounters* counters = nullptr);
    ~FileAppender();
    FileAppender(const FileAppender&) = delete;
    FileAppender& operator=(const FileAppender&) = delete;

    // One writev of `bytes` (plus a leading '\n' when needed), retried on EINTR and short
    // writes; then fsync when `sync`. Creates missing parent directories. An open failing
    // with EEXIST (network filesystems racing to create a file) is retried after 50 ms,
    // 250 ms and 1 s.
    // `records`: how many records `bytes` holds (kept per file for the counters).
    AppendResult append(const std::filesystem::path& path, std::string_view bytes, bool sync,
                        std::uint64_t records = 0);
    // fsync every open descriptor written since the last sync; the first error is returned.
    std::error_code sync_all();
    void close_all() noexcept;
    // Closes `path`'s descriptor if open (fsync first when it holds unsynced data and `sync`);
    // returns the fsync's error. The next append() to it opens it again.
    std::error_code close(const std::filesystem::path& path, bool sync) noexcept;
    std::size_t open_files() const noexcept { return files_.size(); }
    // The paths of the open descriptors.
    std::vector<std::string> open_paths() const;
    bool is_open(const std::string& path) const noexcept;
    void on_closed(ClosedFn fn) { on_closed_ = std::move(fn); }
    void on_notice(NoticeFn fn) { on_notice_ = std::move(fn); }
    // True in a child process forked after this appender was created.
    bool inherited_by_fork() const noexcept;

private:
    struct File {
        std::string path;
        int fd = -1;
        bool needs_newline = false;
        bool unsynced = false;
        bool regular = false;  // a regular file: ftruncate can cut a failed append off
        dev_t dev = 0;         // what the path named at open()
        ino_t ino = 0;
        std::uint64_t last_use = 0;
        std::uint64_t records = 0;  // appended through this descriptor
    };
    enum class PathState { same, removed, moved };

    File* find_or_open(const std::filesystem::path& path, std::error_code& ec,
                       std::uint64_t& size);
    // One append to an open file: writev (retried on EINTR and short writes), ftruncate back
    // on failure, fsync when `sync`; drops the descriptor on failure.
    AppendResult write_to(File& f, std::string_view bytes, bool sync, std::uint64_t size);
    PathState check_path(const File& f) noexcept;
    void drop(File& f) noexcept;
    void closed(const File& f) noexcept;  // tells on_closed_
    void notice(const std::string& path, bool removed) noexcept;

    std::shared_ptr<FileIo> io_;
    std::size_t max_open_;
    mode_t file_mode_;
    unsigned fork_generation_;
    std::vector<File> files_;
    std::uint64_t clock_ = 0;
    SinkCounters own_counters_;  // when the sink gives none
    SinkCounters* counters_;
    ClosedFn on_closed_;
    NoticeFn on_notice_;
};

// Appends `lines` to `path` through `files` and says what became of their records: all
// written; or, on failure, those any of whose bytes are still in the file unknown (none, once
// the failed append was cut off again), the rest failed. Never throws (an exception from the
// appender counts every record failed, EIO).
AppendResult append_lines(FileAppender& files, const std::filesystem::path& path,
                          const Lines& lines, bool sync) noexcept;

}  // namespace jsonlw::detail
