// Fault injection (jsonlw_emu/faults.hpp): each function changes the device's state under its
// lock and wakes the stream threads so a released stall or a reset takes effect at once.
#include "device_state.hpp"

#include <jsonlw_emu/faults.hpp>

namespace jsonlw::emu {

using namespace detail;

namespace {

bool set_stall(cudaStream_t stream, bool on, StallAt at) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    const auto s = resolve_locked(stream);
    if (!s) return false;
    s->stalled = on;
    s->stall_at = at;
    d.cv.notify_all();
    return true;
}

void release_all_locked(Device& d)
{
    for (const auto& s : d.running) s->stalled = false;
    d.cv.notify_all();
}

}  // namespace

bool stall_stream(cudaStream_t stream, StallAt at) noexcept { return set_stall(stream, true, at); }

bool release_stream(cudaStream_t stream) noexcept { return set_stall(stream, false, StallAt::next_item); }

void stall_new_streams(bool on, StallAt at) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    d.stall_new = on;
    d.stall_new_at = at;
}

void release_all_streams() noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    release_all_locked(d);
}

cudaStream_t last_created_stream() noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    return d.last_created;
}

void fail_allocation_after(int n, Memory which, cudaError_t e) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    d.alloc_fault[int(which)] = AllocFault{n < 0 ? 0 : n, e};
}

void fail_next_launch(cudaError_t e) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    d.next_launch = e;
}

void fault_next_kernel(cudaError_t e) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    d.next_kernel = e;
}

void set_device_count(int n) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    d.device_count = n < 0 ? 0 : n;
}

void set_sm_count(int n) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    d.sm_count = n < 1 ? 1 : n;
}

void reset_device() noexcept
{
    (void)cudaGetLastError();
    Device& d = device();
    std::lock_guard lock(d.mu);
    d.sticky = cudaSuccess;
    d.stall_new = false;
    d.next_launch = cudaSuccess;
    d.next_kernel = cudaSuccess;
    d.alloc_fault[0] = d.alloc_fault[1] = AllocFault{};
    d.device_count = default_device_count();
    d.sm_count = default_sm_count();
    release_all_locked(d);
}

}  // namespace jsonlw::emu
