// PathRouterSink: the bottom of a writer's sink stack, so that the groups a write_batch()
// override appends to a file it names (BatchOutput::append(path, lines)) pass through the same
// chain and OTLP encoding as the rest: a group under a path_key() goes to that file (a
// PartitionedFileSink of the router's own), every other group to the writer's destination.
// docs/sinks.md, "The stack".
#pragma once

#include <jsonlw/sinks/line_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace jsonlw {

// Called by the writer's engine as every LineSink is, and passes each call on to the
// destination and to its files (the destination first); files(), file_path() and
// files_closed() from any thread. Shares the destination; owns the files' sink.
class PathRouterSink final : public LineSink {
public:
    // The key under which lines go to the file `path` (relative to the working directory, or
    // absolute): '\0' and the absolute path, which no file's or partition's key begins with.
    // Reads the working directory for a relative path. Any thread.
    static std::string path_key(const std::filesystem::path& path);
    static bool is_path_key(std::string_view key) noexcept
    {
        return !key.empty() && key.front() == '\0';
    }

    explicit PathRouterSink(std::shared_ptr<LineSink> destination);

    // Starts the destination, then the files' sink (with the writer's directory made absolute).
    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    void after_batch() noexcept override;
    // Syncs both; the destination's error first.
    std::error_code sync() noexcept override;
    std::error_code reopen() noexcept override;
    std::optional<std::chrono::steady_clock::time_point> next_tick() const noexcept override;
    void tick() noexcept override;
    void close(bool durable) noexcept override;
    void close_abandoned() noexcept override;
    // The destination's files, then the files named by path keys.
    std::vector<std::filesystem::path> files() const override;
    std::string describe(std::string_view key) const override;
    // The destination's.
    std::filesystem::path file_path() const override { return destination_->file_path(); }
    std::uint64_t files_closed() const noexcept override { return destination_->files_closed(); }

    const std::shared_ptr<LineSink>& destination() const noexcept { return destination_; }
    // Reopens, rolled-back appends and the like of the files named by path keys.
    FileSinkCounters counters() const { return files_.counters(); }

private:
    // A path key's file as the files' sink names it: relative to the writer's directory when
    // it lies under it (so a chain's manifest names it as it names the rest), else absolute.
    std::string file_key(std::string_view key) const;

    const std::shared_ptr<LineSink> destination_;
    PartitionedFileSink files_;
    std::filesystem::path directory_;  // absolute (empty without one); set by start()
};

}  // namespace jsonlw
