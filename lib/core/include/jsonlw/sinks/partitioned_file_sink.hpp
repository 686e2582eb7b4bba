// PartitionedFileSink: a file per key — the key is a path relative to the writer's directory
// ("20261202T03/raw-output-host-1.jsonl"), so a writer lays its records out by hour, tenant
// or kind by choosing each group's key. See docs/sinks.md.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <cstddef>
#include <memory>

namespace jsonlw {

// Called by the writer's engine as every LineSink is; files() from any thread. Keeps up to
// max_open descriptors open (least recently used closed first), creates missing folders,
// ends a torn last line with '\n' before appending. An absolute key names its file itself.
class PartitionedFileSink final : public LineSink {
public:
    explicit PartitionedFileSink(std::size_t max_open = 64);
    ~PartitionedFileSink() override;
    PartitionedFileSink(const PartitionedFileSink&) = delete;
    PartitionedFileSink& operator=(const PartitionedFileSink&) = delete;

    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;
    std::error_code reopen() noexcept override;
    void close(bool durable) noexcept override;
    std::vector<std::filesystem::path> files() const override;
    std::string describe(std::string_view key) const override;

private:
    struct State;
    const std::size_t max_open_;
    std::unique_ptr<State> s_;
};

}  // namespace jsonlw
