// Overflow::block: producers waiting for room (wait_for_space() on the producer's thread,
// add_space_waiter() for async_submit()) and the I/O thread waking them after a pop.
#include "writer_core_impl.hpp"

#include <algorithm>

namespace jsonlw::detail {

void WriterCore::Impl::notify_space() noexcept
{
    if (self.opts_.overflow != Overflow::block) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (space_waiters.load(std::memory_order_seq_cst) == 0) return;
    // Hysteresis: a producer blocked on a full queue is woken once a quarter of it is
    // free, not after every batch — one sleep and wake-up (two context switches) per
    // quarter of the queue instead of per batch_records. (Close and shutdown wake
    // everyone anyway.)
    if (self.hooks_->queued() + space_wake_free > std::max<std::size_t>(self.opts_.queue_capacity, 1))
        return;
    std::vector<std::function<void()>> retries;
    {
        std::lock_guard lk(space_mu);
        space_cv.notify_all();
        retries.swap(async_space_waiters);
        space_waiters.fetch_sub(static_cast<int>(retries.size()), std::memory_order_seq_cst);
    }
    for (auto& r : retries) r();
}

bool WriterCore::wait_for_space(clock::time_point deadline) noexcept
{
    Impl& d = *impl_;
    const std::size_t cap = opts_.queue_capacity == 0 ? 1 : opts_.queue_capacity;
    std::unique_lock lk(d.space_mu);
    d.space_waiters.fetch_add(1, std::memory_order_seq_cst);
    bool room = true;
    while (!d.life->detaching.load(std::memory_order_seq_cst) && hooks_->queued() >= cap) {
        if (d.space_cv.wait_until(lk, deadline) == std::cv_status::timeout) {
            room = d.life->detaching.load() || hooks_->queued() < cap;
            break;
        }
    }
    d.space_waiters.fetch_sub(1, std::memory_order_seq_cst);
    return room;
}

void WriterCore::add_space_waiter(std::function<void()> retry)
{
    Impl& d = *impl_;
    {
        std::lock_guard lk(d.space_mu);
        if (!d.life->detaching.load()) {
            d.async_space_waiters.push_back(std::move(retry));
            d.space_waiters.fetch_add(1, std::memory_order_seq_cst);
            // A pop may have happened before we registered: retry once more now.
            if (!hooks_ || hooks_->queued() >= opts_.queue_capacity) return;
            retry = std::move(d.async_space_waiters.back());
            d.async_space_waiters.pop_back();
            d.space_waiters.fetch_sub(1, std::memory_order_seq_cst);
        }
    }
    asio::post(impl_->strand, std::move(retry));
}

}  // namespace jsonlw::detail
