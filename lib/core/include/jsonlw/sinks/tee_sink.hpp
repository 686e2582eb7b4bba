// TeeSink: the same lines to several sinks (a file and Kafka), each branch counted on its
// own. The first branch is the writer's record of truth: its result — and, under
// Durability::fsync_batch, its sync() — is what the writer counts, and its file_path() and
// files_closed() are the writer's; the others' outcomes are in branch(). See docs/sinks.md.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace jsonlw {

// Called by the writer's engine as every LineSink is, and forwards each call to every
// branch in order; branch() from any thread. Owns (shares) its branches.
class TeeSink final : public LineSink {
public:
    // What became of the records sent to one branch.
    // Under fsync_batch a branch's failed sync() moves the records it reported written since
    // its last sync() from written to unknown, as the writer counts the first branch's.
    struct BranchCounts {
        std::uint64_t written = 0, failed = 0, unknown = 0, bytes = 0;
        std::uint64_t sync_failures = 0;  // sync() calls that returned an error
    };

    explicit TeeSink(std::vector<std::shared_ptr<LineSink>> branches);

    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;
    std::error_code reopen() noexcept override;
    std::optional<std::chrono::steady_clock::time_point> next_tick() const noexcept override;
    void tick() noexcept override;
    void after_batch() noexcept override;
    void close(bool durable) noexcept override;
    void close_abandoned() noexcept override;
    std::vector<std::filesystem::path> files() const override;
    std::filesystem::path file_path() const override { return branches_[0]->file_path(); }
    std::uint64_t files_closed() const noexcept override { return branches_[0]->files_closed(); }
    std::string describe(std::string_view key) const override;

    std::size_t size() const noexcept { return branches_.size(); }
    const std::shared_ptr<LineSink>& sink(std::size_t i) const noexcept { return branches_[i]; }
    BranchCounts branch(std::size_t i) const noexcept;

private:
    struct Counts {
        std::atomic<std::uint64_t> written{0}, failed{0}, unknown{0}, bytes{0}, sync_failures{0};
        std::uint64_t unsynced = 0;  // written since the last sync() (I/O thread)
    };
    std::vector<std::shared_ptr<LineSink>> branches_;
    std::unique_ptr<Counts[]> counts_;
    Durability durability_ = Durability::none;  // set by start()
};

}  // namespace jsonlw
