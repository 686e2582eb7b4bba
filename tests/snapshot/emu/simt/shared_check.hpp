// racecheck and shared-memory accounting of the emulated device, after compute-sanitizer's
// racecheck (NVIDIA Compute Sanitizer docs, "Racecheck Tool"): between two barriers of a block,
// a write by one thread and a read or write of the same shared element by another is a hazard
// unless a warp collective or __syncwarp that both took part in orders them (vector clocks over
// the lanes of each warp); atomics are not hazards with each other. A hazard fails the launch
// with a report. Alongside, every access is grouped into warp-wide instructions for the bank
// conflict counts of jsonlw_emu/shared_report.hpp. One SharedCheck per OS thread, used by the
// block that thread runs (its fibers and its BlockRun); begin_launch/end_launch on the
// launching thread around the grid's blocks.
#pragma once

#include <jsonlw_emu/shared_memory.hpp>
#include <jsonlw_emu/shared_report.hpp>
#include <jsonlw_emu/simt.hpp>

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

namespace jsonlw::emu {

struct SharedCell;

class SharedCheck {
public:
    static SharedCheck& this_thread();

    // The launching thread, with every block of the grid between the two (one grid at a time).
    static void begin_launch(const char* kernel);
    static void end_launch();

    // The block side, on this OS thread.
    void begin_block(dim3 block, uint3 block_idx);
    void barrier();                              // a __syncthreads released: a new interval
    void collective(int warp_base, unsigned mask);  // a warp collective (or __syncwarp) completed
    void end_block();                             // adds the block's counts to the launch

    // A lane's access (record_shared_access); fails the block on a hazard or out of bounds.
    void access(ThreadState& me, SharedVarInfo& var, std::size_t index, SharedAccessKind kind,
                const std::source_location& where);

    // The warp-wide instructions one warp ran at one source site this interval, by occurrence:
    // the 4-byte words (indices in the variable) of the first lane to run each, packed as
    // first | count << 32 (0: none yet), and the words of lanes that touched others.
    struct WarpSite {
        std::vector<std::uint64_t> first;
        std::uint32_t used = 0;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> others;  // (occurrence, word)
    };
    // One source site of one variable: per lane, how often it ran it this interval.
    struct Site {
        std::vector<std::uint32_t> occurrence;  // by thread
        std::vector<WarpSite> warps;            // by warp
        bool touched = false;
    };

private:
    void check_race(ThreadState& me, SharedVarInfo& var, std::size_t index, SharedAccessKind kind,
                    const std::source_location& where, SharedCell& c, std::uint32_t my_warp);
    void count_instruction(int thread, SharedShadow& sh, const SharedVarInfo& var, std::size_t index,
                           SharedAccessKind kind, const std::source_location& where);
    [[noreturn, gnu::cold, gnu::noinline]] void out_of_bounds(ThreadState& me, const SharedVarInfo& var,
                                                              std::size_t index, SharedAccessKind kind,
                                                              const std::source_location& where);
    void enter_site(int thread, SharedShadow& sh, SharedAccessKind kind, const std::source_location& where);
    void flush_instructions();
    std::string thread_name(int linear) const;
    [[noreturn, gnu::cold, gnu::noinline]] void hazard(ThreadState& me, const SharedVarInfo& var, std::size_t index, const char* what,
                             int other, const std::source_location& other_where, const char* other_kind,
                             const char* my_kind, const std::source_location& where);
    // Vector clocks over the lanes of each warp, kept in two layers so that a full-warp
    // collective (nearly all of them) costs 32 steps, not 32 x 32: `full_` is what every lane of
    // the warp knew after its last full-warp collective, `part_` what a lane learned from
    // partial-mask ones since then (valid while part_gen_ equals the warp's full_gen_).
    std::uint32_t known(int thread, int lane) const noexcept
    {
        const std::size_t w = std::size_t(thread >> 5);
        const std::uint32_t f = full_[w * 32 + std::size_t(lane)];
        if (part_gen_[std::size_t(thread)] != full_gen_[w]) return f;
        const std::uint32_t p = part_[std::size_t(thread) * 32 + std::size_t(lane)];
        return p > f ? p : f;
    }
    // Whether an access `earlier_thread` made at its clock `earlier_epoch` happened before
    // what `later_thread` does now (within one barrier interval).
    bool ordered(int earlier_thread, std::uint32_t earlier_epoch, int later_thread) const noexcept
    {
        return (earlier_thread >> 5) == (later_thread >> 5) && known(later_thread, earlier_thread & 31) >= earlier_epoch;
    }

    dim3 block_{};
    uint3 block_idx_{};
    int threads_ = 0;
    std::size_t warps_ = 0;
    std::uint64_t interval_ = 0;    // this OS thread's barrier intervals, never reused
    std::vector<std::uint32_t> own_;       // by thread: its own clock
    std::vector<std::uint32_t> full_;      // by warp, 32 lanes
    std::vector<std::uint32_t> full_gen_;  // by warp: full-warp collectives so far
    std::vector<std::uint32_t> part_;      // by thread, 32 lanes
    std::vector<std::uint32_t> part_gen_;  // by thread
    std::vector<Site> sites_;        // by site id (SharedShadow maps a variable's sites to ids)
    std::vector<std::uint32_t> touched_;  // site ids used this interval
    std::vector<std::uint32_t> words_;    // scratch of flush_instructions
    // The site a thread ran last, for loops over one site (cleared when an interval ends; the
    // pointers are into buffers that only a new interval resizes).
    struct Hot {
        const SharedShadow* shadow = nullptr;
        const char* file = nullptr;
        std::uint32_t line = 0, column = 0;
        SharedAccessKind kind{};
        int thread = -1;
        std::uint32_t* occurrence = nullptr;
        WarpSite* warp = nullptr;
    } hot_;
    SharedCounters counts_;
    const char* kernel_ = nullptr;  // function of the first variable the block touched
};

}  // namespace jsonlw::emu
