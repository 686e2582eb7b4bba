// The file sink's data path: FileSink::append() (which file a batch's lines go to, rotating
// first when due, split at rotate_bytes) and the FileAppender under it and PartitionedFileSink
// (one writev on an O_APPEND descriptor, partial writes resumed, a failed append cut back, a
// replaced file detected). FileSink's life cycle is in file_sink.cpp.
#include "file_append.hpp"
#include "file_sink_state.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

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

FileAppender::FileAppender(std::shared_ptr<FileIo> io, std::size_t max_open, mode_t file_mode,
                           SinkCounters* counters)
    : io_(io ? std::move(io) : posix_file_io()),
      max_open_(max_open == 0 ? 1 : max_open),
      file_mode_(file_mode),
      fork_generation_(current_fork_generation()),
      counters_(counters ? counters : &own_counters_)
{
}

bool FileAppender::inherited_by_fork() const noexcept
{
    return fork_count.load(std::memory_order_relaxed) != fork_generation_;
}

FileAppender::~FileAppender()
{
    on_closed_ = nullptr;  // the sink that set it may be half destroyed
    close_all();
}

void FileAppender::closed(const File& f) noexcept
{
    if (!on_closed_) return;
    try {
        on_closed_(f.path, f.records);
    } catch (...) {
        // Retention misses this file; it stays on disk.
    }
}

void FileAppender::notice(const std::string& path, bool removed) noexcept
{
    if (!on_notice_) return;
    try {
        on_notice_(path, removed);
    } catch (...) {
        // The counters tell.
    }
}

std::vector<std::string> FileAppender::open_paths() const
{
    std::vector<std::string> out;
    out.reserve(files_.size());
    for (const File& f : files_) out.push_back(f.path);
    return out;
}

bool FileAppender::is_open(const std::string& path) const noexcept
{
    return std::any_of(files_.begin(), files_.end(),
                       [&](const File& f) { return f.path == path; });
}

void FileAppender::drop(File& f) noexcept
{
    if (f.fd >= 0) io_->close(f.fd);
    f.fd = -1;
    const auto idx = static_cast<std::size_t>(&f - files_.data());
    files_.erase(files_.begin() + static_cast<std::ptrdiff_t>(idx));
}

void FileAppender::close_all() noexcept
{
    for (File& f : files_) {
        if (f.fd >= 0) io_->close(f.fd);
        f.fd = -1;
        closed(f);
    }
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
        closed(f);
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
        // A file unlinked under us since the last append (its directory removed, say)
        // would swallow every later record: reopen it instead. The fstat also gives the
        // length that a failed append is cut back to.
        struct stat st {};
        const int rc = io_->fstat(f.fd, &st);
        if (rc == 0 && st.st_nlink > 0) {
            f.last_use = ++clock_;
            size = static_cast<std::uint64_t>(st.st_size);
            return &f;
        }
        if (rc == 0) {
            // What it held was counted written and is gone with it.
            const std::uint64_t lost = f.records;
            counters_->update([&](FileSinkCounters& c) {
                ++c.reopened_removed;
                c.records_removed += lost;
            });
            notice(f.path, true);
        }
        drop(f);
        break;
    }
    if (files_.size() >= max_open_) {
        auto lru = std::min_element(files_.begin(), files_.end(),
            [](const File& a, const File& b) { return a.last_use < b.last_use; });
        if (lru->unsynced) io_->fsync(lru->fd);
        closed(*lru);
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
    if (io_->fstat(fd, &st) == 0) {
        f.dev = st.st_dev;
        f.ino = st.st_ino;
        f.regular = S_ISREG(st.st_mode);
        if (f.regular && st.st_size > 0) {
            size = static_cast<std::uint64_t>(st.st_size);
            char last = '\n';
            if (io_->pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
                f.needs_newline = true;
        }
    }
    files_.push_back(std::move(f));
    return &files_.back();
}

AppendResult FileAppender::append(const std::filesystem::path& path, std::string_view bytes,
                                  bool sync, std::uint64_t records)
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
    r = write_to(*f, bytes, sync, size);
    if (!r.ok()) return r;  // write_to dropped the descriptor (a failed fsync: bytes kept)
    f->records += records;
    const PathState state = check_path(*f);
    if (state == PathState::same) return r;
    const std::string key = f->path;
    if (state == PathState::moved) {
        // Renamed away (logrotate without copytruncate, an operator's mv): what it holds
        // stays there, counted; the next batch opens a new file at the path.
        const std::uint64_t moved = f->records;
        counters_->update([&](FileSinkCounters& c) {
            ++c.reopened_moved;
            c.records_moved += moved;
        });
        drop(*f);
        notice(key, false);
        return r;
    }
    // Unlinked while this batch went in: the batch went nowhere a reader looks. Append it
    // again to a new file at the path; the file's earlier records are gone with it.
    const std::uint64_t lost = f->records - records;
    counters_->update([&](FileSinkCounters& c) {
        ++c.reopened_removed;
        c.records_removed += lost;
    });
    drop(*f);
    notice(key, true);
    AppendResult again;
    File* g = find_or_open(path, again.ec, size);
    if (!g) {
        again.landed = 0;
        return again;  // nothing of the batch is on disk: its records failed
    }
    again = write_to(*g, bytes, sync, size);
    if (again.ok()) {
        g->records += records;
        counters_->update([&](FileSinkCounters& c) { c.records_reappended += records; });
    }
    return again;
}

AppendResult FileAppender::write_to(File& f, std::string_view bytes, bool sync,
                                    std::uint64_t size)
{
    AppendResult r;
    r.attempted = true;
    static const char newline = '\n';
    iovec iov[2];
    int n = 0;
    const std::size_t lead = f.needs_newline ? 1 : 0;
    if (lead) iov[n++] = {const_cast<char*>(&newline), 1};
    iov[n++] = {const_cast<char*>(bytes.data()), bytes.size()};
    r.offset = size + lead;
    r.isolated_fragment = lead != 0;
    std::size_t done = 0;
    const std::size_t total = lead + bytes.size();
    iovec* cur = iov;
    while (done < total) {
        const ssize_t w = io_->writev(f.fd, cur, static_cast<int>(iov + n - cur));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            r.ec = w < 0 ? last_error() : std::make_error_code(std::errc::io_error);
            r.landed = done > lead ? done - lead : 0;
            if (done > 0 && f.regular) {
                // Cut the partial append off: the file ends where it did, on a line boundary
                // (or on the torn tail it had, which the next append isolates as before).
                int t;
                do t = io_->ftruncate(f.fd, static_cast<off_t>(size));
                while (t < 0 && errno == EINTR);
                if (t == 0) {
                    r.landed = 0;
                    r.isolated_fragment = false;
                    counters_->update([](FileSinkCounters& c) { ++c.appends_rolled_back; });
                }
            }
            // Where part of a line stayed, the reopened file's last byte decides the '\n'
            // then. Reopening also picks up a fault that cleared.
            drop(f);
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
    f.needs_newline = false;
    f.unsynced = true;
    if (sync) {
        int rc;
        do rc = io_->fsync(f.fd);
        while (rc < 0 && errno == EINTR);
        if (rc < 0) {
            // The bytes are in the file; whether they are durable is not known.
            r.ec = last_error();
            drop(f);
            return r;
        }
        f.unsynced = false;
    }
    return r;
}

// Whether `f`'s path still names the file its descriptor writes: one stat in the common
// case, an fstat more when it does not.
FileAppender::PathState FileAppender::check_path(const File& f) noexcept
{
    struct stat st {};
    if (io_->stat(f.path.c_str(), &st) == 0) {
        if (st.st_dev == f.dev && st.st_ino == f.ino) return PathState::same;
    } else if (errno != ENOENT && errno != ENOTDIR) {
        return PathState::same;  // cannot tell (EACCES, EIO): keep the descriptor
    }
    struct stat fst {};
    if (io_->fstat(f.fd, &fst) != 0) return PathState::same;
    return fst.st_nlink == 0 ? PathState::removed : PathState::moved;
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
        r = files.append(path, lines.bytes, sync, lines.records);
    } catch (...) {
        r = AppendResult{};
        r.ec = std::make_error_code(std::errc::io_error);
        r.records_failed = lines.records;
        return r;
    }
    if (r.ec) {
        // One OTLP line holds every record of the group (lines.hpp): touched, all are.
        const std::uint64_t touched = lines_touched(lines.bytes, r.landed);
        r.records_unknown = lines.log_records && touched > 0
                                ? lines.records
                                : std::min<std::uint64_t>(touched, lines.records);
        r.records_failed = lines.records - r.records_unknown;
        return r;
    }
    r.records_written = lines.records;
    return r;
}

}  // namespace jsonlw::detail

namespace jsonlw {

using clock = std::chrono::steady_clock;

AppendResult FileSink::State::append_current(const Lines& lines) noexcept
{
    const bool fresh = !created;
    const AppendResult r = detail::append_lines(*appender, open_path, lines,
                                                ctx.durability == Durability::fsync_batch);
    if (r.attempted) {
        if (fresh) {
            created = true;
            opened = clock::now();
            try {
                if (rotating) list_file(open_path, false);
            } catch (...) {
            }
            ctx.file_event(FileEvent::Kind::opened, final_path, 0, group_offset);
        }
        size = r.offset + r.landed;
    }
    return r;
}

// Rotates first when due; splits the lines so that no file exceeds rotate_bytes.
AppendResult FileSink::append(std::string_view, const Lines& lines) noexcept
{
    State& s = *s_;
    if (!s.appender || s.sealed) {
        // Not started, or closed for good: nowhere to write.
        AppendResult r;
        r.ec = std::make_error_code(std::errc::bad_file_descriptor);
        r.records_failed = lines.records;
        return r;
    }
    s.group_offset = 0;
    if (!s.rotating) return s.append_current(lines);
    const Rotation& o = opts_.rotation;
    if (s.created && o.rotate_interval.count() > 0 && clock::now() - s.opened >= o.rotate_interval)
        s.rotate();
    if (o.rotate_bytes == 0 || lines.bytes.size() + s.size <= o.rotate_bytes)
        return s.append_current(lines);
    AppendResult total;
    std::string_view rest = lines.bytes;
    std::size_t records_left = lines.records, sanitized_left = lines.sanitized;
    while (!rest.empty()) {
        if (s.created && s.size >= o.rotate_bytes) s.rotate();
        const std::uint64_t budget = o.rotate_bytes > s.size ? o.rotate_bytes - s.size : 0;
        std::size_t take = 0, n = 0;
        for (;;) {
            const std::size_t nl = rest.find('\n', take);
            if (nl == std::string_view::npos) {  // no '\n' at the end: keep it whole
                if (take == 0) take = rest.size(), n = 1;
                break;
            }
            if (nl + 1 > budget && take > 0) break;
            if (nl + 1 > budget && s.size > 0) break;  // not even one line fits
            take = nl + 1;
            ++n;
            if (take >= budget) break;
        }
        if (take == 0) {  // the current file is too full for the next line
            s.rotate();
            if (s.size == 0) continue;
            // It could not rotate (a forked child's copy): the line goes where it can.
            const std::size_t nl = rest.find('\n');
            take = nl == std::string_view::npos ? rest.size() : nl + 1;
            n = 1;
        }
        if (take == rest.size() || n > records_left) n = records_left;
        Lines part{rest.substr(0, take), n, std::min(sanitized_left, n)};
        s.group_offset = lines.records - records_left;
        const AppendResult r = s.append_current(part);
        total.attempted = total.attempted || r.attempted;
        total.records_written += r.records_written;
        total.records_failed += r.records_failed;
        total.records_unknown += r.records_unknown;
        total.landed += r.landed;
        if (r.ec && !total.ec) total.ec = r.ec;
        rest.remove_prefix(take);
        records_left -= n;
        sanitized_left -= part.sanitized;
    }
    return total;
}

}  // namespace jsonlw
