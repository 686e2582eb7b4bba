#include "slow_disk.hpp"

#include <thread>

namespace jsonlw::tools {

int SlowDisk::open(const char* path, int flags, mode_t mode) noexcept
{
    return inner_->open(path, flags, mode);
}

ssize_t SlowDisk::writev(int fd, const iovec* iov, int iovcnt) noexcept
{
    std::this_thread::sleep_for(delay_);  // the simulated device time of this append
    return inner_->writev(fd, iov, iovcnt);
}

ssize_t SlowDisk::pread(int fd, void* buf, size_t count, off_t offset) noexcept
{
    return inner_->pread(fd, buf, count, offset);
}

int SlowDisk::fstat(int fd, struct stat* st) noexcept { return inner_->fstat(fd, st); }
int SlowDisk::fsync(int fd) noexcept { return inner_->fsync(fd); }
int SlowDisk::close(int fd) noexcept { return inner_->close(fd); }
int SlowDisk::rename(const char* from, const char* to) noexcept { return inner_->rename(from, to); }

}  // namespace jsonlw::tools
