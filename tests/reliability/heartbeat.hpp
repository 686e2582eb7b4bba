// Heartbeat: a periodic timer on the writer's event loop that records how late each tick
// fires. A loop that something blocks (file I/O, fsync, a held lock) shows up as a late tick.
#pragma once

#include "wait.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>

namespace jsonlw_test {

class Heartbeat {
public:
    Heartbeat(boost::asio::any_io_executor ex, std::chrono::milliseconds period)
        : state_(std::make_shared<State>(ex, period))
    {
        boost::asio::post(ex, [s = state_] { schedule(s); });
    }
    Heartbeat(const Heartbeat&) = delete;
    Heartbeat& operator=(const Heartbeat&) = delete;
    ~Heartbeat() { stop(); }

    long ticks() const noexcept { return state_->ticks.load(); }
    // The latest any tick fired after its due time so far.
    std::chrono::milliseconds max_late() const noexcept
    {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::nanoseconds(state_->max_late_ns.load()));
    }
    // Waits (generous deadline) until `n` more ticks have fired.
    bool wait_ticks(long n) const
    {
        const long target = ticks() + n;
        return wait_until([&] { return ticks() >= target; });
    }
    // Cancels the timer on its loop and waits until the last handler has run.
    void stop()
    {
        if (state_->stopping.exchange(true)) return;
        boost::asio::post(state_->timer.get_executor(), [s = state_] { s->timer.cancel(); });
        wait_until([&] { return state_->done.load(); });
    }

private:
    using Clock = std::chrono::steady_clock;
    struct State {
        State(boost::asio::any_io_executor ex, std::chrono::milliseconds p) : timer(ex), period(p) {}
        boost::asio::steady_timer timer;
        std::chrono::milliseconds period;
        std::atomic<long> ticks{0};
        std::atomic<long long> max_late_ns{0};
        std::atomic<bool> stopping{false};
        std::atomic<bool> done{false};
    };

    static void schedule(const std::shared_ptr<State>& s)
    {
        if (s->stopping.load()) {
            s->done.store(true);
            return;
        }
        const auto due = Clock::now() + s->period;
        s->timer.expires_at(due);
        s->timer.async_wait([s, due](boost::system::error_code ec) {
            if (ec) {
                s->done.store(true);
                return;
            }
            const long long late = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       Clock::now() - due).count();
            long long prev = s->max_late_ns.load();
            while (late > prev && !s->max_late_ns.compare_exchange_weak(prev, late)) {
            }
            ++s->ticks;
            schedule(s);
        });
    }

    std::shared_ptr<State> state_;
};

}  // namespace jsonlw_test
