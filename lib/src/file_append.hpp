// FileAppender: appends whole lines to files kept open, through the FileIo seam.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/file_io.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace jsonlw::detail {

// One instance per writer, used from its I/O thread only. Descriptors stay open (O_APPEND)
// between appends; a failed append closes its descriptor so the next one reopens (a fault
// that clears — a replaced file, a recreated directory — is picked up). A file whose last
// byte is not '\n' (a torn line left by a crash or a short write) gets a '\n' before the
// next line, so a torn tail never glues onto a new record.
class FileAppender {
public:
    explicit FileAppender(std::shared_ptr<FileIo> io, std::size_t max_open = 64);
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
    std::size_t open_files() const noexcept { return files_.size(); }

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
    std::vector<File> files_;
    std::uint64_t clock_ = 0;
};

}  // namespace jsonlw::detail
