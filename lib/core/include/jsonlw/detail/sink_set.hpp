// SinkSet: the writer's one LineSink — the stack make_sink_stack() builds (sinks/sink_stack.hpp),
// which holds its destination and the files a write_batch() override names — and what the I/O
// thread does with it: appends (counted through Accounting), fsyncs, reopen, tick, close.
// start() runs on start()'s caller before the drain; the rest on the I/O thread, one at a
// time, but for files() and files_closed() (any thread) and request_reopen(),
// reopen_requested(), close_abandoned() (the strand). Owns the stack; borrows the options and
// the accounting, which outlive it.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/sinks/line_sink.hpp>
#include <jsonlw/writer_options.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace jsonlw::detail {

class Accounting;

class SinkSet {
public:
    using time_point = std::chrono::steady_clock::time_point;

    SinkSet(const WriterOptions& opts, Accounting& accounting) noexcept
        : opts_(opts), accounting_(accounting)
    {
    }
    SinkSet(const SinkSet&) = delete;
    SinkSet& operator=(const SinkSet&) = delete;

    // --- start()'s caller, once ---
    // Makes the stack and starts it; an error stops the writer. `path_files`: whether the
    // writer may name files with append() (make_sink_stack()).
    std::error_code start(const SinkContext& ctx, bool path_files);
    std::string describe() const { return sink_->describe({}); }
    // The stack's file_path() (a FileSink's first file; empty for a sink that is not one file).
    std::filesystem::path file_path() const;

    // --- I/O thread ---
    // Sends lines to the sink under `key` (empty for its one destination).
    AppendResult write_lines(std::string_view key, const Lines& lines) noexcept;
    // Appends to a file named by a write_batch() override, through the stack (under its
    // PathRouterSink::path_key()).
    AppendResult append(const std::filesystem::path& path, const Lines& lines) noexcept;
    void after_batch() noexcept;
    // fsync of everything written (fsync_interval, close); a failure is logged (rate-limited)
    // and changes no count: fsync_batch syncs each append in write_to().
    void sync() noexcept;
    // Durability::fsync_interval: when the lines written since the last sync() are due.
    std::optional<time_point> sync_due() const noexcept;
    bool sync_overdue() const noexcept;
    // A reopen requested by request_reopen(); reopen_error() is its result (empty when none
    // was requested).
    void reopen() noexcept;
    std::error_code reopen_error() const noexcept { return reopen_ec_; }
    void tick() noexcept;
    std::optional<time_point> next_tick() const noexcept;
    // The final close (after it, write_lines() fails its lines); a no-op after the first.
    void close(bool durable) noexcept;

    // --- the strand ---
    void request_reopen() noexcept { reopen_requested_.store(true, std::memory_order_release); }
    bool reopen_requested() const noexcept
    {
        return reopen_requested_.load(std::memory_order_acquire);
    }
    // Close ran out of time: tells the sink, which must not block.
    void close_abandoned() noexcept;

    // --- any thread ---
    std::vector<std::filesystem::path> files() const;
    std::uint64_t files_closed() const noexcept;

private:
    // Hands `lines` to `to` under `key` and counts what it reports; under fsync_batch, the
    // records it reports written count so once `to.sync()` succeeded (else unknown).
    AppendResult write_to(LineSink& to, std::string_view key, const Lines& lines) noexcept;
    // `lines` that reached no sink, counted write_error with `ec`.
    AppendResult unwritten(const Lines& lines, std::error_code ec) noexcept;

    const WriterOptions& opts_;
    Accounting& accounting_;
    bool path_files_ = false;  // set by start(): the stack has a PathRouterSink
    // Set by start() before anything else of the writer runs, then never again.
    std::shared_ptr<LineSink> sink_;
    bool started_ = false;                    // I/O thread (and start())
    bool started_once_ = false;               // set by start() before the drain runs; never cleared
    bool unsynced_ = false;                   // lines written since the last sync()
    time_point last_sync_{};
    std::atomic<bool> reopen_requested_{false};
    std::error_code reopen_ec_;  // the last reopen's, I/O task -> strand
};

}  // namespace jsonlw::detail
