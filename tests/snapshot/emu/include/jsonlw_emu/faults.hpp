// Faults a test injects into the emulated CUDA runtime (tests/snapshot/emu/runtime/): streams
// that stop, allocations and launches that fail, kernels that fault, a machine without a
// device. Any host thread may call these at any time; each takes effect for calls that start
// after it returns. reset_device() puts everything back as at start. Test-only.
#pragma once

#include <cuda_runtime_api.h>

namespace jsonlw::emu {

// Where a stalled stream stops. Work already running finishes either way.
enum class StallAt {
    next_item,       // before the next item of any kind: nothing more runs, events stay pending
    next_host_func,  // before the next cudaLaunchHostFunc only: copies, kernels and event
                     // records before it complete, so its events are done and its host
                     // function late (what the stage's watchdog is for)
};

// Holds `stream` (nullptr: the legacy default stream) at `at` until release_stream().
// false: not a live stream handle.
bool stall_stream(cudaStream_t stream, StallAt at = StallAt::next_item) noexcept;
bool release_stream(cudaStream_t stream) noexcept;

// While on, every stream cudaStreamCreate* makes starts stalled at `at`: a way to stall the
// streams a component creates inside itself (the stage's copy stream).
void stall_new_streams(bool on, StallAt at = StallAt::next_item) noexcept;

// Releases every stalled stream, the legacy stream included.
void release_all_streams() noexcept;

// The stream cudaStreamCreate* made last (nullptr: none yet, or destroyed since).
cudaStream_t last_created_stream() noexcept;

enum class Memory {
    device,  // cudaMalloc
    host,    // cudaHostAlloc, cudaMallocHost
};

// The allocation of that kind after the next n that succeed fails with e (once; later ones
// succeed). Nothing is allocated by the failing call; the error is not sticky.
void fail_allocation_after(int n, Memory which = Memory::device,
                           cudaError_t e = cudaErrorMemoryAllocation) noexcept;

// The next enqueue_kernel (a launch) returns e and enqueues nothing, as a refused launch
// configuration does; the error is the launching thread's last error, not sticky.
void fail_next_launch(cudaError_t e) noexcept;

// The next kernel launched is enqueued as usual but ends with e instead of running, as a kernel
// that faulted on the device: e becomes the context's sticky error when the stream gets there.
void fault_next_kernel(cudaError_t e) noexcept;

// cudaGetDeviceCount reports n devices (at start 1, or $JSONLW_EMU_DEVICE_COUNT). With 0 it
// returns cudaErrorNoDevice, and every other call but the error-name ones does too.
void set_device_count(int n) noexcept;

// cudaDevAttrMultiProcessorCount (at start 132 as an H200, or $JSONLW_EMU_SM_COUNT).
void set_sm_count(int n) noexcept;

// Clears the sticky error and the calling thread's last error, every pending fault above,
// releases every stalled stream and stops stalling new ones, restores the device and SM counts
// to their start values. Allocations, streams and events stay valid.
void reset_device() noexcept;

}  // namespace jsonlw::emu
