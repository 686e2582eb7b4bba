// One caller's calls at a steady rate for the submit-cost scenario, one in `sample_every` timed
// and the allocations inside each counted on the caller's thread: the loop every submit-cost
// variant (jsonlw, fprintf + mutex, spdlog) runs, so they differ only in the call.
#pragma once

#include "clock.hpp"
#include "producers.hpp"
#include "runs.hpp"

#include "alloc_count.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bench {

// Not thread-safe: one caller's loop; step() may run on any one thread at a time (jsonlw's
// loop-thread variant runs each step as a handler).
class PacedCalls {
public:
    // At most rate x seconds calls, and no longer than `seconds`: a descheduled caller makes
    // fewer calls rather than stretching the run.
    PacedCalls(const SubmitCostSpec& spec, SubmitCostResult& out)
        : s_(spec), r_(out), pacer_(spec.rate_per_s),
          limit_(static_cast<std::size_t>(spec.rate_per_s * spec.seconds))
    {
        // Written through once, so that recording a sample never takes a page fault that
        // the caller's thread would then be charged with.
        for (std::vector<double>* v : {&r_.ns, &r_.floor_ns}) {
            if (v == &r_.floor_ns && !s_.beside_floor) break;
            v->resize(limit_ / s_.sample_every + 1);
            v->clear();
        }
        t0_ = SteadyClock::now();
        deadline_ = t0_ + std::chrono::duration_cast<SteadyClock::duration>(
                              std::chrono::duration<double>(s_.seconds));
    }

    bool more() const noexcept
    {
        return i_ < limit_ && (i_ % 256 != 0 || SteadyClock::now() < deadline_);
    }

    // The next call's index (0 for the first, counting the warm-up's).
    std::size_t index() const noexcept { return i_; }

    // Waits for the next slot, then make_call(i) builds the call (untimed: the record is made
    // before it), and the call runs, timed if sampled (into `timed` when given, else the
    // result's `ns`); it returns false when refused.
    template <class MakeCall>
    void step(MakeCall&& make_call, std::vector<double>* timed = nullptr)
    {
        pacer_.wait();
        auto call = make_call(i_);
        const std::uint64_t a0 = jsonlw_test::allocations_on_this_thread();
        bool ok;
        if (i_ >= s_.warmup_calls && i_ % s_.sample_every == 0) {
            const std::uint64_t c0 = clk_.start();
            ok = call();
            const std::uint64_t c1 = clk_.stop();
            (timed ? *timed : r_.ns).push_back(clk_.to_ns(c1 - c0));
        } else {
            ok = call();
        }
        (i_ >= s_.warmup_calls ? r_.allocations : r_.warmup_allocations) +=
            jsonlw_test::allocations_on_this_thread() - a0;
        if (!ok) ++r_.refused;
        // The caller's page faults after the warm-up: read every 256 calls (a system call,
        // between two calls, never inside one), on the thread that makes the calls.
        if (i_ == s_.warmup_calls) faults0_ = faults_now();
        else if (i_ > s_.warmup_calls && i_ % 256 == 0) r_.minor_faults = faults_now() - faults0_;
        ++i_;
    }

    // Records the calls made and the rate achieved.
    void finish()
    {
        r_.calls = i_;
        r_.achieved_rate = static_cast<double>(i_) / seconds_since(t0_);
    }

private:
    static std::uint64_t faults_now() noexcept
    {
        rusage u{};
        getrusage(RUSAGE_THREAD, &u);
        return static_cast<std::uint64_t>(u.ru_minflt + u.ru_majflt);
    }

    std::uint64_t faults0_ = 0;
    const SubmitCostSpec& s_;
    SubmitCostResult& r_;
    const TickClock& clk_ = TickClock::get();
    Pacer pacer_;
    std::size_t limit_;
    std::size_t i_ = 0;
    SteadyClock::time_point t0_, deadline_;
};

}  // namespace bench
