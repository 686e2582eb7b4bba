// two_thread_share() (core_share.hpp).
#include "core_share.hpp"

#include "clock.hpp"

#include <algorithm>
#include <array>
#include <thread>

namespace bench {

namespace {

// A dependent floating-point chain: no memory traffic, so only the core's time sets its pace.
void spin(long n)
{
    volatile double x = 1.0;
    for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
}

}  // namespace

double two_thread_share()
{
    constexpr long n = 20'000'000;  // ~0.1 s alone on the machines measured
    std::array<double, 3> shares{};
    for (double& share : shares) {
        auto t0 = SteadyClock::now();
        spin(n);
        const double alone = seconds_since(t0);
        t0 = SteadyClock::now();
        std::thread a([] { spin(n); });
        std::thread b([] { spin(n); });
        a.join();
        b.join();
        share = alone / seconds_since(t0);
    }
    std::sort(shares.begin(), shares.end());
    return shares[1];
}

}  // namespace bench
