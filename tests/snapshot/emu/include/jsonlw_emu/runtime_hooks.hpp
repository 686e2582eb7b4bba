// The seam between the emulated CUDA runtime (runtime/: memory, streams, events, errors) and
// the SIMT executor (simt/: fibers, barriers, warp collectives). The launch macro in
// jsonlw_emu/launch.hpp calls enqueue_kernel(); the executor calls find_allocation() when a
// kernel touched memory it must not. Both are called from any host thread. Test-only: never
// installed, never linked into a library a user gets (docs/emulated-device.md).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace jsonlw::emu {

// One kernel launch as the stream runs it: executes the whole grid on the calling (stream)
// thread and returns cudaSuccess or the error the kernel ended with (cudaErrorIllegalAddress,
// cudaErrorLaunchFailure for a barrier/warp-collective misuse, ...).
using KernelWork = std::function<cudaError_t()>;

// Called by the launch macro on the launching thread, in launch order. An invalid stream, a
// sticky context error or an injected launch fault: returns that error and records it as the
// thread's last error (what cudaGetLastError() then returns), nothing enqueued. Else enqueues
// `work` on `stream` (nullptr: the legacy default stream) behind everything enqueued there
// before, and returns cudaSuccess. An error `work` returns becomes the context's sticky error:
// every later runtime call returns it, as on a GPU, until jsonlw::emu::reset_device().
cudaError_t enqueue_kernel(cudaStream_t stream, KernelWork work) noexcept;

// Records e as the calling thread's last error (a launch configuration the executor refused).
void set_last_error(cudaError_t e) noexcept;

// The device allocation whose guarded region holds addr (its user range and its guard pages),
// for a memcheck report after a fault. found == false: no device allocation near addr.
struct AllocationInfo {
    bool found = false;
    const void* base = nullptr;  // what cudaMalloc returned
    std::size_t size = 0;        // what was asked for
};
AllocationInfo find_allocation(const void* addr) noexcept;

}  // namespace jsonlw::emu
