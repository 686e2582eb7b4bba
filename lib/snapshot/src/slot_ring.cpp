#include "slot_ring.hpp"

#include <cstdlib>
#include <new>
#include <utility>

namespace jsonlw::snapshot::detail {

namespace {

class AlignedHostAllocator final : public HostAllocator {
public:
    void* allocate(std::size_t bytes) override
    {
        return ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{64});
    }
    void deallocate(void* p) noexcept override { ::operator delete(p, std::align_val_t{64}); }
};

}  // namespace

std::unique_ptr<HostAllocator> aligned_host_allocator()
{
    return std::make_unique<AlignedHostAllocator>();
}

std::int64_t steady_ns() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::shared_ptr<SlotRing> SlotRing::create(const RingLayout& layout,
                                           std::unique_ptr<HostAllocator> alloc, BatchSink sink)
{
    return std::shared_ptr<SlotRing>(new SlotRing(layout, std::move(alloc), std::move(sink)));
}

SlotRing::SlotRing(const RingLayout& layout, std::unique_ptr<HostAllocator> alloc, BatchSink sink)
    : layout_(layout), alloc_(std::move(alloc)), sink_(std::move(sink)),
      slots_(std::make_unique<Slot[]>(static_cast<std::size_t>(layout.slots)))
{
    // One block per slot: rows, then the FirstGenLogits entries, then the first-gen bytes
    // (64-byte aligned each), so a slot is one pinned allocation for the CUDA backend.
    auto round64 = [](std::size_t n) { return (n + 63) & ~std::size_t{63}; };
    const std::size_t rows_bytes = round64(sizeof(TokenSnapshot) * std::size_t(layout.max_rows));
    const std::size_t fg_bytes =
        round64(sizeof(FirstGenLogits) * std::size_t(layout.max_first_gen_rows));
    const std::size_t total = rows_bytes + fg_bytes + round64(layout.first_gen_pool_bytes);
    blocks_.reserve(std::size_t(layout.slots));
    try {
        for (int i = 0; i < layout.slots; ++i) {
            auto* base = static_cast<std::byte*>(alloc_->allocate(total));
            blocks_.push_back(base);
            SlotBuffers& b = slots_[i].buf;
            b.rows = reinterpret_cast<TokenSnapshot*>(base);
            b.first_gen = reinterpret_cast<FirstGenLogits*>(base + rows_bytes);
            b.first_gen_pool = layout.first_gen_pool_bytes ? base + rows_bytes + fg_bytes : nullptr;
            for (int r = 0; r < layout.max_first_gen_rows; ++r) new (&b.first_gen[r]) FirstGenLogits{};
        }
    } catch (...) {
        for (void* p : blocks_) alloc_->deallocate(p);
        throw;
    }
}

SlotRing::~SlotRing()
{
    for (void* p : blocks_) alloc_->deallocate(p);
}

int SlotRing::try_acquire() noexcept
{
    const int slot = static_cast<int>(next_acquire_ % std::uint64_t(layout_.slots));
    if (slots_[slot].state.load(std::memory_order_acquire) != Free) return -1;
    return slot;
}

int SlotRing::acquire(std::chrono::microseconds max_wait, std::int64_t* waited_ns) noexcept
{
    *waited_ns = 0;
    int slot = try_acquire();
    if (slot >= 0 || max_wait.count() <= 0) return slot;
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + max_wait;
    const int want = static_cast<int>(next_acquire_ % std::uint64_t(layout_.slots));
    try {
        // release() stores Free, then reads slot_waiters_; this side counts itself, then reads
        // the state under the mutex that release() notifies under: no wake-up is lost.
        std::unique_lock lock(slot_mutex_);
        slot_waiters_.fetch_add(1, std::memory_order_seq_cst);
        while (slots_[want].state.load(std::memory_order_seq_cst) != Free &&
               std::chrono::steady_clock::now() < deadline)
            slot_cv_.wait_until(lock, deadline);
        slot_waiters_.fetch_sub(1, std::memory_order_seq_cst);
    } catch (...) {  // the mutex could not be had: give up at once, the step is dropped
    }
    *waited_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
    return try_acquire();
}

void SlotRing::commit(int slot, int rows, int first_gen_rows, std::uint32_t first_gen_dropped,
                      std::int64_t t_enqueue_ns) noexcept
{
    Slot& s = slots_[slot];
    s.batch_seq = next_acquire_++;
    s.gap_before = std::exchange(pending_gap_, 0);
    s.rows = rows;
    s.first_gen_rows = first_gen_rows;
    s.first_gen_dropped = first_gen_dropped;
    s.t_enqueue_ns.store(t_enqueue_ns, std::memory_order_relaxed);
    s.state.store(Enqueued, std::memory_order_release);
    committed_.fetch_add(1, std::memory_order_acq_rel);
}

void SlotRing::abandon(int) noexcept
{
    // try_acquire() does not change the slot's state, so there is nothing to undo.
}

bool SlotRing::enqueued(int slot, std::int64_t* t_enqueue_ns) const noexcept
{
    const Slot& s = slots_[slot];
    if (s.state.load(std::memory_order_acquire) != Enqueued) return false;
    if (t_enqueue_ns) *t_enqueue_ns = s.t_enqueue_ns.load(std::memory_order_relaxed);
    return true;
}

bool SlotRing::complete(int slot, bool failed) noexcept
{
    if (!claim(slot)) return false;
    finish(slot, failed);
    return true;
}

bool SlotRing::claim(int slot) noexcept
{
    std::uint8_t expected = Enqueued;
    return slots_[slot].state.compare_exchange_strong(expected, Completing, std::memory_order_acq_rel);
}

void SlotRing::finish(int slot, bool failed) noexcept
{
    Slot& s = slots_[slot];
    s.failed.store(failed, std::memory_order_relaxed);
    s.state.store(Ready, std::memory_order_release);
    deliver();
}

void SlotRing::deliver() noexcept
{
    // One thread delivers at a time; a completion arriving meanwhile sets recheck_ so the
    // deliverer looks again before it leaves (or the next one takes over).
    for (;;) {
        // seq_cst throughout: "store my flag, then read theirs" on both sides must not reorder.
        if (delivering_.exchange(true)) {
            recheck_.store(true);
            if (delivering_.load()) return;
            continue;  // the deliverer left before seeing the note: take over
        }
        recheck_.store(false);
        std::uint64_t handed = 0;
        for (;;) {
            const int slot = static_cast<int>(next_deliver_ % std::uint64_t(layout_.slots));
            Slot& s = slots_[slot];
            if (s.state.load(std::memory_order_acquire) != Ready) break;
            s.state.store(Leased, std::memory_order_relaxed);
            leased_.fetch_add(1, std::memory_order_relaxed);
            ++next_deliver_;
            SnapshotBatch b;
            b.batch_seq = s.batch_seq;
            b.gap_before = s.gap_before;
            b.t_enqueue_ns = s.t_enqueue_ns.load(std::memory_order_relaxed);
            b.t_ready_ns = steady_ns();
            b.first_gen_dropped = s.first_gen_dropped;
            b.failed = s.failed.load(std::memory_order_relaxed);
            b.rows = std::span<const TokenSnapshot>(s.buf.rows, std::size_t(s.rows));
            b.first_gen =
                std::span<const FirstGenLogits>(s.buf.first_gen, std::size_t(s.first_gen_rows));
            if (b.failed) failed_.fetch_add(1, std::memory_order_relaxed);
            b.lease = SlotLease(shared_from_this(), slot);
            try {
                sink_(std::move(b));
            } catch (const std::exception& e) {
                sink_failures_.fetch_add(1, std::memory_order_relaxed);
                std::lock_guard lock(drain_mutex_);
                last_sink_error_ = e.what();
            } catch (...) {
                sink_failures_.fetch_add(1, std::memory_order_relaxed);
                std::lock_guard lock(drain_mutex_);
                last_sink_error_ = "the batch sink threw a non-standard exception";
            }
            delivered_.fetch_add(1, std::memory_order_acq_rel);
            ++handed;
        }
        delivering_.store(false);
        if (handed && drain_waiters_.load(std::memory_order_acquire) > 0) {
            std::lock_guard lock(drain_mutex_);
            drain_cv_.notify_all();
        }
        if (!recheck_.exchange(false)) return;
    }
}

void SlotRing::release(int slot) noexcept
{
    leased_.fetch_sub(1, std::memory_order_relaxed);
    slots_[slot].state.store(Free, std::memory_order_seq_cst);
    if (slot_waiters_.load(std::memory_order_seq_cst) > 0) {
        std::lock_guard lock(slot_mutex_);
        slot_cv_.notify_all();
    }
}

bool SlotRing::wait_delivered(std::chrono::steady_clock::time_point deadline)
{
    drain_waiters_.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock lock(drain_mutex_);
    // The notify is skipped when no waiter was registered before the delivery, so re-check on
    // a short period as well: a drain is rare and off the hot path.
    while (delivered() < committed()) {
        const auto step = std::min(deadline, std::chrono::steady_clock::now() +
                                                 std::chrono::milliseconds(5));
        drain_cv_.wait_until(lock, step);
        if (std::chrono::steady_clock::now() >= deadline) break;
    }
    drain_waiters_.fetch_sub(1, std::memory_order_acq_rel);
    return delivered() >= committed();
}

std::string SlotRing::last_sink_error() const
{
    std::lock_guard lock(drain_mutex_);
    return last_sink_error_;
}

}  // namespace jsonlw::snapshot::detail
