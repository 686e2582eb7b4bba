// ObservedIo: the FileIo seam every check_sink() run hands its sink (SinkContext::file_io).
// The sink calls it from its I/O thread, the Checker and the Probe read snapshot() from any
// thread (it locks). POSIX underneath; owns its counts: the opens for writing, the writevs,
// the descriptors written since their last fsync, and one writev to fail on demand.
#pragma once

#include <jsonlw/file_io.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

namespace jsonlw::testing::conformance {

class ObservedIo final : public FileIo {
public:
    struct Snapshot {
        std::uint64_t writevs = 0;           // that wrote something
        std::uint64_t opened_for_write = 0;  // open() calls with O_WRONLY or O_RDWR
        std::uint64_t dirty = 0;             // descriptors written since their last fsync
        std::uint64_t closed_dirty = 0;      // descriptors closed so
        std::uint64_t faults_hit = 0;        // writevs failed on purpose
        bool used() const noexcept { return writevs > 0 || opened_for_write > 0; }
    };

    int open(const char* path, int flags, mode_t mode) noexcept override;
    ssize_t writev(int fd, const iovec* iov, int iovcnt) noexcept override;
    ssize_t pread(int fd, void* buf, size_t count, off_t offset) noexcept override
    {
        return base_->pread(fd, buf, count, offset);
    }
    int fstat(int fd, struct stat* st) noexcept override { return base_->fstat(fd, st); }
    int stat(const char* path, struct stat* st) noexcept override { return base_->stat(path, st); }
    int ftruncate(int fd, off_t length) noexcept override { return base_->ftruncate(fd, length); }
    int fsync(int fd) noexcept override;
    int close(int fd) noexcept override;
    int rename(const char* from, const char* to) noexcept override
    {
        return base_->rename(from, to);
    }

    // The next writev fails with EIO.
    void fail_next_writev();
    Snapshot snapshot() const;

private:
    const std::shared_ptr<FileIo> base_ = posix_file_io();
    mutable std::mutex mu_;
    Snapshot s_;
    std::set<int> dirty_;
    bool fail_writev_ = false;
};

}  // namespace jsonlw::testing::conformance
