// PartitionedFileSink: a file per key under the writer's directory, through one FileAppender.
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include "file_append.hpp"

#include <algorithm>
#include <mutex>
#include <optional>

namespace jsonlw {

struct PartitionedFileSink::State {
    SinkContext ctx;
    std::optional<detail::FileAppender> appender;
    std::filesystem::path path;  // I/O thread: the last key's file
    mutable std::mutex files_mu;
    std::vector<std::filesystem::path> files;  // under files_mu, each once
};

PartitionedFileSink::PartitionedFileSink(std::size_t max_open)
    : max_open_(max_open), s_(std::make_unique<State>())
{
}

PartitionedFileSink::~PartitionedFileSink() { close(false); }

std::error_code PartitionedFileSink::start(const SinkContext& ctx)
{
    s_->ctx = ctx;
    if (!s_->ctx.file_io) s_->ctx.file_io = posix_file_io();
    s_->appender.emplace(s_->ctx.file_io, max_open_, s_->ctx.file_mode);
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
    const AppendResult r = detail::append_lines(*s.appender, s.path, lines,
                                                s.ctx.durability == Durability::fsync_batch);
    if (r.attempted) {
        try {
            std::lock_guard lk(s.files_mu);
            if (std::find(s.files.begin(), s.files.end(), s.path) == s.files.end())
                s.files.push_back(s.path);
        } catch (...) {
            // files() misses it; the records are in the file.
        }
    }
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
    return ec;
}

void PartitionedFileSink::close(bool durable) noexcept
{
    if (!s_->appender) return;
    if (durable) s_->appender->sync_all();
    s_->appender->close_all();
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

}  // namespace jsonlw
