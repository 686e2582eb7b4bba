#include <jsonlw/file_io.hpp>

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

namespace jsonlw {

int FileIo::open(const char* path, int flags, mode_t mode) noexcept
{
    return ::open(path, flags, mode);
}
ssize_t FileIo::writev(int fd, const iovec* iov, int iovcnt) noexcept
{
    return ::writev(fd, iov, iovcnt);
}
ssize_t FileIo::pread(int fd, void* buf, size_t count, off_t offset) noexcept
{
    return ::pread(fd, buf, count, offset);
}
int FileIo::fstat(int fd, struct stat* st) noexcept { return ::fstat(fd, st); }
int FileIo::stat(const char* path, struct stat* st) noexcept { return ::stat(path, st); }
int FileIo::ftruncate(int fd, off_t length) noexcept { return ::ftruncate(fd, length); }
int FileIo::fsync(int fd) noexcept { return ::fsync(fd); }
int FileIo::close(int fd) noexcept { return ::close(fd); }
int FileIo::rename(const char* from, const char* to) noexcept
{
    return ::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

std::shared_ptr<FileIo> posix_file_io()
{
    static const auto io = std::make_shared<FileIo>();
    return io;
}

}  // namespace jsonlw
