#include "file_append.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <iterator>
#include <thread>

namespace jsonlw::detail {
namespace {

std::error_code last_error() noexcept { return {errno, std::system_category()}; }

// Bumped in every child process by a pthread_atfork handler: appenders compare it with the
// value they were created with, so the check costs a load, not a getpid() system call.
std::atomic<unsigned> fork_count{0};

void on_fork_child() noexcept { fork_count.fetch_add(1, std::memory_order_relaxed); }

unsigned current_fork_generation() noexcept
{
    static const bool registered = [] {
        ::pthread_atfork(nullptr, nullptr, &on_fork_child);
        return true;
    }();
    (void)registered;
    return fork_count.load(std::memory_order_relaxed);
}

}  // namespace

FileAppender::FileAppender(std::shared_ptr<FileIo> io, std::size_t max_open, mode_t file_mode)
    : io_(io ? std::move(io) : posix_file_io()),
      max_open_(max_open == 0 ? 1 : max_open),
      file_mode_(file_mode),
      fork_generation_(current_fork_generation())
{
}

bool FileAppender::inherited_by_fork() const noexcept
{
    return fork_count.load(std::memory_order_relaxed) != fork_generation_;
}

FileAppender::~FileAppender() { close_all(); }

void FileAppender::drop(File& f) noexcept
{
    if (f.fd >= 0) io_->close(f.fd);
    f.fd = -1;
    const auto idx = static_cast<std::size_t>(&f - files_.data());
    files_.erase(files_.begin() + static_cast<std::ptrdiff_t>(idx));
}

void FileAppender::close_all() noexcept
{
    for (File& f : files_)
        if (f.fd >= 0) io_->close(f.fd);
    files_.clear();
}

std::error_code FileAppender::close(const std::filesystem::path& path, bool sync) noexcept
{
    std::error_code ec;
    for (File& f : files_) {
        if (f.path != path.native()) continue;
        if (sync && f.unsynced && !inherited_by_fork()) {
            int r;
            do r = io_->fsync(f.fd);
            while (r < 0 && errno == EINTR);
            if (r < 0) ec = last_error();
        }
        drop(f);
        break;
    }
    return ec;
}

FileAppender::File* FileAppender::find_or_open(const std::filesystem::path& path,
                                               std::error_code& ec, std::uint64_t& size)
{
    const std::string& key = path.native();
    for (File& f : files_) {
        if (f.path != key) continue;
        // A file unlinked under us (its directory removed, say) would swallow every later
        // record: reopen it instead. One fstat per append; appends are per batch.
        struct stat st {};
        if (io_->fstat(f.fd, &st) == 0 && st.st_nlink > 0) {
            f.last_use = ++clock_;
            size = static_cast<std::uint64_t>(st.st_size);
            return &f;
        }
        drop(f);
        break;
    }
    if (files_.size() >= max_open_) {
        auto lru = std::min_element(files_.begin(), files_.end(),
            [](const File& a, const File& b) { return a.last_use < b.last_use; });
        if (lru->unsynced) io_->fsync(lru->fd);
        drop(*lru);
    }
    if (path.has_parent_path()) {
        std::error_code mk;
        std::filesystem::create_directories(path.parent_path(), mk);
        // An error here shows up as the open's errno (ENOTDIR, ENOENT, ...), which is the
        // more useful message.
    }
    int fd = -1;
    static constexpr std::chrono::milliseconds eexist_backoff[] = {
        std::chrono::milliseconds(50), std::chrono::milliseconds(250), std::chrono::seconds(1)};
    for (std::size_t attempt = 0;; ++attempt) {
        do {
            // Read-write so the last byte can be checked for a torn line (pread on a
            // write-only descriptor fails with EBADF); write-only where reading is refused.
            fd = io_->open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, file_mode_);
            if (fd < 0 && errno == EACCES)
                fd = io_->open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                              file_mode_);
        } while (fd < 0 && errno == EINTR);
        if (fd >= 0 || errno != EEXIST || attempt == std::size(eexist_backoff)) break;
        // On the I/O thread: a pause here delays this writer's batches only.
        std::this_thread::sleep_for(eexist_backoff[attempt]);
    }
    if (fd < 0) {
        ec = last_error();
        return nullptr;
    }
    File f;
    f.path = key;
    f.fd = fd;
    f.last_use = ++clock_;
    struct stat st {};
    size = 0;
    if (io_->fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        size = static_cast<std::uint64_t>(st.st_size);
        char last = '\n';
        if (io_->pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') f.needs_newline = true;
    }
    files_.push_back(std::move(f));
    return &files_.back();
}

AppendResult FileAppender::append(const std::filesystem::path& path, std::string_view bytes,
                                  bool sync)
{
    AppendResult r;
    if (inherited_by_fork()) {
        // The parent's descriptors (and its files' O_APPEND offsets) are shared with us.
        r.ec = std::make_error_code(std::errc::operation_not_permitted);
        return r;
    }
    std::uint64_t size = 0;
    File* f = find_or_open(path, r.ec, size);
    if (!f) return r;
    r.attempted = true;
    static const char newline = '\n';
    iovec iov[2];
    int n = 0;
    const std::size_t lead = f->needs_newline ? 1 : 0;
    if (lead) iov[n++] = {const_cast<char*>(&newline), 1};
    iov[n++] = {const_cast<char*>(bytes.data()), bytes.size()};
    r.offset = size + lead;
    r.isolated_fragment = lead != 0;
    std::size_t done = 0;
    const std::size_t total = lead + bytes.size();
    iovec* cur = iov;
    while (done < total) {
        const ssize_t w = io_->writev(f->fd, cur, static_cast<int>(iov + n - cur));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            r.ec = w < 0 ? last_error() : std::make_error_code(std::errc::io_error);
            r.landed = done > lead ? done - lead : 0;
            // Part of a line may have landed: the reopened file's last byte decides the
            // '\n' then. Reopening also picks up a fault that cleared.
            drop(*f);
            return r;
        }
        auto adv = static_cast<std::size_t>(w);
        done += adv;
        while (adv > 0 && adv >= cur->iov_len) {
            adv -= cur->iov_len;
            ++cur;
        }
        if (adv > 0) {
            cur->iov_base = static_cast<char*>(cur->iov_base) + adv;
            cur->iov_len -= adv;
        }
    }
    r.landed = bytes.size();
    f->needs_newline = false;
    f->unsynced = true;
    if (sync) {
        int rc;
        do rc = io_->fsync(f->fd);
        while (rc < 0 && errno == EINTR);
        if (rc < 0) {
            r.ec = last_error();
            drop(*f);
            return r;
        }
        f->unsynced = false;
    }
    return r;
}

std::error_code FileAppender::sync_all()
{
    std::error_code first;
    if (inherited_by_fork()) return first;  // nothing of ours to sync: the data is the parent's
    for (File& f : files_) {
        if (!f.unsynced) continue;
        int r;
        do r = io_->fsync(f.fd);
        while (r < 0 && errno == EINTR);
        if (r < 0 && !first) first = last_error();
        if (r == 0) f.unsynced = false;
    }
    return first;
}

namespace {

// Lines any of whose bytes are among the first `landed` of `bytes` (a line cut short counts).
std::uint64_t lines_touched(std::string_view bytes, std::uint64_t landed) noexcept
{
    if (landed == 0) return 0;
    const std::string_view head = bytes.substr(0, static_cast<std::size_t>(landed));
    std::uint64_t n = static_cast<std::uint64_t>(std::count(head.begin(), head.end(), '\n'));
    if (head.back() != '\n') ++n;
    return n;
}

}  // namespace

AppendResult append_lines(FileAppender& files, const std::filesystem::path& path,
                          const Lines& lines, bool sync) noexcept
{
    AppendResult r;
    if (lines.records == 0 && lines.bytes.empty()) return r;
    try {
        r = files.append(path, lines.bytes, sync);
    } catch (...) {
        r = AppendResult{};
        r.ec = std::make_error_code(std::errc::io_error);
        r.records_failed = lines.records;
        return r;
    }
    if (r.ec) {
        r.records_unknown =
            std::min<std::uint64_t>(lines_touched(lines.bytes, r.landed), lines.records);
        r.records_failed = lines.records - r.records_unknown;
        return r;
    }
    r.records_written = lines.records;
    return r;
}

}  // namespace jsonlw::detail
