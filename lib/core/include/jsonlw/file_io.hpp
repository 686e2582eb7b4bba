// The system calls a writer's appends go through: the default is POSIX; tests inject faults.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <memory>

namespace jsonlw {

// Every member mirrors the POSIX call of the same name: it returns what the call returns and
// reports failure through errno. All calls are made from the writer's I/O thread, one at a
// time per writer. An override may block (to simulate a stuck disk) or fail on purpose.
class FileIo {
public:
    virtual ~FileIo() = default;
    virtual int open(const char* path, int flags, mode_t mode) noexcept;
    virtual ssize_t writev(int fd, const iovec* iov, int iovcnt) noexcept;
    virtual ssize_t pread(int fd, void* buf, size_t count, off_t offset) noexcept;
    virtual int fstat(int fd, struct stat* st) noexcept;
    // The path's device and inode after an append: is it still the file being written?
    virtual int stat(const char* path, struct stat* st) noexcept;
    // Cuts a failed append off, back to the file's length before it.
    virtual int ftruncate(int fd, off_t length) noexcept;
    virtual int fsync(int fd) noexcept;
    virtual int close(int fd) noexcept;
    // rename(2) that never replaces an existing `to` (renameat2 RENAME_NOREPLACE; fails with
    // EEXIST instead): the rename of a rotated file.
    virtual int rename(const char* from, const char* to) noexcept;
};

// The shared POSIX implementation (stateless).
std::shared_ptr<FileIo> posix_file_io();

}  // namespace jsonlw
