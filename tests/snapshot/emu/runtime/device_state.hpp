// The emulated device's shared state: one context, its streams and events, and the checks
// every runtime call makes first. Internal to runtime/; every function here may be called
// from any host thread, and the ones named *_locked only with Device::mu held. The context is
// never destroyed (stream threads may outlive static destructors at exit).
#pragma once

#include <jsonlw_emu/faults.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jsonlw::emu::detail {

using Clock = std::chrono::steady_clock;

// A position in a stream: done once the stream has completed item `seq`.
struct Dep {
    std::shared_ptr<CUstream_st> stream;
    std::uint64_t seq = 0;
};

// One unit of stream work. An error `work` returns becomes the sticky error.
struct Item {
    std::uint64_t seq = 0;
    std::vector<Dep> deps;             // must all be done before the item starts
    std::function<cudaError_t()> work;  // empty: a marker (ordering only)
    bool host_func = false;
};

// What cudaEventRecord captured; shared with the marker that stamps its time.
struct Point {
    Dep at;
    Clock::time_point time{};
};

// An armed fail_allocation_after(); set by faults.cpp, counted down by each allocation.
struct AllocFault {
    int after = -1;  // successes left before the failure; -1: none armed
    cudaError_t error = cudaSuccess;
};

// The one context: every runtime call and every stream thread shares it under `mu`.
struct Device {
    std::mutex mu;
    std::condition_variable cv;  // any stream progress or fault change; waiters re-check
    cudaError_t sticky = cudaSuccess;
    int device_count = 1;
    int sm_count = 132;
    std::shared_ptr<CUstream_st> legacy;
    std::unordered_map<CUstream_st*, std::shared_ptr<CUstream_st>> streams;  // live handles
    std::vector<std::shared_ptr<CUstream_st>> running;  // stream threads alive (destroyed: draining)
    std::unordered_map<CUevent_st*, std::unique_ptr<CUevent_st>> events;
    // Faults (faults.hpp)
    bool stall_new = false;
    StallAt stall_new_at = StallAt::next_item;
    CUstream_st* last_created = nullptr;
    cudaError_t next_launch = cudaSuccess;
    cudaError_t next_kernel = cudaSuccess;
    AllocFault alloc_fault[2];  // indexed by Memory
};

Device& device() noexcept;

// The start values of the device and SM counts ($JSONLW_EMU_DEVICE_COUNT, $JSONLW_EMU_SM_COUNT).
int default_device_count() noexcept;
int default_sm_count() noexcept;

// Records e as the calling thread's last error (unless cudaSuccess) and returns it.
cudaError_t fail(cudaError_t e) noexcept;

// The checks every call but the error-name ones makes: a call from a host function
// (cudaErrorNotPermitted), no device (cudaErrorNoDevice). Returns cudaSuccess or fail(error).
cudaError_t gate() noexcept;

// gate(), then the sticky error: what a call that needs a working context checks first.
cudaError_t enter() noexcept;

// cudaSuccess, or the sticky error recorded as the thread's last error.
cudaError_t sticky_result() noexcept;

// True on a stream thread while it runs a host function.
bool in_host_func() noexcept;
void set_in_host_func(bool on) noexcept;

// The stream a handle names (nullptr or cudaStreamLegacy: the legacy stream); null if none.
std::shared_ptr<CUstream_st> resolve_locked(cudaStream_t handle);

// Appends item to s behind its earlier work, adding the legacy stream's implicit
// synchronization, and returns the item's seq.
std::uint64_t enqueue_locked(const std::shared_ptr<CUstream_st>& s, Item item);

bool done_locked(const Dep& d) noexcept;

// Blocks until d is done. Returns with the lock held.
void wait_locked(std::unique_lock<std::mutex>& lock, const Dep& d);

// Blocks until every stream has completed what was enqueued when called.
void synchronize_all_locked(std::unique_lock<std::mutex>& lock);

// Whether [p, p + n) lies inside one device allocation's user range / one host allocation.
bool device_range(const void* p, std::size_t n) noexcept;
bool pinned_range(const void* p, std::size_t n) noexcept;
bool is_device_pointer(const void* p) noexcept;

// Counts down the armed allocation fault of that kind: its error when this call must fail.
cudaError_t take_alloc_fault(Memory which) noexcept;

}  // namespace jsonlw::emu::detail

// A stream: an in-order queue of items run by its own thread (stream.cpp). Guarded by
// Device::mu.
struct CUstream_st {
    unsigned flags = cudaStreamDefault;
    bool legacy = false;
    bool destroyed = false;  // handle gone; the thread exits once the queue is empty
    bool stalled = false;
    jsonlw::emu::StallAt stall_at = jsonlw::emu::StallAt::next_item;
    std::deque<jsonlw::emu::detail::Item> queue;
    std::uint64_t enqueued = 0;   // seq of the last item enqueued
    std::uint64_t completed = 0;  // seq of the last item completed (items complete in order)
};

// An event: the last point recorded into it (none: complete). Guarded by Device::mu.
struct CUevent_st {
    unsigned flags = cudaEventDefault;
    std::shared_ptr<jsonlw::emu::detail::Point> point;
};
