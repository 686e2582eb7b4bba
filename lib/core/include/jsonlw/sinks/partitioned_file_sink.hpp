// PartitionedFileSink: a file per key — the key is a path relative to the writer's directory
// ("20261202T03/raw-output-host-1.jsonl"), so a writer lays its records out by hour, tenant
// or kind by choosing each group's key. See docs/sinks.md.
#pragma once

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/line_sink.hpp>

#include <cstddef>
#include <memory>

namespace jsonlw {

struct PartitionedFileSinkOptions {
    // Descriptors kept open at most (least recently used closed first). Default 64.
    std::size_t max_open = 64;
    // Which closed files stay on disk (default: all). A file is closed (sealed) when its
    // descriptor is evicted, on reopen() and close(), and — with a rule set — when it lies in
    // an hour folder (<YYYY-MM-DDTHH>/…) older than the current UTC hour or than the newest
    // hour written. A sealed file written again (a late record) is open again until resealed.
    // A folder emptied by a deletion is removed.
    Retention retention{};
};

// Called by the writer's engine as every LineSink is; files() and counters() from any
// thread. Owns its descriptors; creates missing folders, ends a torn last line with '\n'
// before appending. An absolute key names its file itself.
class PartitionedFileSink final : public LineSink {
public:
    explicit PartitionedFileSink(std::size_t max_open = 64);
    explicit PartitionedFileSink(PartitionedFileSinkOptions opts);
    ~PartitionedFileSink() override;
    PartitionedFileSink(const PartitionedFileSink&) = delete;
    PartitionedFileSink& operator=(const PartitionedFileSink&) = delete;

    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;
    std::error_code reopen() noexcept override;
    std::optional<std::chrono::steady_clock::time_point> next_tick() const noexcept override;
    void tick() noexcept override;
    void close(bool durable) noexcept override;
    // The files written so far and still there (retention's deletions leave the list).
    std::vector<std::filesystem::path> files() const override;
    std::string describe(std::string_view key) const override;

    // Reopens, re-appended records, rolled-back appends, retention's deletions.
    FileSinkCounters counters() const;
    const PartitionedFileSinkOptions& options() const noexcept { return opts_; }

private:
    struct State;
    const PartitionedFileSinkOptions opts_;
    std::unique_ptr<State> s_;
};

}  // namespace jsonlw
