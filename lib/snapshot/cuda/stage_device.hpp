// StageDevice: what one CudaStage holds on the device, and the pinned ring its results are
// copied into: the copy stream, the kernels' scratch (shared by all slots, guarded by the
// scratch_free event) and, per ring slot, the slot's device results, its two events and its
// host function's context. Built by the stage's constructor (the thread that creates the
// stage); used by capture() on the decode thread and read by the watchdog (slot events, the
// ring). Its destructor frees nothing: the stage's teardown either calls release(), once the
// copy stream has completed, or leak(), when it has not.
#pragma once

#include "../src/slot_ring.hpp"
#include "cuda_errors.hpp"
#include "kernels.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace jsonlw::snapshot::detail {

// What a host function needs: plain pointers, valid until the stage synchronized its stream.
struct HostFnContext {
    SlotRing* ring = nullptr;
    int slot = 0;
};

// One ring slot's device side.
struct DeviceSlot {
    TokenSnapshot* rows = nullptr;
    std::byte* first_gen = nullptr;
    std::uint32_t* overflow = nullptr;
    cudaEvent_t computed = nullptr;
    cudaEvent_t copied = nullptr;
    HostFnContext ctx;
};

class StageDevice {
public:
    // On the current device. Throws std::runtime_error naming the CUDA call that failed
    // (std::bad_alloc for the pinned ring), after releasing what it had made.
    StageDevice(const SnapshotConfig& config, BatchSink sink);
    StageDevice(const StageDevice&) = delete;
    StageDevice& operator=(const StageDevice&) = delete;

    int device() const noexcept { return device_; }
    int sm_count() const noexcept { return sm_count_; }
    SlotRing& ring() const noexcept { return *ring_; }
    DeviceSlot& slot(int i) noexcept { return slots_[std::size_t(i)]; }
    cudaEvent_t slot_copied(int i) const noexcept { return slots_[std::size_t(i)].copied; }
    cudaEvent_t scratch_free() const noexcept { return scratch_free_; }
    cuda_detail::TilePartial* partials() const noexcept { return partials_; }
    std::uint64_t* candidates() const noexcept { return candidates_; }

    // Enqueues the copy of the slot's results into its pinned buffers on the copy stream, after
    // the work stream reaches this point: rows rows (the identity fields skipped: they stay on
    // the host) and fg_rows first-gen rows of item bytes. Nothing once status has failed.
    void enqueue_copies(int slot, cudaStream_t stream, int rows, int fg_rows, std::size_t item,
                        EnqueueStatus& status) noexcept;
    // Enqueues the host function that completes the slot once its copies landed.
    cudaError_t enqueue_completion(int slot) noexcept;

    // Polls the copy stream until it has run everything enqueued (true) or the deadline.
    bool wait_copies(std::chrono::steady_clock::time_point deadline) noexcept;

    // Frees every device object; the pinned slots stay with the ring until its last lease.
    void release() noexcept;
    // The copy stream missed its deadline: leaks whatever it may still touch (leak() in the
    // .cpp says what and why).
    void leak() noexcept;

private:
    int device_ = 0;
    int sm_count_ = 1;
    std::shared_ptr<SlotRing> ring_;
    cudaStream_t copy_stream_ = nullptr;
    cudaEvent_t scratch_free_ = nullptr;
    cuda_detail::TilePartial* partials_ = nullptr;
    std::uint64_t* candidates_ = nullptr;
    std::vector<DeviceSlot> slots_;
};

}  // namespace jsonlw::snapshot::detail
