// FileSink::State: the file a FileSink writes — its name, whether it exists yet, its size and
// age for rotation, the files listed so far — and the appender and retention keeper that
// serve it. Owned by FileSink (pimpl); file_sink.cpp runs its life cycle (naming, rotation,
// sealing, retention), file_append.cpp its append; every function runs on the sink's I/O
// thread but for the file list (under files_mu) and files_closed (any thread).
#pragma once

#include <jsonlw/sinks/file_sink.hpp>

#include "file_append.hpp"
#include "path_notices.hpp"
#include "retention_keeper.hpp"
#include "sink_counters.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace jsonlw {

struct FileSink::State {
    SinkContext ctx;
    detail::SinkCounters counters;
    std::optional<detail::FileAppender> appender;
    std::optional<detail::RetentionKeeper> keeper;
    std::uint64_t closed_records = 0;  // of the current file, when its descriptor closed
    detail::PathNotices notices;  // removed / moved-away warnings, once each
    bool rotating = false;       // numbered files: rotation or an open suffix
    std::string prefix;          // <stem>-<host>-<pid>-
    std::string suffix;          // the open suffix ("" for none)
    std::filesystem::path first;  // file_path(): the first file's final name
    // The file being written (rotating), or the one file.
    std::uint64_t index = 0;
    std::filesystem::path final_path, open_path;
    bool created = false;  // an append opened it: it exists on disk
    bool sealed = false;   // closed for good
    std::size_t group_offset = 0;  // lines of the append() in progress before this part
    bool told_closed = false;      // the one file (not rotating): its close event was sent
    std::uint64_t size = 0;
    std::chrono::steady_clock::time_point opened{};
    std::atomic<std::uint64_t> files_closed{0};
    mutable std::mutex files_mu;
    std::vector<std::filesystem::path> file_list;  // under files_mu

    bool durable() const noexcept { return ctx.durability != Durability::none; }
    void name(std::uint64_t i, std::time_t when);
    void list_file(const std::filesystem::path& p, bool replace_last);
    std::error_code close_current(bool durable) noexcept;
    std::error_code rotate() noexcept;
    void seal(bool durable) noexcept;
    void seal_stale() noexcept;
    AppendResult append_current(const Lines& lines) noexcept;
    void retire(const std::filesystem::path& p) noexcept;
    void apply_retention() noexcept;
};

}  // namespace jsonlw
