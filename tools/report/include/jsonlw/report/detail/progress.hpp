// Progress on stderr for the jsonlw command: a redrawn bar when stderr is a terminal, a plain
// line every few seconds otherwise (logs, CI), so results on stdout stay clean.
// Thread-safety: advance() may be called from any number of threads at once; start and
// finish() from one thread. The Progress must outlive every thread that advances it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace jsonlw::tools {

struct ProgressOptions {
    std::FILE* out = stderr;
    // Off: prints nothing at all (--quiet, tests).
    bool enabled = true;
    // Whether to draw a bar (redrawn in place); unset: when `out` is a terminal.
    std::optional<bool> bar{};
    // Bar redraws at most this often.
    std::chrono::milliseconds bar_interval{100};
    // Without a bar, one line at most this often.
    std::chrono::milliseconds line_interval{5000};
    // "bytes": amounts print as KB/MB/GB with a rate; "records": as plain counts.
    bool bytes = true;
};

// Counts work done towards a total and shows it. A total of 0 means "unknown": no bar, no
// percentage, only the amount and the rate.
class Progress {
public:
    Progress(std::string label, std::uint64_t total, ProgressOptions options = {});
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    ~Progress();

    // Adds `amount` done; draws when the interval has passed (cheap otherwise: one atomic add
    // and one clock read).
    void advance(std::uint64_t amount) noexcept;
    // Draws the final state once (the bar's line is ended with '\n'). Idempotent.
    void finish() noexcept;

    std::uint64_t done() const noexcept { return done_.load(std::memory_order_relaxed); }

private:
    void draw(bool final) noexcept;

    using Clock = std::chrono::steady_clock;
    const std::string label_;
    const std::uint64_t total_;
    const ProgressOptions options_;
    const bool bar_;
    const Clock::time_point started_;
    std::atomic<std::uint64_t> done_{0};
    std::atomic<std::int64_t> next_draw_ns_;  // since started_
    std::mutex draw_mu_;
    bool finished_ = false;
    bool drawn_ = false;
};

// "1.23 GB", "512 B": decimal units, as throughput figures are quoted.
std::string format_bytes(double bytes);

}  // namespace jsonlw::tools
