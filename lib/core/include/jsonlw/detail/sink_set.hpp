// SinkSet: the writer's one LineSink — the stack make_sink_stack() builds (sinks/sink_stack.hpp),
// which holds its destination and the files a write_batch() override names — and what the I/O
// thread does with it besides the append the engine makes: the append's count (through
// Accounting, fsync_batch's sync first), fsyncs, reopen, tick, close.
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
    // The stack lines go to; nullptr after the final close (nowhere to write). The engine
    // calls its append() itself (record_engine.hpp) and hands what it reports to counted().
    LineSink* target() const noexcept { return started_ ? sink_.get() : nullptr; }
    // What `to.append(key, lines)` reported, made exact and counted through Accounting: a
    // count that does not add up is clamped (a record is counted once); under
    // Durability::fsync_batch the records reported written count so only once `to.sync()`
    // succeeded, else unknown.
    AppendResult counted(LineSink& to, std::string_view key, const Lines& lines,
                         AppendResult r) noexcept;
    // `lines` that reached no sink, counted write_error with `ec`.
    AppendResult unwritten(const Lines& lines, std::error_code ec) noexcept;
    // The stack's key for a file a write_batch() override names (PathRouterSink::path_key());
    // an error when the stack has no path router (no override) or the path has no absolute form.
    std::error_code path_key(const std::filesystem::path& path, std::string& key) const noexcept;
    void after_batch() noexcept;
    // fsync of everything written (fsync_interval, close); a failure is logged (rate-limited)
    // and changes no count: fsync_batch syncs each append in counted().
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
    // The final close (after it, target() is nullptr); a no-op after the first.
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
