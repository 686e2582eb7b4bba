// SpaceWait: Overflow::block's producers waiting for room in the queue — wait() on the
// producer's thread, add_async() for async_submit() from any thread — and notify() from the
// I/O thread after each pop; the writer's shutdown releases them all. Owns the lock, the
// condition and the asynchronous retries; the queue it asks about is the caller's.
#pragma once

#include <jsonlw/detail/bounded_ring.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/writer_options.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace jsonlw::detail {

class SpaceWait {
public:
    using Retry = std::function<void()>;

    explicit SpaceWait(const WriterOptions& opts) noexcept
        : block_(opts.overflow == Overflow::block),
          capacity_(opts.queue_capacity),
          wake_free_(std::max<std::size_t>(1, opts.queue_capacity / 4))
    {
    }

    // I/O thread, after a pop: wakes the waiters once enough of the queue is free.
    void notify(const RingPositions& queue) noexcept;
    // The producer's thread: waits until the queue may have room, `detaching` is set or the
    // deadline passes. Returns false at the deadline with the queue still full. `counted`
    // runs once the caller is counted in waiting(), before it waits.
    bool wait(std::chrono::steady_clock::time_point deadline, const RingPositions& queue,
              const std::atomic<bool>& detaching, const std::function<void()>& counted) noexcept;
    // Any thread: how many producers wait (wait() and add_async()'s).
    int waiting() const noexcept { return waiters_.load(std::memory_order_seq_cst); }
    // Any thread: keeps `retry` for the next notify() and returns true; or, when the queue
    // has room now (or the writer is detaching), leaves it with the caller to run and
    // returns false.
    bool add_async(Retry& retry, const RingPositions* queue, const std::atomic<bool>& detaching);

    // --- the writer's shutdown ---
    // Wakes every wait(); they see `detaching`.
    void wake_all() noexcept;
    // The asynchronous retries, for the caller to run.
    std::vector<Retry> take_async() noexcept;

private:
    const bool block_;
    const std::size_t capacity_;
    // Free slots that wake the waiters (a quarter of the queue, at least 1).
    const std::size_t wake_free_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<int> waiters_{0};
    std::vector<Retry> async_;
};

}  // namespace jsonlw::detail
