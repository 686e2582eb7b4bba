// PathRouterSink (see path_router_sink.hpp): a '\0' key is a file's absolute path, turned
// into the files' sink's key; any other key is the destination's.
#include <jsonlw/sinks/path_router_sink.hpp>

#include <stdexcept>

namespace jsonlw {

std::string PathRouterSink::path_key(const std::filesystem::path& path)
{
    const std::filesystem::path p = path.is_absolute() ? path : std::filesystem::absolute(path);
    std::string key(1, '\0');
    key += p.lexically_normal().native();
    return key;
}

PathRouterSink::PathRouterSink(std::shared_ptr<LineSink> destination)
    : destination_(std::move(destination))
{
    if (!destination_) throw std::invalid_argument("PathRouterSink needs a destination");
}

std::error_code PathRouterSink::start(const SinkContext& ctx)
{
    if (const std::error_code ec = destination_->start(ctx)) return ec;
    SinkContext files_ctx = ctx;
    if (!ctx.directory.empty()) {
        std::error_code ec;
        directory_ = std::filesystem::absolute(ctx.directory, ec).lexically_normal();
        if (ec) return ec;
    }
    files_ctx.directory = directory_;
    return files_.start(files_ctx);
}

std::string PathRouterSink::file_key(std::string_view key) const
{
    const std::filesystem::path p(key.substr(1));
    if (!directory_.empty()) {
        std::string rel = p.lexically_relative(directory_).native();
        if (!rel.empty() && rel != "." && rel.rfind("..", 0) != 0) return rel;
    }
    return p.native();
}

AppendResult PathRouterSink::append(std::string_view key, const Lines& lines) noexcept
{
    if (!is_path_key(key)) return destination_->append(key, lines);
    std::string file;
    try {
        file = file_key(key);
    } catch (...) {
        AppendResult r;
        r.ec = std::make_error_code(std::errc::not_enough_memory);
        r.records_failed = lines.records;
        return r;
    }
    return files_.append(file, lines);
}

void PathRouterSink::after_batch() noexcept
{
    destination_->after_batch();
    files_.after_batch();
}

// Both, always: sync() is cheap where nothing is unsynced, and the destination is owed one
// before a durable close() whatever the last group was (line_sink.hpp, "Threads and order").
std::error_code PathRouterSink::sync() noexcept
{
    const std::error_code ec = destination_->sync();
    const std::error_code f = files_.sync();
    return ec ? ec : f;
}

std::error_code PathRouterSink::reopen() noexcept
{
    const std::error_code ec = destination_->reopen();
    const std::error_code f = files_.reopen();
    return ec ? ec : f;
}

std::optional<std::chrono::steady_clock::time_point> PathRouterSink::next_tick() const noexcept
{
    const auto d = destination_->next_tick();
    const auto f = files_.next_tick();
    if (!d) return f;
    if (!f) return d;
    return *f < *d ? f : d;
}

void PathRouterSink::tick() noexcept
{
    destination_->tick();
    files_.tick();
}

void PathRouterSink::close(bool durable) noexcept
{
    destination_->close(durable);
    files_.close(durable);
}

void PathRouterSink::close_abandoned() noexcept
{
    destination_->close_abandoned();
    files_.close_abandoned();
}

std::vector<std::filesystem::path> PathRouterSink::files() const
{
    std::vector<std::filesystem::path> all = destination_->files();
    std::vector<std::filesystem::path> named = files_.files();
    all.insert(all.end(), named.begin(), named.end());
    return all;
}

std::string PathRouterSink::describe(std::string_view key) const
{
    return is_path_key(key) ? std::string(key.substr(1)) : destination_->describe(key);
}

}  // namespace jsonlw
