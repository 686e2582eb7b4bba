// The default layout's file (I/O thread; named by start()): where a file is rotated (by size
// or age), written under the open suffix and renamed when closed, reopened on request, and
// where files left open by ended processes are sealed; files() lists them (any thread).
#include "writer_core_impl.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

namespace jsonlw::detail {

// Names file `index`, opened at `when`: <stem>-<host>-<pid>-<UTC>-<index>.jsonl.
void WriterCore::Impl::name_main(std::uint64_t index, std::time_t when)
{
    main.index = index;
    main.final_path = self.opts_.directory / fmt::format("{}{}-{:06}.jsonl", main_prefix,
                                                         utc_stamp(when), index);
    main.open_path = main.final_path;
    main.open_path += open_suffix;
    main.created = false;
    main.size = 0;
}

void WriterCore::Impl::list_file(const std::filesystem::path& p, bool replace_last)
{
    std::lock_guard lk(files_mu);
    if (replace_last && !file_list.empty()) file_list.back() = p;
    else file_list.push_back(p);
}

// Closes the current file (fsync first when durable) and renames it to its final name.
std::error_code WriterCore::Impl::close_main(bool durable) noexcept
{
    std::error_code ec;
    try {
        if (const std::error_code s = appender.close(main.open_path, durable); s)
            log(LogLevel::warning, fmt::format("Failed to fsync {} JSONL: {} ({})",
                                               self.opts_.subject, s.message(),
                                               main.open_path.native()));
        if (open_suffix.empty()) return ec;
        const std::shared_ptr<FileIo>& io = file_io;
        if (io->rename(main.open_path.c_str(), main.final_path.c_str()) != 0) {
            ec = {errno, std::system_category()};
            log(LogLevel::warning,
                fmt::format("Failed to rename {} JSONL file {}: {}; its records stay there",
                            self.opts_.subject, main.open_path.native(), ec.message()));
            return ec;
        }
        list_file(main.final_path, true);
        if (durable) {
            // The rename itself survives a crash once the directory is synced.
            const int dir = io->open(self.opts_.directory.c_str(),
                                     O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
            if (dir >= 0) {
                io->fsync(dir);
                io->close(dir);
            }
        }
    } catch (const std::exception& e) {
        log_unexpected(Stage::write, e.what());
        ec = std::make_error_code(std::errc::io_error);
    }
    return ec;
}

std::error_code WriterCore::Impl::rotate_main() noexcept
{
    if (!main.created || appender.inherited_by_fork()) return {};
    const std::error_code ec = close_main(self.opts_.durability != Durability::none);
    files_closed.fetch_add(1, std::memory_order_relaxed);
    try {
        name_main(main.index + 1, std::time(nullptr));
    } catch (...) {
        // Only an allocation can fail here; the next append retries the same name.
    }
    return ec;
}

void WriterCore::Impl::seal_main(bool durable) noexcept
{
    // A forked child's copy of the writer must not rename the parent's file under it.
    if (!main_rotating || main.sealed || appender.inherited_by_fork()) return;
    main.sealed = true;
    if (main.created) close_main(durable);
}

// Files of this stem and host still carrying the open suffix, left by a process that no
// longer runs (a crash, a kill -9): renamed to their final name so they get shipped.
// A torn last line stays as it is (the loader's error, or `jsonlw validate`, shows it).
void WriterCore::Impl::seal_stale() noexcept
{
    if (open_suffix.empty()) return;
    const std::string head = fmt::format("{}-{}-", self.opts_.stem, host_name());
    const std::string tail = ".jsonl" + open_suffix;
    std::size_t sealed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(self.opts_.directory, ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() <= head.size() + tail.size() || name.compare(0, head.size(), head) != 0 ||
            name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
            continue;
        // <head><pid>-…: the pid of the writer that opened it.
        pid_t pid = 0;
        std::size_t i = head.size();
        for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && pid < 4194304; ++i)
            pid = pid * 10 + (name[i] - '0');
        if (i == head.size() || i >= name.size() || name[i] != '-' || pid <= 0) continue;
        if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive
        std::filesystem::path final_path = it->path();
        final_path.replace_filename(name.substr(0, name.size() - open_suffix.size()));
        if (file_io->rename(it->path().c_str(), final_path.c_str()) == 0) ++sealed;
    }
    if (sealed > 0)
        log(LogLevel::info,
            fmt::format("Renamed {} {} JSONL file(s) left open by ended processes to .jsonl",
                        sealed, self.opts_.subject));
}

void WriterCore::Impl::reopen_io() noexcept
{
    reopen_ec = {};
    if (!reopen_requested.exchange(false, std::memory_order_acq_rel)) return;
    if (main.sealed) return;
    if (main_rotating) {
        if (main.created) {
            reopen_ec = rotate_main();
        }
        return;
    }
    // One fixed name: the next append opens it again (created anew if it was moved).
    if (const std::error_code s =
            appender.close(self.file_path_, self.opts_.durability != Durability::none);
        s)
        log(LogLevel::warning, fmt::format("Failed to fsync {} JSONL: {}",
                                           self.opts_.subject, s.message()));
    files_closed.fetch_add(1, std::memory_order_relaxed);
}

// Rotates first when due; splits the lines so that no file exceeds rotate_bytes.
AppendResult WriterCore::Impl::append_main(const Lines& lines) noexcept
{
    if (!main_rotating) return append(self.file_path_, lines);
    if (main.sealed) {
        // Closed for good (a write_batch() after close's last hook): nowhere to write.
        tally.write_error += lines.records;
        AppendResult r;
        r.ec = std::make_error_code(std::errc::bad_file_descriptor);
        r.records_failed = lines.records;
        return r;
    }
    const auto& o = self.opts_;
    if (main.created && o.rotate_interval.count() > 0 &&
        clock::now() - main.opened >= o.rotate_interval)
        rotate_main();
    if (o.rotate_bytes == 0 || lines.bytes.size() + main.size <= o.rotate_bytes)
        return append_current(lines);
    AppendResult total;
    std::string_view rest = lines.bytes;
    std::size_t records_left = lines.records, sanitized_left = lines.sanitized;
    while (!rest.empty()) {
        if (main.created && main.size >= o.rotate_bytes) rotate_main();
        const std::uint64_t budget = o.rotate_bytes > main.size ? o.rotate_bytes - main.size : 0;
        std::size_t take = 0, n = 0;
        for (;;) {
            const std::size_t nl = rest.find('\n', take);
            if (nl == std::string_view::npos) {  // no '\n' at the end: keep it whole
                if (take == 0) take = rest.size(), n = 1;
                break;
            }
            if (nl + 1 > budget && take > 0) break;
            if (nl + 1 > budget && main.size > 0) break;  // not even one line fits
            take = nl + 1;
            ++n;
            if (take >= budget) break;
        }
        if (take == 0) {  // the current file is too full for the next line
            rotate_main();
            if (main.size == 0) continue;
            // It could not rotate (a forked child's copy): the line goes where it can.
            const std::size_t nl = rest.find('\n');
            take = nl == std::string_view::npos ? rest.size() : nl + 1;
            n = 1;
        }
        if (take == rest.size() || n > records_left) n = records_left;
        Lines part{rest.substr(0, take), n, std::min(sanitized_left, n)};
        const AppendResult r = append_current(part);
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

AppendResult WriterCore::Impl::append_current(const Lines& lines) noexcept
{
    const bool fresh = !main.created;
    const AppendResult r = append(main.open_path, lines);
    if (r.attempted) {
        if (fresh) {
            main.created = true;
            main.opened = clock::now();
            try {
                list_file(main.open_path, false);
            } catch (...) {
            }
        }
        main.size = r.offset + r.landed;
    }
    return r;
}

std::vector<std::filesystem::path> WriterCore::files() const
{
    if (!impl_->main_rotating) {
        std::vector<std::filesystem::path> one;
        if (!file_path_.empty()) one.push_back(file_path_);
        return one;
    }
    std::lock_guard lk(impl_->files_mu);
    return impl_->file_list;
}

}  // namespace jsonlw::detail
