// FileSink: the default destination — one file per writer in its directory, optionally
// rotated by size or age, written under an open suffix until closed. See docs/sinks.md and
// docs/shipping.md.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace jsonlw {

struct FileSinkOptions {
    // Rotate once the file holds this many bytes (0: never). A group of lines is split at
    // line boundaries so that no file exceeds it; a single longer line gets a file of its own.
    std::uint64_t rotate_bytes = 0;
    // Rotate once the file has been open this long, whether lines arrive or not (0: never).
    std::chrono::milliseconds rotate_interval{0};
    // The suffix the file being written carries until it is closed or rotated (".open":
    // loaders that glob *.jsonl never read a file still being written). Default (nullopt):
    // ".open" when rotating, none otherwise. With a suffix or rotation files are numbered,
    // <stem>-<host>-<pid>-<UTC at open>-<000000, …>.jsonl, and start() renames the files of
    // this stem and host that an ended process left with the suffix; without, the one file is
    // <stem>-<host>-<pid>-<UTC>.jsonl.
    std::optional<std::string> open_suffix{};
};

// Called by the writer's engine as every LineSink is (start() on the writer's start() thread,
// the rest on its I/O thread); files(), path() and files_closed() from any thread. Owns its
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
    const std::filesystem::path& path() const noexcept;
    // Files closed by rotation or reopen().
    std::uint64_t files_closed() const noexcept;
    const FileSinkOptions& options() const noexcept { return opts_; }

private:
    struct State;
    const FileSinkOptions opts_;
    std::unique_ptr<State> s_;
};

}  // namespace jsonlw
