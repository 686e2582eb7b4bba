// FileSink's life cycle: the default layout's file named at start(), rotated by size or age,
// written under the open suffix and renamed when closed, reopened on request; files left
// open by ended processes are sealed at start(). files() lists them (any thread). Closed
// files are handed to a RetentionKeeper, which deletes the oldest beyond the Rotation's
// retention. FileSink::append(), the data path, is in file_append.cpp beside the appender.
#include <jsonlw/sinks/file_sink.hpp>

#include "file_sink_state.hpp"
#include "../host_names.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <mutex>
#include <optional>

namespace jsonlw {

using clock = std::chrono::steady_clock;

// `p`, the current file's name once closed, is sealed: retention may delete it (or older ones).
void FileSink::State::retire(const std::filesystem::path& p) noexcept
{
    ctx.file_event(FileEvent::Kind::closed, p, closed_records);
    keeper->sealed(p, closed_records, clock::now());
    closed_records = 0;
    apply_retention();
}

void FileSink::State::apply_retention() noexcept
{
    if (!keeper->active()) return;
    keeper->enforce(clock::now());
    const auto gone = keeper->take_deleted();
    if (gone.empty()) return;
    try {
        std::lock_guard lk(files_mu);
        std::erase_if(file_list, [&](const std::filesystem::path& f) {
            return std::find(gone.begin(), gone.end(), f.native()) != gone.end();
        });
    } catch (...) {
    }
}

// Names file `i`, opened at `when`: <stem>-<host>-<pid>-<UTC>-<i>.jsonl.
void FileSink::State::name(std::uint64_t i, std::time_t when)
{
    index = i;
    final_path =
        ctx.directory / fmt::format("{}{}-{:06}.jsonl", prefix, detail::utc_stamp(when), i);
    open_path = final_path;
    open_path += suffix;
    created = false;
    size = 0;
}

void FileSink::State::list_file(const std::filesystem::path& p, bool replace_last)
{
    std::lock_guard lk(files_mu);
    if (replace_last && !file_list.empty()) file_list.back() = p;
    else file_list.push_back(p);
}

// Closes the current file (fsync first when durable) and renames it to its final name.
std::error_code FileSink::State::close_current(bool durable) noexcept
{
    std::error_code ec;
    try {
        if (const std::error_code s = appender->close(open_path, durable); s)
            ctx.write_log(LogLevel::warning,
                          fmt::format("Failed to fsync {} JSONL: {} ({})", ctx.subject,
                                      s.message(), open_path.native()));
        if (suffix.empty()) {
            retire(final_path);
            return ec;
        }
        if (ctx.file_io->rename(open_path.c_str(), final_path.c_str()) != 0) {
            ec = {errno, std::system_category()};
            ctx.write_log(LogLevel::warning,
                          fmt::format("Failed to rename {} JSONL file {}: {}; its records stay there",
                                      ctx.subject, open_path.native(), ec.message()));
            retire(open_path);
            return ec;
        }
        list_file(final_path, true);
        retire(final_path);
        if (durable) {
            // The rename itself survives a crash once the directory is synced.
            const int dir =
                ctx.file_io->open(ctx.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
            if (dir >= 0) {
                ctx.file_io->fsync(dir);
                ctx.file_io->close(dir);
            }
        }
    } catch (const std::exception& e) {
        ctx.write_log(LogLevel::error, fmt::format("Unexpected error closing {} JSONL file: {}",
                                                   ctx.subject, e.what()));
        ec = std::make_error_code(std::errc::io_error);
    }
    return ec;
}

std::error_code FileSink::State::rotate() noexcept
{
    if (!created || appender->inherited_by_fork()) return {};
    const std::error_code ec = close_current(durable());
    files_closed.fetch_add(1, std::memory_order_relaxed);
    try {
        name(index + 1, std::time(nullptr));
    } catch (...) {
        // Only an allocation can fail here; the next append retries the same name.
    }
    return ec;
}

void FileSink::State::seal(bool durable) noexcept
{
    // A forked child's copy of the writer must not rename the parent's file under it.
    if (!rotating || sealed || !appender || appender->inherited_by_fork()) return;
    sealed = true;
    if (created) close_current(durable);
}

// Files of this stem and host still carrying the open suffix, left by a process that no
// longer runs (a crash, a kill -9): renamed to their final name so they get shipped. A torn
// last line stays as it is (the loader's error, or `jsonlw validate`, shows it).
void FileSink::State::seal_stale() noexcept
{
    if (suffix.empty()) return;
    const std::string head = fmt::format("{}-{}-", ctx.stem, ctx.host);
    const std::string tail = ".jsonl" + suffix;
    std::size_t sealed_n = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(ctx.directory, ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string fname = it->path().filename().string();
        if (fname.size() <= head.size() + tail.size() ||
            fname.compare(0, head.size(), head) != 0 ||
            fname.compare(fname.size() - tail.size(), tail.size(), tail) != 0)
            continue;
        // <head><pid>-…: the pid of the writer that opened it.
        pid_t pid = 0;
        std::size_t i = head.size();
        for (; i < fname.size() && fname[i] >= '0' && fname[i] <= '9' && pid < 4194304; ++i)
            pid = pid * 10 + (fname[i] - '0');
        if (i == head.size() || i >= fname.size() || fname[i] != '-' || pid <= 0) continue;
        if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive
        std::filesystem::path final_name = it->path();
        final_name.replace_filename(fname.substr(0, fname.size() - suffix.size()));
        if (ctx.file_io->rename(it->path().c_str(), final_name.c_str()) == 0) ++sealed_n;
    }
    if (sealed_n > 0)
        ctx.write_log(LogLevel::info,
                      fmt::format("Renamed {} {} JSONL file(s) left open by ended processes to .jsonl",
                                  sealed_n, ctx.subject));
}

FileSink::FileSink(FileSinkOptions opts) : opts_(std::move(opts)), s_(std::make_unique<State>()) {}

FileSink::~FileSink() { close(false); }

std::error_code FileSink::start(const SinkContext& ctx)
{
    State& s = *s_;
    s.ctx = ctx;
    if (!s.ctx.file_io) s.ctx.file_io = posix_file_io();
    s.keeper.emplace(opts_.rotation.retention, s.ctx, s.counters);
    s.appender.emplace(s.ctx.file_io, 64, s.ctx.file_mode, &s.counters);
    s.appender->on_closed([&s](const std::string& p, std::uint64_t records) {
        if (p == s.open_path.native()) s.closed_records += records;
    });
    s.appender->on_notice(
        [&s](const std::string& p, bool removed) { s.notices.notice(s.ctx, p, removed); });
    const Rotation& o = opts_.rotation;
    s.suffix =
        o.open_suffix.value_or(o.rotate_bytes > 0 || o.rotate_interval.count() > 0 ? ".open" : "");
    s.rotating = o.rotate_bytes > 0 || o.rotate_interval.count() > 0 || !s.suffix.empty();
    if (s.rotating) {
        s.prefix = fmt::format("{}-{}-{}-", ctx.stem, ctx.host, ctx.pid);
        s.name(0, std::time(nullptr));
        s.first = s.final_path;
        s.seal_stale();
    } else {
        s.first = ctx.directory / fmt::format("{}-{}-{}-{}.jsonl", ctx.stem, ctx.host, ctx.pid,
                                              detail::utc_stamp());
        s.final_path = s.open_path = s.first;
    }
    return {};
}

std::error_code FileSink::sync() noexcept
{
    return s_->appender ? s_->appender->sync_all() : std::error_code{};
}

std::error_code FileSink::reopen() noexcept
{
    State& s = *s_;
    if (!s.appender || s.sealed) return {};
    if (s.rotating) return s.created ? s.rotate() : std::error_code{};
    // One fixed name: the next append opens it again (created anew if it was moved).
    if (const std::error_code e = s.appender->close(s.first, s.durable()); e)
        s.ctx.write_log(LogLevel::warning,
                        fmt::format("Failed to fsync {} JSONL: {}", s.ctx.subject, e.message()));
    s.files_closed.fetch_add(1, std::memory_order_relaxed);
    return {};
}

std::optional<clock::time_point> FileSink::next_tick() const noexcept
{
    const State& s = *s_;
    std::optional<clock::time_point> t = s.keeper ? s.keeper->next_expiry() : std::nullopt;
    const auto interval = opts_.rotation.rotate_interval;
    if (!s.rotating || !s.created || interval.count() <= 0) return t;
    const clock::time_point rotate_at = s.opened + interval;
    return t && *t < rotate_at ? t : std::optional<clock::time_point>(rotate_at);
}

void FileSink::tick() noexcept
{
    State& s = *s_;
    const auto interval = opts_.rotation.rotate_interval;
    if (s.created && s.rotating && interval.count() > 0 && clock::now() - s.opened >= interval)
        s.rotate();  // an idle file is rotated too
    if (s.keeper) s.apply_retention();  // retain_age: closed files may have expired
}

void FileSink::close(bool durable) noexcept
{
    State& s = *s_;
    if (!s.appender) return;
    if (durable) s.appender->sync_all();
    s.appender->close_all();
    s.seal(durable);
    if (!s.rotating && s.created && !s.told_closed) {  // the one file: closed now
        s.told_closed = true;
        s.ctx.file_event(FileEvent::Kind::closed, s.first, s.closed_records);
    }
    s.keeper->audit();
}

std::vector<std::filesystem::path> FileSink::files() const
{
    const State& s = *s_;
    if (!s.rotating) {
        std::vector<std::filesystem::path> one;
        if (!s.first.empty()) one.push_back(s.first);
        return one;
    }
    std::lock_guard lk(s.files_mu);
    return s.file_list;
}

std::string FileSink::describe(std::string_view) const { return s_->open_path.native(); }

std::filesystem::path FileSink::file_path() const { return s_->first; }

std::uint64_t FileSink::files_closed() const noexcept
{
    return s_->files_closed.load(std::memory_order_relaxed);
}

FileSinkCounters FileSink::counters() const { return s_->counters.get(); }

}  // namespace jsonlw
