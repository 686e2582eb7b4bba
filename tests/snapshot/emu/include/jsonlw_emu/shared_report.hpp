// What each launch did with shared memory, as Nsight Compute's shared-memory metrics would show
// it (l1tex__data_pipe_lsu_wavefronts_mem_shared, ..._bank_conflicts): per-thread accesses,
// warp-wide shared instructions and their bank conflicts on 32 banks of 4 bytes, barriers and
// warp collectives. Only the accesses kernels make through JSONLW_SHARED variables
// (jsonlw_emu/shared_memory.hpp) are seen. Any host thread; records of finished launches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::emu {

// One launch's shared-memory counts, summed over its blocks.
struct SharedCounters {
    std::uint64_t launch = 0;  // kernel_launches() ordinal of the launch (jsonlw_emu/launch_count.hpp)
    std::string kernel;        // as the launch wrote it ("partial_kernel<DT, 2>"), else the
                               // function that declares the shared variables it touched
    std::uint64_t blocks = 0;
    // Per-thread accesses (an 8-byte element is one access).
    std::uint64_t loads = 0, stores = 0, atomics = 0;
    // Warp-wide shared instructions: the n-th execution of one source site by the lanes of a
    // warp between two barriers is one instruction (lanes in lockstep, as SIMT runs them).
    std::uint64_t instructions = 0;
    // Per instruction, the most distinct 4-byte words that fall in one bank (bank = word % 32):
    // the wavefronts it takes. `ideal` is ceil(distinct words / 32), what it would take without
    // conflicts (2 for 32 lanes of 8-byte elements in a row); a lane-wide broadcast is 1.
    std::uint64_t wavefronts = 0, ideal_wavefronts = 0;
    std::uint64_t conflicted_instructions = 0;  // instructions with wavefronts > ideal
    std::uint32_t max_ways = 0;                 // the largest wavefronts of one instruction
    std::uint64_t barriers = 0;                 // __syncthreads released, summed over blocks
    std::uint64_t collectives = 0;              // warp collectives and __syncwarp completed

    std::uint64_t extra_wavefronts() const noexcept { return wavefronts - ideal_wavefronts; }
};

// The records of launches that finished since the last take, oldest first (at most the last
// 4096 are kept); a launch's record is complete when its stream has run past it.
std::vector<SharedCounters> take_shared_counters();

}  // namespace jsonlw::emu
