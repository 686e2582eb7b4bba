// Producer threads that start together: the clock starts when they are released.
#pragma once

#include "clock.hpp"

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace bench {

// Runs body(producer, count, first, stride) on `producers` threads: producer k handles the
// records first, first + stride, ... (count of them), so together they cover 0 .. total-1 once
// and the file holds the same lines whatever the producer count. Returns when all are done;
// `t0` is when they were released.
template <class Body>
void run_producers(int producers, std::size_t total, SteadyClock::time_point& t0, Body body)
{
    std::atomic<bool> go{false};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    const auto p = static_cast<std::size_t>(producers);
    for (std::size_t k = 0; k < p; ++k) {
        const std::size_t count = total / p + (k < total % p ? 1 : 0);
        threads.emplace_back([&, k, count] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            body(static_cast<int>(k), count, k, p);
        });
    }
    while (ready.load() < producers) std::this_thread::yield();
    t0 = SteadyClock::now();
    go.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
}

// Runs body(producer, stop) on `producers` threads until `seconds` have passed since they were
// released (body polls `stop`). Returns when all are done.
template <class Body>
void run_producers_for(int producers, double seconds, SteadyClock::time_point& t0, Body body)
{
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < producers; ++k) {
        threads.emplace_back([&, k] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            body(k, stop);
        });
    }
    while (ready.load() < producers) std::this_thread::yield();
    t0 = SteadyClock::now();
    go.store(true, std::memory_order_release);
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<SteadyClock::duration>(
                                           std::chrono::duration<double>(seconds)));
    stop.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
}

// Paces one caller at `rate_per_s`: wait() spins until the next slot.
class Pacer {
public:
    explicit Pacer(double rate_per_s)
        : period_(std::chrono::duration_cast<SteadyClock::duration>(
              std::chrono::duration<double>(1.0 / rate_per_s))),
          next_(SteadyClock::now())
    {
    }
    void wait() noexcept
    {
        auto now = SteadyClock::now();
        // Descheduled for a while: start afresh rather than catch up in a burst.
        if (now - next_ > std::chrono::milliseconds(1)) next_ = now;
        while (now < next_) {
            spin_pause();
            now = SteadyClock::now();
        }
        next_ += period_;
    }

private:
    SteadyClock::duration period_;
    SteadyClock::time_point next_;
};

}  // namespace bench
