// Overflow::block: producers waiting for room (wait_for_space() on the producer's thread,
// add_space_waiter() for async_submit()) and the I/O thread waking them after a pop.
#include "space_wait.hpp"

#include "writer_core_impl.hpp"

#include <algorithm>

namespace jsonlw::detail {

void SpaceWait::notify(const RingPositions& queue) noexcept
{
    if (!block_) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) == 0) return;
    // Hysteresis: a producer blocked on a full queue is woken once a quarter of it is
    // free, not after every batch — one sleep and wake-up (two context switches) per
    // quarter of the queue instead of per batch_records. (Close and shutdown wake
    // everyone anyway.)
    if (queue.size() + wake_free_ > std::max<std::size_t>(capacity_, 1)) return;
    std::vector<Retry> retries;
    {
        std::lock_guard lk(mu_);
        cv_.notify_all();
        retries.swap(async_);
        waiters_.fetch_sub(static_cast<int>(retries.size()), std::memory_order_seq_cst);
    }
    for (auto& r : retries) r();
}

bool SpaceWait::wait(clock::time_point deadline, const RingPositions& queue,
                     const std::atomic<bool>& detaching,
                     const std::function<void()>& counted) noexcept
{
    const std::size_t cap = capacity_ == 0 ? 1 : capacity_;
    // Counted before the lock: a notify() in between finds the count, takes the lock and
    // wakes no one, and the look at the queue under the lock below sees its room.
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    counted();
    std::unique_lock lk(mu_);
    bool room = true;
    while (!detaching.load(std::memory_order_seq_cst) && queue.size() >= cap) {
        if (cv_.wait_until(lk, deadline) == std::cv_status::timeout) {
            room = detaching.load() || queue.size() < cap;
            break;
        }
    }
    waiters_.fetch_sub(1, std::memory_order_seq_cst);
    return room;
}

bool SpaceWait::add_async(Retry& retry, const RingPositions* queue,
                          const std::atomic<bool>& detaching)
{
    std::lock_guard lk(mu_);
    if (detaching.load()) return false;
    async_.push_back(std::move(retry));
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    // A pop may have happened before we registered: retry once more now.
    if (!queue || queue->size() >= capacity_) return true;
    retry = std::move(async_.back());
    async_.pop_back();
    waiters_.fetch_sub(1, std::memory_order_seq_cst);
    return false;
}

void SpaceWait::wake_all() noexcept
{
    std::lock_guard lk(mu_);
    cv_.notify_all();
}

std::vector<SpaceWait::Retry> SpaceWait::take_async() noexcept
{
    std::vector<Retry> retries;
    {
        std::lock_guard lk(mu_);
        retries.swap(async_);
    }
    return retries;
}

bool WriterCore::wait_for_space(clock::time_point deadline) noexcept
{
    // The drain's strand may not run until this thread is free again — it may be your loop's
    // only thread — so the I/O executor makes the room (RoomSteps).
    RoomSteps& room = impl_->room;
    return impl_->space.wait(deadline, *ring_, impl_->life->detaching, [&room] { room.ask(); });
}

void WriterCore::add_space_waiter(std::function<void()> retry)
{
    if (impl_->space.add_async(retry, ring_, impl_->life->detaching)) return;
    asio::post(impl_->strand, std::move(retry));
}

}  // namespace jsonlw::detail
