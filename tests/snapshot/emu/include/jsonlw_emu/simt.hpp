// The SIMT executor's interface to device code (jsonlw_emu/device_builtins.hpp) and to tests:
// who the running GPU thread is, the block-wide barrier, warp collectives, scheduling points,
// and the executor's settings (schedule seed, worker threads). Device-side functions are called
// only from inside a kernel, on the fiber that runs the calling GPU thread; the settings from
// any host thread. Test-only (docs/emulated-device.md).
#pragma once

#include <jsonlw_emu/vector_types.hpp>

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>

namespace jsonlw::emu {

class BlockRun;

// One GPU thread, as its fiber sees it. Owned by the BlockRun that runs the block.
struct ThreadState {
    uint3 thread_idx{};
    uint3 block_idx{};
    dim3 block_dim;
    dim3 grid_dim;
    int linear = 0;  // x + y*bx + z*bx*by: the lane is linear % 32, the warp linear / 32
    BlockRun* block = nullptr;
};

// The GPU thread running on this OS thread (null outside a kernel).
extern constinit thread_local ThreadState* t_current;

enum class Collective : std::uint8_t { shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, any, all, syncwarp };
const char* collective_name(Collective c) noexcept;

// __syncthreads(): waits until every live thread of the block reached a barrier. Reported, never
// a hang: threads waiting at different barriers, threads that exit while others wait, a barrier
// some threads never reach (synccheck).
void block_barrier(std::source_location where);

// A warp collective with CUDA's *_sync semantics for 32-lane warps: every lane named in mask
// (the caller included) must call the same collective with the same mask; returns this lane's
// result (the source lane's value for shuffles; the ballot's bits for ballot/any/all). `value`
// carries up to 8 bytes. A mask that names an exited lane, a lane outside the block, or lanes
// that call something else is reported (the launch fails with cudaErrorLaunchFailure).
std::uint64_t warp_collective(Collective kind, unsigned mask, std::uint64_t value, int arg, int width,
                              std::source_location where);

// A load at p of an `align`-byte type that is not on its alignment grid: the launch fails with
// cudaErrorMisalignedAddress (memcheck), as the GPU's vector loads do. Never returns.
[[noreturn]] void misaligned_access(const void* p, std::size_t align, std::source_location where);

// A point where another thread of the block may run first (atomics): under a seed other than
// 0 the scheduler may switch here, so an order that a result depends on shows up.
void scheduling_point();

// --- settings (any host thread; they apply to launches that start afterwards) -------------
// Seed of the order in which a block's runnable threads run between barriers and collectives.
// 0 (the default, or $JSONLW_EMU_SEED): thread order. An even seed: each next thread drawn at
// random. An odd seed: the warps get a random priority and the highest-priority warp that can
// run does (one warp races ahead of the rest between barriers, as a missing barrier needs).
void set_schedule_seed(std::uint64_t seed) noexcept;
std::uint64_t schedule_seed() noexcept;
// OS threads that run a grid's blocks (default: $JSONLW_EMU_THREADS, else the cores, at most 8).
void set_worker_threads(int n) noexcept;

// What the last failed launch reported ("" when none failed since the last take), and clears it.
std::string take_kernel_report();
// Kernel launches that failed (barrier, warp, memory, exception) since the process started.
std::uint64_t kernel_failures() noexcept;
// Warp collectives completed (one per warp and call, whatever its mask) since the process
// started: what a kernel's path through its code costs, for tests that pin a fast path.
std::uint64_t warp_collectives() noexcept;

}  // namespace jsonlw::emu
