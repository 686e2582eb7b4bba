// Clocks for the bench: steady_clock for runs, the thread's CPU time for one-thread loops, a
// cycle counter for timing one short call.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace bench {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_since(SteadyClock::time_point t0) noexcept
{
    return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID): a one-thread loop's cost without
// the time other processes on a shared machine took from it.
double thread_cpu_seconds() noexcept;
// CPU time of the whole process, every thread (CLOCK_PROCESS_CPUTIME_ID): what an idle
// writer's threads cost over a spell in which nothing else runs.
double process_cpu_seconds() noexcept;

// loop(n) called twice: loop(64) to warm up (a parser's buffers, the line buffer), then
// loop(iterations), whose thread CPU time is returned.
template <class Loop>
double cpu_seconds_after_warmup(std::size_t iterations, Loop&& loop)
{
    loop(std::size_t{64});
    const double t0 = thread_cpu_seconds();
    loop(iterations);
    return thread_cpu_seconds() - t0;
}

// Times regions of tens of nanoseconds: rdtsc (fenced, so the region cannot leak out of the
// timed window) when the CPU has an invariant TSC, else steady_clock. Calibrated once against
// steady_clock. Thread-safe after construction.
class TickClock {
public:
    static const TickClock& get();

    std::uint64_t start() const noexcept
    {
#if defined(__x86_64__)
        if (tsc_) {
            _mm_lfence();
            const std::uint64_t t = __rdtsc();
            _mm_lfence();
            return t;
        }
#endif
        return steady_ns();
    }
    std::uint64_t stop() const noexcept
    {
#if defined(__x86_64__)
        if (tsc_) {
            unsigned aux;
            const std::uint64_t t = __rdtscp(&aux);
            _mm_lfence();
            return t;
        }
#endif
        return steady_ns();
    }
    double to_ns(std::uint64_t ticks) const noexcept { return static_cast<double>(ticks) * ns_per_tick_; }
    std::string_view name() const noexcept { return tsc_ ? "rdtsc" : "steady_clock"; }
    // Median cost of an empty start()/stop() pair, in ns: included in every timed figure.
    double overhead_ns() const noexcept { return overhead_ns_; }

private:
    TickClock();
    static std::uint64_t steady_ns() noexcept
    {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
                .count());
    }

    bool tsc_ = false;
    double ns_per_tick_ = 1.0;
    double overhead_ns_ = 0.0;
};

// One step of a busy-wait: the CPU's pause hint (it frees the core's other hyperthread).
inline void spin_pause() noexcept
{
#if defined(__x86_64__)
    _mm_pause();
#endif
}

}  // namespace bench
