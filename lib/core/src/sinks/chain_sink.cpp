// ChainSink (see chain_sink.hpp): seals each group's lines from the key's running value,
// hands the sealed group to the inner sink, and keeps only what it reports written; the
// inner sink's file events become manifest lines (chain_manifest_writer.hpp).
#include <jsonlw/sinks/chain_sink.hpp>

#include <jsonlw/chain_manifest.hpp>

#include "chain_manifest_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace jsonlw {

namespace {

constexpr std::size_t value_len = 64;

// Where a manifest's last open or close leaves the writer's chain: a close records it; an
// open with no close after it (a crashed run) left the file's last line as the value.
std::string resume_value(const ChainManifest& m, const std::filesystem::path& directory)
{
    // Retention deletes older files after the newest closed: a delete is never where it ended.
    const auto it = std::find_if(m.events.rbegin(), m.events.rend(), [](const ChainManifestEvent& e) {
        return e.kind != ChainManifestEvent::Kind::remove;
    });
    if (it == m.events.rend()) return std::string(value_len, '0');
    const ChainManifestEvent& e = *it;
    if (e.kind != ChainManifestEvent::Kind::open) return e.last;
    const std::filesystem::path file = directory / e.file;
    if (auto v = read_last_chain_value(file)) return *v;
    // Still under its open suffix (sealed by the inner sink's start() only if its process
    // ended): <file>.<suffix>.
    std::error_code ec;
    const std::string name = file.filename().string() + ".";
    for (std::filesystem::directory_iterator it(file.parent_path(), ec), end; !ec && it != end;
         it.increment(ec)) {
        if (it->path().filename().string().rfind(name, 0) != 0) continue;
        if (auto v = read_last_chain_value(it->path())) return *v;
    }
    return e.prev;
}

}  // namespace

ChainSink::ChainSink(std::shared_ptr<LineSink> inner, ChainMode mode, std::optional<ChainKey> key)
    : SinkDecorator(std::move(inner)), mode_(mode), chain_(mode, std::move(key)),
      manifest_(std::make_unique<detail::ChainManifestWriter>())
{
    if (mode == ChainMode::none)
        throw std::invalid_argument("ChainSink: chain mode none seals nothing");
    if (!inner_) throw std::invalid_argument("ChainSink: no inner sink");
}

ChainSink::~ChainSink()
{
    // The inner sink may outlive this one (shared): its later events must not reach us.
    close(false);
    alive_.reset();
}

std::uint64_t ChainSink::manifest_failures() const noexcept { return manifest_->failures(); }

std::error_code ChainSink::start(const SinkContext& ctx)
{
    ctx_ = ctx;
    if (!ctx_.file_io) ctx_.file_io = posix_file_io();
    if (!ctx_.directory.empty()) {
        const std::filesystem::path path = chain_manifest_path(ctx_.directory, ctx_.stem);
        try {
            const ChainManifest m = read_chain_manifest(path);
            if (m.bad_line)
                ctx_.write_log(LogLevel::warning,
                               fmt::format("{} JSONL chain manifest {} line {}: {}; skipped",
                                           ctx_.subject, path.native(), *m.bad_line, m.bad_reason));
            latest_ = resume_value(m, ctx_.directory);
            chain_.resume(latest_);
        } catch (const std::exception& e) {
            ctx_.write_log(LogLevel::error,
                           fmt::format("Cannot go on from the {} JSONL chain manifest {}: {}",
                                       ctx_.subject, path.native(), e.what()));
            return std::make_error_code(std::errc::io_error);
        }
        manifest_->start(ctx_, path, mode_);
    }
    SinkContext inner_ctx = ctx_;
    inner_ctx.on_file_event = [token = std::weak_ptr<int>(alive_), this,
                               next = ctx.on_file_event](const FileEvent& e) {
        if (token.lock()) on_file_event(e);
        if (next) next(e);
    };
    return inner_->start(inner_ctx);
}

AppendResult ChainSink::append(std::string_view key, const Lines& lines) noexcept
{
    AppendResult r;
    std::size_t good = 0;
    try {
        const auto it = values_.find(std::string(key));
        group_start_ = it != values_.end() ? it->second : latest_;
        chain_.resume(group_start_);
        sealed_.clear();
        values_of_group_.clear();
        sealed_.reserve(lines.bytes.size() + lines.records * (value_len + 12));
        std::string_view rest = lines.bytes;
        while (!rest.empty()) {
            const std::size_t nl = rest.find('\n');
            const std::size_t n = nl == std::string_view::npos ? rest.size() : nl + 1;
            try {
                chain_.seal(sealed_, rest.substr(0, n));
                values_of_group_.append(chain_.last());
                ++good;
            } catch (const std::invalid_argument&) {
                if (bad_lines_++ == 0)
                    ctx_.write_log(LogLevel::error,
                                   fmt::format("A {} JSONL line is not one JSON object, so it "
                                               "cannot carry a chain value: not written (counted "
                                               "failed; later ones only counted)",
                                               ctx_.subject));
            }
            rest.remove_prefix(n);
        }
    } catch (const std::exception& e) {
        // Out of memory, or libcrypto failed: nothing of the group is written.
        ctx_.write_log(LogLevel::error, fmt::format("Cannot seal {} JSONL lines: {}",
                                                    ctx_.subject, e.what()));
        r.ec = std::make_error_code(std::errc::io_error);
        r.records_failed = lines.records;
        return r;
    }
    const std::size_t sealed_lines = values_of_group_.size() / value_len;
    if (sealed_lines + bad_in_group(lines, sealed_lines) != lines.records)
        return append_whole(key, lines, sealed_lines);
    good = std::min(good, lines.records);
    const std::size_t bad = lines.records - good;
    if (good > 0) {
        in_append_ = true;
        r = inner_->append(key, Lines{sealed_, good, std::min(lines.sanitized, good)});
        in_append_ = false;
    }
    const std::uint64_t written = std::min<std::uint64_t>(r.records_written, good);
    if (written > 0) {
        try {
            latest_.assign(values_of_group_, (written - 1) * value_len, value_len);
            values_[std::string(key)] = latest_;
        } catch (...) {
            // Out of memory: the key goes on from latest_ (assigned first) next time.
        }
    }
    r.records_written = written;
    r.records_failed = std::min<std::uint64_t>(r.records_failed, good - written) + bad;
    r.records_unknown = lines.records - r.records_written - r.records_failed;
    if (bad > 0 && !r.ec) r.ec = std::make_error_code(std::errc::invalid_argument);
    return r;
}

std::size_t ChainSink::bad_in_group(const Lines& lines, std::size_t sealed_lines) noexcept
{
    std::size_t n = 0;
    for (const char c : lines.bytes) n += c == '\n';
    if (!lines.bytes.empty() && lines.bytes.back() != '\n') ++n;
    return n - sealed_lines;
}

// A group whose lines are not one per record (an OtlpSink's: one LogsData line holding the
// group's records): written whole or not at all, the value advancing past its last line only
// when every record landed.
AppendResult ChainSink::append_whole(std::string_view key, const Lines& lines,
                                     std::size_t sealed_lines) noexcept
{
    AppendResult r;
    if (sealed_lines * value_len != values_of_group_.size() || bad_in_group(lines, sealed_lines) > 0 ||
        sealed_lines == 0) {
        r.ec = std::make_error_code(std::errc::invalid_argument);
        r.records_failed = lines.records;
        return r;
    }
    in_append_ = true;
    r = inner_->append(key, Lines{sealed_, lines.records, lines.sanitized, lines.log_records});
    in_append_ = false;
    if (r.records_written == lines.records) {
        try {
            latest_.assign(values_of_group_, (sealed_lines - 1) * value_len, value_len);
            values_[std::string(key)] = latest_;
        } catch (...) {
        }
    }
    return r;
}

void ChainSink::on_file_event(const FileEvent& e) noexcept
{
    try {
        switch (e.kind) {
        case FileEvent::Kind::opened: {
            std::string prev = latest_;
            if (in_append_ && e.group_offset > 0 &&
                e.group_offset * value_len <= values_of_group_.size())
                prev.assign(values_of_group_, (e.group_offset - 1) * value_len, value_len);
            else if (in_append_)
                prev = group_start_;
            open_[e.file] = prev;
            manifest_->opened(e.file, prev);
            break;
        }
        case FileEvent::Kind::closed: {
            const auto it = open_.find(e.file);
            if (it == open_.end()) break;  // a descriptor closed before its open was told
            std::string last = read_last_chain_value(ctx_.directory / e.file).value_or(it->second);
            open_.erase(it);
            manifest_->closed(e.file, e.records, last);
            closed_[e.file] = std::move(last);
            break;
        }
        case FileEvent::Kind::deleted: {
            std::string last;
            if (const auto it = closed_.find(e.file); it != closed_.end()) last = it->second;
            else last = read_last_chain_value(ctx_.directory / e.file).value_or(std::string{});
            if (last.empty()) break;  // not a file of this chain
            manifest_->deleted(e.file, e.records, last);
            closed_.erase(e.file);
            values_.erase(e.file);
            break;
        }
        }
    } catch (...) {
        // Out of memory: the manifest misses this event (verify reports the file).
    }
}

void ChainSink::close(bool durable) noexcept
{
    inner_->close(durable);
    manifest_->close();
}

}  // namespace jsonlw
