// FileAppender: appends whole lines to files kept open, through the FileIo seam.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/file_io.hpp>
#include <jsonlw/lines.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/types.h>

namespace jsonlw::detail {

// One instance per writer, used from its I/O thread only. Descriptors stay open (O_APPEND)
// between appends; a failed append closes its descriptor so the next one reopens (a fault
// that clears — a replaced file, a recreated directory — is picked up). A file whose last
// byte is not '\n' (a torn line left by a crash or a short write) gets a '\n' before the
// next line, so a torn tail never glues onto a new record.
//
// After fork(), an appender inherited by the child refuses every append (EPERM, nothing
// written, its inherited descriptors left alone): they share the parent's file offsets and
// files, so a child writing through them would interleave with the parent. A writer created
// in the child gets an appender of its own and works normally.
class FileAppender {
public:
    explicit FileAppender(std::shared_ptr<FileIo> io, std::size_t max_open = 64,
                          mode_t file_mode = 0640);
    ~FileAppender();
    FileAppender(const FileAppender&) = delete;
    FileAppender& operator=(const FileAppender&) = delete;

    // One writev of `bytes` (plus a leading '\n' when needed), retried on EINTR and short
    // writes; then fsync when `sync`. Creates missing parent directories. An open failing
    // with EEXIST (network filesystems racing to create a file) is retried after 50 ms,
    // 250 ms and 1 s.
    AppendResult append(const std::filesystem::path& path, std::string_view bytes, bool sync);
    // fsync every open descriptor written since the last sync; the first error is returned.
    std::error_code sync_all();
    void close_all() noexcept;
    // Closes `path`'s descriptor if open (fsync first when it holds unsynced data and `sync`);
    // returns the fsync's error. The next append() to it opens it again.
    std::error_code close(const std::filesystem::path& path, bool sync) noexcept;
    std::size_t open_files() const noexcept { return files_.size(); }
    // True in a child process forked after this appender was created.
    bool inherited_by_fork() const noexcept;

private:
    struct File {
        std::string path;
        int fd = -1;
        bool needs_newline = false;
        bool unsynced = false;
        std::uint64_t last_use = 0;
    };
    File* find_or_open(const std::filesystem::path& path, std::error_code& ec,
                       std::uint64_t& size);
    void drop(File& f) noexcept;

    std::shared_ptr<FileIo> io_;
    std::size_t max_open_;
    mode_t file_mode_;
    unsigned fork_generation_;
    std::vector<File> files_;
    std::uint64_t clock_ = 0;
};

// Appends `lines` to `path` through `files` and says what became of their records: all
// written; or, on failure, those any of whose bytes landed unknown, the rest failed. Never
// throws (an exception from the appender counts every record failed, EIO).
AppendResult append_lines(FileAppender& files, const std::filesystem::path& path,
                          const Lines& lines, bool sync) noexcept;

}  // namespace jsonlw::detail
