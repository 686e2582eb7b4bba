// SinkSet (see sink_set.hpp): what a sink reports for the lines the engine appended (records
// written, failed, unknown) is counted here — under Durability::fsync_batch only once the
// sink's sync() made it durable; fsyncs, reopen, tick and the final close reach the sinks
// from here too.
#include <jsonlw/detail/sink_set.hpp>

#include "accounting.hpp"

#include <jsonlw/sinks/path_router_sink.hpp>
#include <jsonlw/sinks/sink_stack.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace jsonlw::detail {

std::error_code SinkSet::start(const SinkContext& ctx, bool path_files)
{
    path_files_ = path_files;
    try {
        sink_ = make_sink_stack(opts_, path_files);
    } catch (const std::exception& e) {
        sink_ = make_destination(opts_);  // what describe() names
        ctx.write_log(LogLevel::error,
                      fmt::format("Invalid {} JSONL chain options: {}", ctx.subject, e.what()));
        return std::make_error_code(std::errc::invalid_argument);
    }
    const std::error_code ec = sink_->start(ctx);
    if (!ec) {
        started_ = true;
        started_once_ = true;
    }
    return ec;
}

std::filesystem::path SinkSet::file_path() const
{
    return sink_ ? sink_->file_path() : std::filesystem::path{};
}

AppendResult SinkSet::counted(LineSink& to, std::string_view key, const Lines& lines,
                              AppendResult r) noexcept
{
    // A sink's count that does not add up is clamped: a record is counted once.
    r.records_written = std::min<std::uint64_t>(r.records_written, lines.records);
    r.records_failed = std::min<std::uint64_t>(r.records_failed, lines.records - r.records_written);
    r.records_unknown = lines.records - r.records_written - r.records_failed;
    const bool append_failed = r.records_written < lines.records;
    // Durability::fsync_batch is the engine's to keep, not each sink's: what the sink reports
    // written is made durable by its sync() before it counts (docs/sinks.md, "The contract").
    // A sync that fails leaves those records where a reader may find them, durable or not:
    // unknown, as a FileSink's own failed fsync has always counted them.
    std::error_code sync_ec;
    if (r.records_written > 0 && opts_.durability == Durability::fsync_batch) {
        sync_ec = to.sync();
        if (sync_ec) {
            r.records_unknown += r.records_written;
            r.records_written = 0;
            if (r.ok()) r.ec = sync_ec;
        }
    }
    accounting_.count_append(lines, r);
    if (r.records_written > 0 && opts_.durability == Durability::fsync_interval && !unsynced_) {
        unsynced_ = true;
        if (last_sync_ == time_point{}) last_sync_ = std::chrono::steady_clock::now();
    }
    if (append_failed) accounting_.on_write_failure(r.ec, to, key);
    if (sync_ec) accounting_.on_sync_failure(sync_ec);
    return r;
}

AppendResult SinkSet::unwritten(const Lines& lines, std::error_code ec) noexcept
{
    AppendResult r;
    r.ec = ec;
    r.records_failed = lines.records;
    accounting_.count_unwritten(lines.records);
    return r;
}

std::error_code SinkSet::path_key(const std::filesystem::path& path,
                                  std::string& key) const noexcept
{
    // Only a write_batch() override can name a file; a stack built without one has no router.
    if (!path_files_) return std::make_error_code(std::errc::operation_not_supported);
    try {
        key = PathRouterSink::path_key(path);
    } catch (const std::filesystem::filesystem_error& e) {  // no working directory
        return e.code();
    } catch (...) {
        return std::make_error_code(std::errc::not_enough_memory);
    }
    return {};
}

void SinkSet::after_batch() noexcept
{
    if (sink_ && started_) sink_->after_batch();
}

void SinkSet::sync() noexcept
{
    const std::error_code ec = sink_ && started_ ? sink_->sync() : std::error_code{};
    last_sync_ = std::chrono::steady_clock::now();
    unsynced_ = false;
    if (ec) accounting_.on_sync_failure(ec);
}

std::optional<SinkSet::time_point> SinkSet::sync_due() const noexcept
{
    return opts_.durability == Durability::fsync_interval && unsynced_
               ? std::optional<time_point>(last_sync_ + opts_.fsync_interval)
               : std::nullopt;
}

bool SinkSet::sync_overdue() const noexcept
{
    return opts_.durability == Durability::fsync_interval && unsynced_ &&
           std::chrono::steady_clock::now() - last_sync_ >= opts_.fsync_interval;
}

void SinkSet::reopen() noexcept
{
    reopen_ec_ = {};
    if (!reopen_requested_.exchange(false, std::memory_order_acq_rel)) return;
    if (sink_) reopen_ec_ = sink_->reopen();
}

void SinkSet::tick() noexcept
{
    if (sink_ && started_) sink_->tick();
}

std::optional<SinkSet::time_point> SinkSet::next_tick() const noexcept
{
    return sink_ && started_ ? sink_->next_tick() : std::nullopt;
}

void SinkSet::close(bool durable) noexcept
{
    if (!started_) return;
    started_ = false;
    if (sink_) sink_->close(durable);
}

void SinkSet::close_abandoned() noexcept
{
    if (sink_ && started_once_) sink_->close_abandoned();
}

std::vector<std::filesystem::path> SinkSet::files() const
{
    return sink_ ? sink_->files() : std::vector<std::filesystem::path>{};
}

std::uint64_t SinkSet::files_closed() const noexcept
{
    return sink_ ? sink_->files_closed() : 0;
}

}  // namespace jsonlw::detail
