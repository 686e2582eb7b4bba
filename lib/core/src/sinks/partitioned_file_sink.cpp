// PartitionedFileSink: a file per key under the writer's directory, through one FileAppender;
// with a Retention, its closed files are kept within bounds by a RetentionKeeper.
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <jsonlw/utc_time.hpp>

#include "path_notices.hpp"
#include "file_append.hpp"
#include "retention_keeper.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <optional>

namespace jsonlw {

using clock = std::chrono::steady_clock;

namespace {

// "YYYY-MM-DDTHH" when `path`'s folder is an hour folder, else empty.
std::string_view hour_of(const std::string& path) noexcept
{
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash < 13) return {};
    const std::string_view h(path.data() + slash - 13, 13);
    if (slash > 13 && path[slash - 14] != '/') return {};
    static constexpr char shape[] = "dddd-dd-ddTdd";
    for (std::size_t i = 0; i < 13; ++i) {
        const bool digit = h[i] >= '0' && h[i] <= '9';
        if (shape[i] == 'd' ? !digit : h[i] != shape[i]) return {};
    }
    return h;
}

}  // namespace

struct PartitionedFileSink::State {
    SinkContext ctx;
    detail::SinkCounters counters;
    std::optional<detail::FileAppender> appender;
    std::optional<detail::RetentionKeeper> keeper;
    std::filesystem::path path;  // I/O thread: the last key's file
    bool enforce_due = false;    // a file was sealed since the last enforce()
    // Hour sealing (with a retention rule): the newest hour seen (the clock's or a key's),
    // when the clock's hour next changes, and whether a file of an older hour was opened.
    std::string newest_hour;
    WallClock::time_point next_hour{};
    bool past_hour_open = false;
    detail::PathNotices notices;  // removed / moved-away warnings, once each
    mutable std::mutex files_mu;
    std::vector<std::filesystem::path> files;  // under files_mu, each once

    void seal_past_hours(const std::string& except) noexcept;
    void after_seal() noexcept;
};

// Closes the open files of hour folders older than the newest hour (so that retention may
// delete them), except `except`, the file about to be written.
void PartitionedFileSink::State::seal_past_hours(const std::string& except) noexcept
{
    try {
        const auto now = WallClock::now();
        bool due = past_hour_open;
        bool pending = false;
        if (now >= next_hour) {
            const std::string h = utc_hour(now);
            if (h > newest_hour) newest_hour = h;
            next_hour = std::chrono::floor<std::chrono::hours>(now) + std::chrono::hours(1);
            due = true;
        }
        if (const std::string_view kh = hour_of(except); !kh.empty()) {
            if (kh > newest_hour) {
                newest_hour = kh;
                due = true;
            } else if (kh < newest_hour && !appender->is_open(except)) {
                pending = true;  // a file of a past hour opens now: sealed at the next append
            }
        }
        past_hour_open = pending;
        if (!due) return;
        for (const std::string& p : appender->open_paths()) {
            if (p == except) continue;
            const std::string_view h = hour_of(p);
            if (!h.empty() && h < newest_hour)
                appender->close(p, ctx.durability != Durability::none);  // seals (on_closed)
        }
    } catch (...) {
        // Out of memory: they are sealed later (close() at the latest).
    }
}

void PartitionedFileSink::State::after_seal() noexcept
{
    if (!enforce_due) return;
    enforce_due = false;
    keeper->enforce(clock::now());
    const auto gone = keeper->take_deleted();
    if (gone.empty()) return;
    try {
        std::lock_guard lk(files_mu);
        std::erase_if(files, [&](const std::filesystem::path& p) {
            return std::find(gone.begin(), gone.end(), p.native()) != gone.end();
        });
    } catch (...) {
    }
}

PartitionedFileSink::PartitionedFileSink(std::size_t max_open)
    : PartitionedFileSink(PartitionedFileSinkOptions{.max_open = max_open})
{
}

PartitionedFileSink::PartitionedFileSink(PartitionedFileSinkOptions opts)
    : opts_(std::move(opts)), s_(std::make_unique<State>())
{
}

PartitionedFileSink::~PartitionedFileSink() { close(false); }

std::error_code PartitionedFileSink::start(const SinkContext& ctx)
{
    State& s = *s_;
    s.ctx = ctx;
    if (!s.ctx.file_io) s.ctx.file_io = posix_file_io();
    s.keeper.emplace(opts_.retention, s.ctx, s.counters);
    s.appender.emplace(s.ctx.file_io, opts_.max_open, s.ctx.file_mode, &s.counters);
    s.appender->on_closed([&s](const std::string& p, std::uint64_t records) {
        s.ctx.file_event(FileEvent::Kind::closed, p, records);
        s.keeper->sealed(p, records, clock::now());
        s.enforce_due = true;
    });
    s.appender->on_notice(
        [&s](const std::string& p, bool removed) { s.notices.notice(s.ctx, p, removed); });
    return {};
}

AppendResult PartitionedFileSink::append(std::string_view key, const Lines& lines) noexcept
{
    State& s = *s_;
    if (!s.appender) {
        AppendResult r;
        r.ec = std::make_error_code(std::errc::bad_file_descriptor);
        r.records_failed = lines.records;
        return r;
    }
    try {
        s.path = s.ctx.directory / key;
    } catch (...) {
        AppendResult r;
        r.ec = std::make_error_code(std::errc::not_enough_memory);
        r.records_failed = lines.records;
        return r;
    }
    if (s.keeper->active()) s.seal_past_hours(s.path.native());
    s.keeper->opened(s.path.native());
    const bool was_open = s.appender->is_open(s.path.native());
    const AppendResult r = detail::append_lines(*s.appender, s.path, lines,
                                                s.ctx.durability == Durability::fsync_batch);
    if (r.attempted && !was_open) s.ctx.file_event(FileEvent::Kind::opened, s.path);
    if (r.attempted) {
        try {
            std::lock_guard lk(s.files_mu);
            if (std::find(s.files.begin(), s.files.end(), s.path) == s.files.end())
                s.files.push_back(s.path);
        } catch (...) {
            // files() misses it; the records are in the file.
        }
    }
    s.after_seal();  // an evicted descriptor sealed its file
    return r;
}

std::error_code PartitionedFileSink::sync() noexcept
{
    return s_->appender ? s_->appender->sync_all() : std::error_code{};
}

std::error_code PartitionedFileSink::reopen() noexcept
{
    // Every file is opened again by its next append (created anew if it was moved away).
    if (!s_->appender) return {};
    const std::error_code ec =
        s_->ctx.durability != Durability::none ? s_->appender->sync_all() : std::error_code{};
    s_->appender->close_all();
    s_->after_seal();
    return ec;
}

std::optional<clock::time_point> PartitionedFileSink::next_tick() const noexcept
{
    const State& s = *s_;
    if (!s.keeper || !s.keeper->active()) return std::nullopt;
    std::optional<clock::time_point> t = s.keeper->next_expiry();
    if (s.appender->open_files() > 0) {
        // The next hour boundary seals the files of the hour that ends.
        const auto wall = WallClock::now();
        const auto boundary = std::chrono::floor<std::chrono::hours>(wall) + std::chrono::hours(1);
        const auto at = clock::now() + std::chrono::duration_cast<clock::duration>(boundary - wall);
        if (!t || at < *t) t = at;
    }
    return t;
}

void PartitionedFileSink::tick() noexcept
{
    State& s = *s_;
    if (!s.appender || !s.keeper->active()) return;
    s.seal_past_hours({});
    s.enforce_due = true;  // retain_age: files may have expired
    s.after_seal();
}

void PartitionedFileSink::close(bool durable) noexcept
{
    State& s = *s_;
    if (!s.appender) return;
    if (durable) s.appender->sync_all();
    s.appender->close_all();
    s.after_seal();
    s.keeper->audit();
}

std::vector<std::filesystem::path> PartitionedFileSink::files() const
{
    std::lock_guard lk(s_->files_mu);
    return s_->files;
}

std::string PartitionedFileSink::describe(std::string_view key) const
{
    return (s_->ctx.directory / key).native();
}

FileSinkCounters PartitionedFileSink::counters() const { return s_->counters.get(); }

}  // namespace jsonlw
