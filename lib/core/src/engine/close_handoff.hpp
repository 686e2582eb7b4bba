// CloseHandoff: who counts the unit of records in flight — the I/O thread, which publishes
// the unit's tally once its appends returned, or close, which counts it unknown when it runs
// out of time — decided exactly once; the consumer lock that keeps a unit's pop apart from
// close's and shutdown's discard; and the shutdown's one-time claim. Owned by
// WriterCore::Impl (lib/core/src/engine/); the I/O thread calls begin_unit(), publish_claim()
// and end_unit(), the strand abandon(), the writer's destructor begin_shutdown(); the rest
// from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>

namespace jsonlw::detail {

class CloseHandoff {
public:
    // --- the consumer lock: a unit's pop vs. a discard of the queue ---
    void lock() noexcept
    {
        while (consumer_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
    }
    void unlock() noexcept { consumer_.clear(std::memory_order_release); }

    // --- the I/O thread ---
    // Under the lock, after popping a unit of `n` records (0: nothing to write).
    void begin_unit(std::size_t n) noexcept
    {
        inflight_.store(n, std::memory_order_release);
        state_.store(in_flight, std::memory_order_release);
    }
    // The unit's appends start (appending() is true until end_unit()).
    void appending(bool on) noexcept { appending_.store(on, std::memory_order_release); }
    // After the unit's appends: true when the unit is still the I/O thread's to count; false
    // when close gave up on it and counted it unknown (abandon()).
    bool publish_claim() noexcept
    {
        int s = in_flight;
        return state_.compare_exchange_strong(s, published, std::memory_order_acq_rel);
    }
    void end_unit() noexcept { inflight_.store(0, std::memory_order_release); }

    // --- the strand: close ran out of time ---
    // Under the lock. Marks the writer abandoned (no unit is popped any more) and returns how
    // many records of the unit in flight close now counts unknown: all of them, or 0 when the
    // I/O thread already claimed them.
    std::size_t abandon() noexcept
    {
        abandoned_.store(true, std::memory_order_release);
        const std::size_t n = inflight_.load(std::memory_order_acquire);
        int s = in_flight;
        if (n > 0 && state_.compare_exchange_strong(s, given_up, std::memory_order_acq_rel))
            return n;
        return 0;
    }
    bool abandoned() const noexcept { return abandoned_.load(std::memory_order_acquire); }

    // --- the writer's destructor ---
    // True for the first call only.
    bool begin_shutdown() noexcept { return !shutting_down_.exchange(true); }
    void discarded_at_shutdown(std::size_t n) noexcept
    {
        discarded_.store(n, std::memory_order_release);
    }
    std::size_t discarded_at_shutdown() const noexcept
    {
        return discarded_.load(std::memory_order_acquire);
    }

    // --- any thread ---
    bool appending() const noexcept { return appending_.load(std::memory_order_acquire); }
    // Close gave up and the append it gave up on has not returned.
    bool append_outlived_close() const noexcept { return abandoned() && appending(); }

private:
    static constexpr int in_flight = 0, published = 1, given_up = 2;
    std::atomic_flag consumer_ = ATOMIC_FLAG_INIT;
    std::atomic<std::size_t> inflight_{0};
    std::atomic<int> state_{in_flight};
    std::atomic<bool> abandoned_{false};
    std::atomic<bool> appending_{false};
    std::atomic<bool> shutting_down_{false};
    std::atomic<std::size_t> discarded_{0};
};

}  // namespace jsonlw::detail
