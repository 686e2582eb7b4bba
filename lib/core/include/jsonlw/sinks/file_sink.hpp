// FileSink: the default destination — one file per writer in its directory, optionally
// rotated by size or age, written under an open suffix until closed. See docs/sinks.md and
// docs/shipping.md.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>
#include <jsonlw/sinks/rotation.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace jsonlw {

// What a file sink did besides appending (FileSink::counters(), PartitionedFileSink::
// counters(); any thread). With these, "records counted written" and "lines a reader finds"
// reconcile exactly: found = written - records_removed - records_moved - records_deleted.
struct FileSinkCounters {
    // A file found unlinked (rm, its folder removed) after or before an append: a new file
    // was opened at its path (its folder recreated).
    std::uint64_t reopened_removed = 0;
    // A file found renamed away (still linked) after an append: later batches go to a new
    // file at the path; what is in the moved file stays there.
    std::uint64_t reopened_moved = 0;
    // Records of a batch that landed in an unlinked file, appended again to the new one.
    std::uint64_t records_reappended = 0;
    // Records counted written earlier that were in a file someone else removed (noticed at
    // a reopen, or a closed file found missing when the sink closed).
    std::uint64_t records_removed = 0;
    // Records in files moved away while open: they are where the file was moved to.
    std::uint64_t records_moved = 0;
    // Failed appends whose partial bytes were cut off again (ftruncate to the length before).
    std::uint64_t appends_rolled_back = 0;
    // Retention (Retention): closed files deleted, their bytes and records.
    std::uint64_t files_deleted = 0;
    std::uint64_t bytes_deleted = 0;
    std::uint64_t records_deleted = 0;
};

// What a FileSink is told at construction.
struct FileSinkOptions {
    // Rotation, open suffix and retention (the same struct as WriterOptions::rotation).
    Rotation rotation{};
};

// Called by the writer's engine as every LineSink is (start() on the writer's start() thread,
// the rest on its I/O thread); files(), file_path() and files_closed() from any thread. Owns its
// descriptors; ignores the key of append().
class FileSink final : public LineSink {
public:
    explicit FileSink(FileSinkOptions opts = {});
    ~FileSink() override;
    FileSink(const FileSink&) = delete;
    FileSink& operator=(const FileSink&) = delete;

    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;
    std::error_code reopen() noexcept override;
    std::optional<std::chrono::steady_clock::time_point> next_tick() const noexcept override;
    void tick() noexcept override;
    void close(bool durable) noexcept override;
    std::vector<std::filesystem::path> files() const override;
    std::string describe(std::string_view key) const override;
    // The first file's final name (empty before start()).
    std::filesystem::path file_path() const override;
    // Files closed by rotation or reopen().
    std::uint64_t files_closed() const noexcept override;
    // Reopens, re-appended records, rolled-back appends, retention's deletions.
    FileSinkCounters counters() const;
    const FileSinkOptions& options() const noexcept { return opts_; }

private:
    struct State;
    const FileSinkOptions opts_;
    std::unique_ptr<State> s_;
};

}  // namespace jsonlw
