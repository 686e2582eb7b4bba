#include "clock.hpp"

#include <time.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace bench {

double thread_cpu_seconds() noexcept
{
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double process_cpu_seconds() noexcept
{
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
namespace {

bool invariant_tsc()
{
#if defined(__x86_64__)
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        return line.find(" constant_tsc") != std::string::npos &&
               line.find(" nonstop_tsc") != std::string::npos;
    }
#endif
    return false;
}

}  // namespace

const TickClock& TickClock::get()
{
    static const TickClock clock;
    return clock;
}

TickClock::TickClock()
{
    tsc_ = invariant_tsc();
    if (tsc_) {
        // 50 ms against steady_clock: good to well under 0.1 %.
        const auto t0 = SteadyClock::now();
        const std::uint64_t c0 = start();
        while (SteadyClock::now() - t0 < std::chrono::milliseconds(50)) std::this_thread::yield();
        const std::uint64_t c1 = stop();
        const double ns = std::chrono::duration<double, std::nano>(SteadyClock::now() - t0).count();
        ns_per_tick_ = c1 > c0 ? ns / static_cast<double>(c1 - c0) : 1.0;
    }
    std::vector<std::uint64_t> empty(4001);
    for (auto& e : empty) {
        const std::uint64_t a = start();
        const std::uint64_t b = stop();
        e = b - a;
    }
    std::nth_element(empty.begin(), empty.begin() + 2000, empty.end());
    overhead_ns_ = to_ns(empty[2000]);
}

}  // namespace bench
