// SlotRing: the N slots a stage's steps go through, FREE -> ENQUEUED -> READY -> LEASED -> FREE
// (COMPLETING between ENQUEUED and READY while complete() records the outcome).
// Steps use slots round-robin (step n in slot n % N), so completion in any order is delivered
// in capture order. Shared by every backend; memory comes from a HostAllocator (aligned host
// memory for the CPU backend, pinned for CUDA) and is allocated once.
//
// Threads: try_acquire/acquire/commit/abandon/record_drop on the capturing thread only; complete()
// on any thread (a CUDA host function, the watchdog, the capturing thread); release() on any
// thread (a SlotLease). The sink is called by whichever thread wins delivery, never two at once.
#pragma once

#include <jsonlw/snapshot/stage.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace jsonlw::snapshot::detail {

// Where slot memory comes from. deallocate may run after the stage is gone (a lease kept the
// ring alive), on any thread.
class HostAllocator {
public:
    virtual ~HostAllocator() = default;
    virtual void* allocate(std::size_t bytes) = 0;  // throws std::bad_alloc on failure
    virtual void deallocate(void* p) noexcept = 0;
};
std::unique_ptr<HostAllocator> aligned_host_allocator();  // 64-byte aligned operator new

// The clock of commit()'s t_enqueue_ns and of a batch's times: steady_clock, in ns.
std::int64_t steady_ns() noexcept;

struct RingLayout {
    int slots = 4;
    int max_rows = 512;
    int max_first_gen_rows = 0;          // FirstGenLogits entries per slot
    std::size_t first_gen_pool_bytes = 0;  // first-gen bytes per slot
};

// The host-visible memory of one slot.
struct SlotBuffers {
    TokenSnapshot* rows = nullptr;        // layout.max_rows entries
    std::byte* first_gen_pool = nullptr;  // layout.first_gen_pool_bytes
    FirstGenLogits* first_gen = nullptr;  // layout.max_first_gen_rows entries
};

class SlotRing : public std::enable_shared_from_this<SlotRing> {
public:
    enum State : std::uint8_t { Free, Enqueued, Completing, Ready, Leased };

    static std::shared_ptr<SlotRing> create(const RingLayout& layout,
                                            std::unique_ptr<HostAllocator> alloc, BatchSink sink);
    ~SlotRing();
    SlotRing(const SlotRing&) = delete;
    SlotRing& operator=(const SlotRing&) = delete;

    const RingLayout& layout() const noexcept { return layout_; }
    const SlotBuffers& buffers(int slot) const noexcept { return slots_[slot].buf; }

    // --- the capturing thread ---
    // The slot for the next step, or -1 when it is still in use (the step must be dropped).
    int try_acquire() noexcept;
    // try_acquire(), waiting up to max_wait for the slot to be released. *waited_ns gets
    // how long it waited (0 when the slot was free at once).
    int acquire(std::chrono::microseconds max_wait, std::int64_t* waited_ns) noexcept;
    // The step in `slot` is enqueued: rows and first-gen entries are (or will be) in its buffers.
    void commit(int slot, int rows, int first_gen_rows, std::uint32_t first_gen_dropped,
                std::int64_t t_enqueue_ns) noexcept;
    // An acquired slot is not used after all (the step was invalid): back to FREE.
    void abandon(int slot) noexcept;
    // A step was dropped: the next committed batch carries it in gap_before.
    void record_drop() noexcept { ++pending_gap_; }

    // --- any thread ---
    // The slot's results are on the host (failed: the device failed the step). Delivers, in
    // order, every batch that is ready. Idempotent per commit: a second call for the same
    // commit (host function and watchdog racing) returns false and does nothing.
    bool complete(int slot, bool failed) noexcept;
    // complete() in two steps, for a completer that must count its win before the batch is
    // handed on (the CUDA watchdog: a sink that reads stats() on delivery sees the count):
    // claim() is true for exactly one caller per commit; that caller then calls finish().
    bool claim(int slot) noexcept;
    void finish(int slot, bool failed) noexcept;
    // Time the slot was committed (steady ns), and whether it is still waiting for complete().
    bool enqueued(int slot, std::int64_t* t_enqueue_ns) const noexcept;
    void release(int slot) noexcept;  // from SlotLease

    // Blocks until every committed batch has been delivered, or the deadline.
    bool wait_delivered(std::chrono::steady_clock::time_point deadline);

    std::uint64_t committed() const noexcept { return committed_.load(std::memory_order_acquire); }
    std::uint64_t delivered() const noexcept { return delivered_.load(std::memory_order_acquire); }
    std::uint64_t failed_batches() const noexcept { return failed_.load(std::memory_order_relaxed); }
    std::uint64_t sink_failures() const noexcept { return sink_failures_.load(std::memory_order_relaxed); }
    std::uint64_t leased() const noexcept { return leased_.load(std::memory_order_relaxed); }
    int slot_waiters() const noexcept { return slot_waiters_.load(std::memory_order_acquire); }
    std::string last_sink_error() const;

private:
    SlotRing(const RingLayout& layout, std::unique_ptr<HostAllocator> alloc, BatchSink sink);
    void deliver() noexcept;

    struct Slot {
        std::atomic<std::uint8_t> state{Free};
        std::atomic<bool> failed{false};
        SlotBuffers buf{};
        std::uint64_t batch_seq = 0;
        std::uint64_t gap_before = 0;
        int rows = 0;
        int first_gen_rows = 0;
        std::uint32_t first_gen_dropped = 0;
        std::atomic<std::int64_t> t_enqueue_ns{0};
    };

    RingLayout layout_;
    std::unique_ptr<HostAllocator> alloc_;
    BatchSink sink_;
    std::unique_ptr<Slot[]> slots_;
    std::vector<void*> blocks_;

    // capturing thread only
    std::uint64_t next_acquire_ = 0;
    std::uint64_t pending_gap_ = 0;

    std::atomic<std::uint64_t> committed_{0};
    std::atomic<std::uint64_t> delivered_{0};
    std::atomic<std::uint64_t> failed_{0};
    std::atomic<std::uint64_t> sink_failures_{0};
    std::atomic<std::uint64_t> leased_{0};
    // delivery election: one thread delivers; others leave a note for it to look again
    std::atomic<bool> delivering_{false};
    std::atomic<bool> recheck_{false};
    std::uint64_t next_deliver_ = 0;  // owned by the delivering thread

    std::atomic<int> slot_waiters_{0};  // the capturing thread, waiting in acquire()
    std::atomic<int> drain_waiters_{0};
    mutable std::mutex drain_mutex_;
    std::condition_variable drain_cv_;
    std::mutex slot_mutex_;            // acquire()'s wait for a released slot
    std::condition_variable slot_cv_;
    std::string last_sink_error_;  // under drain_mutex_
};

}  // namespace jsonlw::snapshot::detail
