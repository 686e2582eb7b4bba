// The drain: one coroutine per writer on a strand of the user's executor (spawned by start()),
// which parks when the queue is empty, lingers for a short batch, hands each batch to the I/O
// thread and completes flushes; and the wake-up a producer's submit() posts to it.
#include "writer_core_impl.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace jsonlw::detail {

namespace {

// How long the drain keeps polling an empty queue (every idle_poll) before it parks.
constexpr std::chrono::milliseconds park_after{50};

template <class T>
struct WakeAllocator {
    using value_type = T;
    WakeArena* arena;
    explicit WakeAllocator(WakeArena* a) noexcept : arena(a) {}
    template <class U>
    WakeAllocator(const WakeAllocator<U>& o) noexcept : arena(o.arena)
    {
    }
    T* allocate(std::size_t n) { return static_cast<T*>(arena->allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) noexcept { arena->deallocate(p); }
    template <class U>
    bool operator==(const WakeAllocator<U>& o) const noexcept
    {
        return arena == o.arena;
    }
};

}  // namespace

// co_await on_io(task): runs the task on the I/O thread and resumes on the strand. The
// task holds the life guard until its completion is posted, so once shutdown() has seen
// no task active, the I/O thread never touches the user's executor again (the user may
// destroy its io_context right after destroying the writer).
auto WriterCore::Impl::on_io(IoTask task)
{
    return asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [this, task](auto handler) {
            if (!enter()) {  // the writer is gone: skip the task
                asio::post(strand, std::move(handler));
                return;
            }
            asio::post(io_ex, [this, task, l = life, h = std::move(handler)]() mutable {
                run_io_task(task);
                asio::post(strand, std::move(h));
                l->leave();  // touches only the shared Life: the core may be gone now
            });
        },
        asio::use_awaitable);
}

asio::awaitable<void> WriterCore::Impl::drain(std::shared_ptr<WriterCore> core)
{
    Impl& d = *core->impl_;
    WriterCore& w = *core;
    const auto& o = w.opts_;
    for (;;) {
        if (d.handoff.abandoned() || d.waiters.finished()) break;
        std::uint64_t claimed = 0, consumed = 0;
        {
            Guard g(d);
            if (!g) break;
            claimed = w.hooks_->claimed();
            consumed = w.hooks_->consumed();
        }
        d.waiters.complete_flushes(consumed, {});
        if (d.sinks.reopen_requested() && !d.closing) {
            // Between batches: the records written so far stay in the closed file.
            auto reopens = d.waiters.take_reopens();
            co_await d.on_io(IoTask::reopen);
            d.tick_due = d.tick_due_io;
            const error_code reopened(d.sinks.reopen_error());
            for (auto& h : reopens) d.waiters.complete(std::move(h), reopened);
            continue;
        }
        if (claimed == consumed) {
            if (d.closing) {
                co_await d.on_io(IoTask::finalize);
                d.finish(true);
                break;
            }
            // Empty. For up to park_after, look again every idle_poll (a soft park: a
            // producer wakes the drain only once poll_wake_records are waiting); then park
            // until a submit, a flush, a close — or a due fsync or sink tick.
            const auto now = clock::now();
            if (!d.empty_since) d.empty_since = now;
            const auto empty_for = now - *d.empty_since;
            auto wait = clock::duration::max();
            if (d.fsync_due) wait = std::max(clock::duration::zero(), *d.fsync_due - now);
            if (d.tick_due)
                wait = std::min<clock::duration>(
                    wait, std::max(clock::duration::zero(), *d.tick_due - now));
            const bool poll = o.idle_poll.count() > 0 && empty_for < park_after;
            if (poll) {
                wait = std::min<clock::duration>(wait, o.idle_poll);
                const std::uint64_t at = consumed + d.poll_wake_records;
                if (d.wake_at.load(std::memory_order_relaxed) != at)
                    d.wake_at.store(at, std::memory_order_relaxed);
            }
            // Idle polls write nothing producers read (their submit() then hits its
            // cache); a state still set from the last poll counts as stored.
            const std::uint8_t want = poll ? lingering : parked;
            if (w.wake_state_.load(std::memory_order_relaxed) != want)
                w.wake_state_.store(want, std::memory_order_seq_cst);
            {
                Guard g(d);
                if (!g) break;
                if (w.hooks_->claimed() != consumed) {
                    w.wake_state_.store(awake, std::memory_order_seq_cst);
                    continue;
                }
            }
            boost::system::error_code ec;
            if (wait == clock::duration::max()) d.wake_timer.expires_at(clock::time_point::max());
            else d.wake_timer.expires_after(wait);
            co_await d.wake_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            // After a quiet poll the state stays `lingering` for the next one; records
            // found next set it to awake below, before the batch.
            if (ec || !poll) w.wake_state_.store(awake, std::memory_order_seq_cst);
            if (!ec && d.fsync_due && clock::now() >= *d.fsync_due) {
                co_await d.on_io(IoTask::sync);
                d.fsync_due.reset();
            }
            if (!ec && d.tick_due && clock::now() >= *d.tick_due) {
                co_await d.on_io(IoTask::tick);  // an idle file is rotated too
                d.tick_due = d.tick_due_io;
            }
            continue;
        }
        d.empty_since.reset();
        if (w.wake_state_.load(std::memory_order_relaxed) != awake)
            w.wake_state_.store(awake, std::memory_order_seq_cst);
        // Linger: give a short batch up to flush_interval to fill.
        if (o.flush_interval.count() > 0 && !d.closing && !d.waiters.flushing() &&
            claimed - consumed < o.batch_records) {
            d.wake_at.store(consumed + o.batch_records, std::memory_order_relaxed);
            w.wake_state_.store(lingering, std::memory_order_seq_cst);
            // The batch may have filled between the count above and the store: a producer
            // that pushed then saw the drain awake and posted nothing, so look again after
            // the store (as the park does) instead of waiting the whole interval for it.
            bool filled = false;
            {
                Guard g(d);
                if (!g) break;
                filled = w.hooks_->claimed() - consumed >= o.batch_records;
            }
            if (!filled) {
                boost::system::error_code ec;
                d.wake_timer.expires_after(o.flush_interval);
                co_await d.wake_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
            w.wake_state_.store(awake, std::memory_order_seq_cst);
        }
        d.yield_hop.store(d.closing || d.waiters.flushing(), std::memory_order_relaxed);
        co_await d.on_io(IoTask::step);
        d.fsync_due = d.fsync_due_io;  // written by the task, read after its completion
        d.tick_due = d.tick_due_io;
    }
    // Detached (the writer is gone) or abandoned: settle every waiter.
    if (!d.waiters.finished()) d.finish(d.handoff.discarded_at_shutdown() == 0);
}

// Any thread: have wake_drain() run on the strand.
void WriterCore::Impl::post_wake() noexcept
{
    auto core = self.shared_from_this();
    if (loop_ex) {
        asio::post(*loop_ex, asio::bind_allocator(WakeAllocator<void>(&wake_arena),
                                                  [core = std::move(core)]() mutable {
                                                      Impl& d = *core->impl_;
                                                      asio::dispatch(d.strand, [core] {
                                                          core->impl_->wake_drain();
                                                      });
                                                  }));
    } else {
        asio::post(strand, [core = std::move(core)] { core->impl_->wake_drain(); });
    }
}

void WriterCore::maybe_wake(std::uint8_t seen, std::uint64_t pos) noexcept
{
    // Lingering or polling: only enough waiting records (a full batch; while polling, at
    // most a quarter of the queue) cut it short.
    if (seen == lingering && pos + 1 < impl_->wake_at.load(std::memory_order_relaxed)) return;
    std::uint8_t expected = seen;
    if (!wake_state_.compare_exchange_strong(expected, awake, std::memory_order_acq_rel)) return;
    // One post per park, never one per record.
    impl_->post_wake();
}

}  // namespace jsonlw::detail
