// One thread block on the emulated device: every GPU thread is a fiber on the calling OS
// thread, run until it blocks (a barrier, a warp collective, a scheduling point) or exits, in
// an order chosen from the schedule seed. Barriers and warp collectives are rendezvous of
// fibers, checked as compute-sanitizer's synccheck would (never a hang: a block that cannot go
// on is reported). Created and run by the grid runner on one OS thread; the fiber-side calls
// (barrier, collective, scheduling_point) come from its fibers, on that same thread.
#pragma once

#include "fiber_stacks.hpp"
#include "shared_check.hpp"

#include <cuda_runtime_api.h>
#include <jsonlw_emu/simt.hpp>

#include <boost/context/detail/fcontext.hpp>

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

namespace jsonlw::emu {

class BlockRun {
public:
    using Invoke = void (*)(const void*);

    BlockRun(FiberStacks& stacks, dim3 grid, dim3 block, uint3 block_idx, std::uint64_t seed,
             Invoke invoke, const void* closure);
    BlockRun(const BlockRun&) = delete;
    BlockRun& operator=(const BlockRun&) = delete;

    // Runs every thread to its end. false: the block failed; report() says why.
    bool run();
    const std::string& report() const noexcept { return report_; }

    // Fiber side: the current GPU thread is `me` (t_current).
    void barrier(ThreadState& me, std::source_location where);
    std::uint64_t collective(ThreadState& me, Collective kind, unsigned mask, std::uint64_t value,
                             int arg, int width, std::source_location where);
    void scheduling_point(ThreadState& me);
    // A device-side error other than a barrier or collective misuse (misaligned access).
    [[noreturn]] void fault(ThreadState& me, cudaError_t error, std::string why);
    cudaError_t error() const noexcept { return error_; }
    SharedCheck& shared() noexcept { return shared_; }

    // "block (x,y,z) thread (x,y,z)" of a thread, for reports.
    static std::string who(const ThreadState& t);

private:
    enum class State : std::uint8_t { runnable, running, at_barrier, in_collective, exited };
    struct Call {
        Collective kind{};
        unsigned mask = 0;
        int arg = 0;
        int width = 32;
        std::uint64_t value = 0;
        std::uint64_t result = 0;
        std::source_location where;
    };
    struct Lane {
        ThreadState ts;
        boost::context::detail::fcontext_t ctx = nullptr;
        State state = State::runnable;
        Call call;
    };

    static void entry(boost::context::detail::transfer_t t);
    void switch_out();
    [[noreturn]] void fail_here(std::string why);  // from a fiber: record, never resumed
    void on_exit(Lane& me);
    void release_barrier();
    void make_runnable(int lane);
    int pick();
    std::uint64_t next_random() noexcept;
    std::string describe_stuck() const;

    FiberStacks& stacks_;
    dim3 grid_, block_;
    uint3 block_idx_;
    std::uint64_t seed_;
    std::uint64_t rng_;
    Invoke invoke_;
    const void* closure_;
    SharedCheck& shared_;  // this OS thread's racecheck and shared-memory counts

    std::vector<Lane> lanes_;
    // Runnable threads. Seed 0: one FIFO (thread order). An even seed: one pool, a uniformly
    // random pick. An odd seed: a pool per warp and a random priority order of the warps; the
    // highest-priority warp with a runnable thread runs (random among its threads), so one warp
    // races ahead of the others between barriers, the order a missing barrier needs to show.
    std::vector<int> runnable_;
    std::size_t head_ = 0;
    bool by_warp_ = false;
    std::vector<std::vector<int>> warp_runnable_;
    std::vector<int> warp_order_;  // warps, highest priority first
    std::size_t runnable_count_ = 0;
    boost::context::detail::fcontext_t sched_ = nullptr;
    int live_ = 0;
    int arrived_ = 0;              // threads waiting at the barrier
    int exited_since_barrier_ = 0;  // threads that exited since the last barrier released
    std::source_location barrier_where_;
    bool failed_ = false;
    std::string report_;
    std::uint64_t collectives_ = 0;
    cudaError_t error_ = cudaErrorLaunchFailure;  // what a failure of this block reports  // completed, one per warp and call
};

}  // namespace jsonlw::emu
