#include "trace_accounting.hpp"

#include <jsonlw/request_trace_writer.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <system_error>

namespace jsonlw::detail {
namespace {

std::error_code errno_code() noexcept { return {errno, std::system_category()}; }

// Writes all of `data` to fd, retrying EINTR and short writes.
bool write_all(int fd, const char* data, std::size_t size) noexcept
{
    while (size > 0) {
        const ssize_t w = ::write(fd, data, size);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        data += w;
        size -= static_cast<std::size_t>(w);
    }
    return true;
}

int fsync_retry(int fd) noexcept
{
    int r;
    do r = ::fsync(fd);
    while (r < 0 && errno == EINTR);
    return r;
}

void timestamp(JsonLine& line, LineBuffer& scratch, WallClock::time_point tp)
{
    scratch.clear();
    scratch.push_back('"');
    append_utc_iso8601(scratch, tp);
    scratch.push_back('"');
    line.raw({scratch.data(), scratch.size()});
}

}  // namespace

std::string new_generation_id()
{
    using namespace std::chrono;
    const auto ns = duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
    std::random_device rd;
    return fmt::format("{}-{}-{:08x}", static_cast<long>(::getpid()), ns,
                       static_cast<std::uint32_t>(rd()));
}

TraceAccounting::TraceAccounting(std::filesystem::path directory, std::string writer_suffix,
                                 LogSink log)
    : directory_(std::move(directory)),
      writer_suffix_(std::move(writer_suffix)),
      log_(std::move(log)),
      generation_(new_generation_id()),
      started_at_(WallClock::now()),
      pid_(static_cast<long>(::getpid()))
{
}

std::filesystem::path TraceAccounting::sidecar_path() const
{
    return directory_ / "_writer" / (generation_ + ".json");
}

void TraceAccounting::log(LogLevel level, std::string_view msg) const noexcept
{
    try {
        if (log_) log_(level, msg);
        else log_to_stderr(level, msg);
    } catch (...) {
        // A throwing sink must not cost the accounting.
    }
}

ShardAccount& TraceAccounting::shard(std::string_view file)
{
    const std::string key(file);
    if (auto it = shard_index_.find(key); it != shard_index_.end()) return shards_[it->second];
    shard_index_.emplace(key, shards_.size());
    ShardAccount& s = shards_.emplace_back();
    s.file = key;
    return s;
}

void TraceAccounting::on_append(std::string_view file, const Lines& lines, const AppendResult& r)
{
    std::lock_guard lock(mu_);
    if (lines.records == 0 && lines.bytes.empty()) return;  // nothing was handed to the file
    if (!r.attempted) {
        // The file would not open: nothing of this append is in it.
        ++write_errors_;
        last_error_ = fmt::format("{} ({})", r.ec.message(), file);
        return;
    }
    ShardAccount& s = shard(file);
    if (!s.opened) {
        s.opened = true;
        s.start_offset = r.offset;
        s.persisted_end = r.offset;
    }
    // The leading '\n' surely landed when anything after it did; when the whole writev
    // failed, the next append isolates the fragment again and counts it then.
    if (r.isolated_fragment && (r.ok() || r.landed > 0)) ++s.fragments_isolated;
    if (r.ok()) {
        s.persisted_end = r.offset + r.landed;
        s.persisted_records += lines.records;
        return;
    }
    ++write_errors_;
    last_error_ = fmt::format("{} ({})", r.ec.message(), file);
    if (r.landed > 0) {
        s.unknown_extents.push_back({r.offset, r.landed, r.records_unknown});
    }
}

bool TraceAccounting::publication_due(std::chrono::steady_clock::time_point now,
                                      std::chrono::steady_clock::duration interval) const noexcept
{
    std::lock_guard lock(mu_);
    return !last_publish_ || now - *last_publish_ >= interval;
}

void TraceAccounting::build(LineBuffer& out, const WriterStats& c, bool closed)
{
    LineBuffer stamp;
    JsonLine line(out);
    line.begin_object()
        .field("schema", RequestTraceWriter::sidecar_schema)
        .field("generation", generation_)
        .field("pid", pid_)
        .field("writer_suffix", writer_suffix_);
    line.key("started_at");
    timestamp(line, stamp, started_at_);
    line.key("published_at");
    timestamp(line, stamp, WallClock::now());
    line.field("sequence", sequence_)
        .field("closed", closed)
        .field("durability",
               "fsync per batch: a record counts as persisted once its append, newline "
               "included, is fsync'ed");
    line.key("counts")
        .begin_object()
        .field("submitted", c.submitted)
        .field("persisted", c.written);
    line.key("dropped")
        .begin_object()
        .field("queue_full", c.dropped.queue_full)
        .field("oldest_evicted", c.dropped.oldest_evicted)
        .field("malformed", c.dropped.malformed)
        .field("write_error", c.dropped.write_error)
        .field("shutdown", c.dropped.shutdown)
        .field("unexpected", c.dropped.unexpected)
        .field("closed", c.dropped.closed)
        .end_object();
    line.field("unknown", c.unknown).field("pending", c.pending).end_object();
    line.key("attributes").begin_object().field("sanitized", c.sanitized).end_object();
    line.key("shards").begin_array();
    for (const ShardAccount& s : shards_) {
        line.begin_object()
            .field("file", s.file)
            .field("start_offset", s.start_offset)
            .field("persisted_end", s.persisted_end)
            .field("persisted_records", s.persisted_records)
            .field("fragments_isolated", s.fragments_isolated);
        line.key("unknown_extents").begin_array();
        for (const UnknownExtent& e : s.unknown_extents)
            line.begin_object()
                .field("start", e.start)
                .field("landed", e.landed)
                .field("records", e.records)
                .end_object();
        line.end_array().end_object();
    }
    line.end_array();
    line.key("errors").begin_object().field("write_errors", write_errors_);
    line.key("last_error");
    if (last_error_) line.string(*last_error_);
    else line.null();
    line.field("sidecar_errors", sidecar_errors_).end_object().end_object();
    out.push_back('\n');
}

bool TraceAccounting::publish(const WriterStats& counts, bool closed) noexcept
{
    std::lock_guard lock(mu_);
    if (closed_) return true;  // the closed sidecar stays the last word
    closed_ = closed;
    last_publish_ = std::chrono::steady_clock::now();
    ++sequence_;
    const std::filesystem::path dir = directory_ / "_writer";
    const std::filesystem::path final_path = dir / (generation_ + ".json");
    const std::filesystem::path temp_path = dir / ("." + generation_ + ".json.partial");
    std::error_code ec;
    const char* step = "build";
    try {
        buffer_.clear();
        build(buffer_, counts, closed);
        step = "mkdir";
        std::filesystem::create_directories(dir, ec);
        if (!ec) {
            step = "open";
            const int fd =
                ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
            if (fd < 0) {
                ec = errno_code();
            } else {
                step = "write";
                bool ok = write_all(fd, buffer_.data(), buffer_.size());
                if (ok) {
                    step = "fsync";
                    ok = fsync_retry(fd) == 0;
                }
                if (!ok) ec = errno_code();
                if (::close(fd) < 0 && ok) {
                    step = "close";
                    ec = errno_code();
                }
            }
        }
        if (!ec) {
            step = "rename";
            if (::rename(temp_path.c_str(), final_path.c_str()) < 0) ec = errno_code();
        }
        if (!ec) {
            // Best effort: makes the rename itself durable where the filesystem allows.
            const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                fsync_retry(dfd);
                ::close(dfd);
            }
            return true;
        }
    } catch (...) {
        if (!ec) ec = std::make_error_code(std::errc::not_enough_memory);
    }
    ++sidecar_errors_;
    std::error_code ignore;
    std::filesystem::remove(temp_path, ignore);
    if (sidecar_errors_ == 1 || sidecar_errors_ % 100 == 0) {
        try {
            log(LogLevel::warning,
                fmt::format("Failed to publish request trace writer accounting: {} failed: {} "
                            "({})",
                            step, ec.message(), final_path.native()));
        } catch (...) {
        }
    }
    return false;
}

}  // namespace jsonlw::detail
