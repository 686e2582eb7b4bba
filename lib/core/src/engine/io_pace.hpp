// IoPace: the drain's steps while records keep coming at a steady rate, paced on the I/O
// executor itself — a timer on a strand of it — so that a look costs the I/O thread one
// wake-up and the loop thread none (docs/queue.md, "The tail"). Before, each paced look
// woke the loop thread's timer, hopped to the I/O thread and hopped back: three wake-ups on
// a machine whose cores the callers share.
// Owned by Drain (made by Drain::start()). run() and, between runs, forget_rate() are
// called on the drain's strand (run() with the life guard entered for it); cut() on any
// thread; everything else runs on the I/O executor's strand. Owns the timer and its strand, the rate it measures between two
// waits, whether a run is in progress and whether it has been cut.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace jsonlw::detail {

class Drain;

class IoPace {
public:
    using clock = std::chrono::steady_clock;

    IoPace(Drain& drain, const boost::asio::any_io_executor& io_ex);
    IoPace(const IoPace&) = delete;
    IoPace& operator=(const IoPace&) = delete;

    // The drain's strand, after a step that left fewer than a batch waiting: from the I/O
    // executor, wait (wait()), step, and again, until a look finds the queue empty, the
    // writer detaching, or cut() — then Drain::end_pace_io() tells the drain's strand and
    // leaves the life guard the caller entered. One run at a time.
    void run(std::uint64_t consumed);
    // Any thread: the run in progress ends at its next look (a flush, a close, a reopen, a
    // burst, shutdown wants the drain). Returns whether a run is in progress: then the caller
    // has cancel() run on strand() to bring that look forward (Drain::cut_pace()).
    bool cut() noexcept;
    // strand(): the wait in progress ends now.
    void cancel() noexcept { timer_.cancel(); }
    const boost::asio::strand<boost::asio::any_io_executor>& strand() const noexcept
    {
        return strand_;
    }
    // The drain's strand, between runs: the next run measures the rate afresh (a spell of
    // records has ended).
    void forget_rate() noexcept { paced_at_.reset(); }

private:
    // The I/O executor's strand.
    void wait(std::uint64_t consumed);
    void look();
    void finish();

    Drain& drain_;
    boost::asio::strand<boost::asio::any_io_executor> strand_;
    boost::asio::steady_timer timer_;
    std::atomic<bool> running_{false};
    std::atomic<bool> cut_{false};
    // Where the last wait began (when, and the head then): the next measures the rate from it.
    std::optional<clock::time_point> paced_at_;
    std::uint64_t paced_head_ = 0;
};

}  // namespace jsonlw::detail
