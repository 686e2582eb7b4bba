// ObservedIo (see observed_io.hpp): each call passes to POSIX and counts what it did, keeping
// errno as POSIX left it.
#include "observed_io.hpp"

#include <fcntl.h>

#include <cerrno>

namespace jsonlw::testing::conformance {

int ObservedIo::open(const char* path, int flags, mode_t mode) noexcept
{
    const int fd = base_->open(path, flags, mode);
    const int err = errno;
    if (fd >= 0 && (flags & (O_WRONLY | O_RDWR)) != 0) {
        std::lock_guard lk(mu_);
        ++s_.opened_for_write;
    }
    errno = err;
    return fd;
}

ssize_t ObservedIo::writev(int fd, const iovec* iov, int iovcnt) noexcept
{
    {
        std::lock_guard lk(mu_);
        if (fail_writev_) {
            fail_writev_ = false;
            ++s_.faults_hit;
            errno = EIO;
            return -1;
        }
    }
    const ssize_t w = base_->writev(fd, iov, iovcnt);
    const int err = errno;
    if (w > 0) {
        std::lock_guard lk(mu_);
        ++s_.writevs;
        dirty_.insert(fd);
    }
    errno = err;
    return w;
}

int ObservedIo::fsync(int fd) noexcept
{
    const int r = base_->fsync(fd);
    const int err = errno;
    if (r == 0) {
        std::lock_guard lk(mu_);
        dirty_.erase(fd);
    }
    errno = err;
    return r;
}

int ObservedIo::close(int fd) noexcept
{
    {
        std::lock_guard lk(mu_);
        if (dirty_.erase(fd) > 0) ++s_.closed_dirty;
    }
    return base_->close(fd);
}

void ObservedIo::fail_next_writev()
{
    std::lock_guard lk(mu_);
    fail_writev_ = true;
}

ObservedIo::Snapshot ObservedIo::snapshot() const
{
    std::lock_guard lk(mu_);
    Snapshot s = s_;
    s.dirty = dirty_.size();
    return s;
}

}  // namespace jsonlw::testing::conformance
