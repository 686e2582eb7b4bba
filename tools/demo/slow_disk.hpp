// SlowDisk: a FileIo for `jsonlw demo --slow-disk-us U` that waits U microseconds before each
// append (writev) and then does it through the FileIo it wraps: a disk that is slow but
// correct, to drive the writers' queues full on purpose. Called on a writer's I/O thread
// only (the wait blocks that thread, as a slow disk would); owns nothing but the pointer to
// the FileIo it forwards to.
#pragma once

#include <jsonlw/file_io.hpp>

#include <chrono>
#include <memory>

namespace jsonlw::tools {

class SlowDisk final : public FileIo {
public:
    SlowDisk(std::shared_ptr<FileIo> inner, std::chrono::microseconds delay)
        : inner_(inner ? std::move(inner) : posix_file_io()), delay_(delay)
    {
    }

    int open(const char* path, int flags, mode_t mode) noexcept override;
    ssize_t writev(int fd, const iovec* iov, int iovcnt) noexcept override;
    ssize_t pread(int fd, void* buf, size_t count, off_t offset) noexcept override;
    int fstat(int fd, struct stat* st) noexcept override;
    int fsync(int fd) noexcept override;
    int close(int fd) noexcept override;
    int rename(const char* from, const char* to) noexcept override;

private:
    std::shared_ptr<FileIo> inner_;
    std::chrono::microseconds delay_;
};

}  // namespace jsonlw::tools
