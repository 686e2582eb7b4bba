// Drain (see drain.hpp): the coroutine on the strand, its idle polls (or parks), its linger,
// its hops to the I/O thread and what it has done there (a step of units, the final close,
// fsyncs, the sink's reopen and tick), its hand-off of paced steps to the I/O executor
// (IoPace); and the wake-up a producer's submit() posts to it.
#include "drain.hpp"

#include "writer_core_impl.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <bit>
#include <utility>

namespace jsonlw::detail {

namespace asio = boost::asio;

namespace {

// Units the I/O thread writes per hop before returning to the strand (which completes
// flushes): bounds flush latency without a hop per batch under load.
constexpr int units_per_hop = 16;

// How long the drain polls an empty queue every idle_poll before it backs off towards
// idle_poll_max.
constexpr std::chrono::milliseconds backoff_after{50};

constexpr std::uint8_t awake = 0, parked = 1, lingering = 2;  // WriterCore's doorbell

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

Drain::Drain(WriterCore& core, Strand& strand)
    : core_(core),
      strand_(strand),
      opts_(core.opts_),
      doorbell_(core.wake_state_),
      timer_(strand),
      paced_(strand)
{
    // A wake-up posted straight to an io_context's executor can use the writer's own
    // memory; through the type-erased executor Asio allocates (twice) off its threads.
    if (const auto* io = core.ex_.target<asio::io_context::executor_type>()) loop_ex_ = *io;
}

void Drain::start()
{
    pace_.emplace(*this, core_.impl_->io_ex);
    running_.store(true, std::memory_order_release);
    asio::co_spawn(strand_, run(core_.shared_from_this()), asio::detached);
}

// co_await on_io(task): runs the task on the I/O thread and resumes on the strand. The
// task holds the life guard until its completion is posted, so once shutdown() has seen
// no task active, the I/O thread never touches the user's executor again (the user may
// destroy its io_context right after destroying the writer).
auto Drain::on_io(IoTask task)
{
    WriterCore::Impl& d = *core_.impl_;
    return asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [this, &d, task](auto handler) {
            if (!d.enter()) {  // the writer is gone: skip the task
                asio::post(strand_, std::move(handler));
                return;
            }
            asio::post(d.io_ex, [this, &d, task, l = d.life, h = std::move(handler)]() mutable {
                {
                    std::lock_guard lk(io_work_);
                    run_io(task);
                    note_dues_io(task == IoTask::step);
                }
                asio::post(strand_, std::move(h));
                l->leave();  // touches only the shared Life: the core may be gone now
            });
        },
        asio::use_awaitable);
}

// co_await pace_on_io(consumed): the run holds the life guard, as an on_io() task does, until
// end_pace_io() has posted the end of this wait.
asio::awaitable<void> Drain::pace_on_io(std::uint64_t consumed)
{
    WriterCore::Impl& d = *core_.impl_;
    if (!d.enter()) co_return;  // the writer is gone
    yield_hop_.store(false, std::memory_order_relaxed);  // pacing(): no flush, no close
    paced_.expires_at(clock::time_point::max());
    // The run's end is posted to this strand, so it cannot come before the wait below begins.
    pace_->run(consumed);
    boost::system::error_code ec;
    co_await paced_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    stepped_ = Stepped::paced;
    take_dues();
}

bool Drain::detaching() const noexcept
{
    return core_.impl_->life->detaching.load(std::memory_order_seq_cst);
}

void Drain::cut_pace(bool by_shutdown) noexcept
{
    // The cancel below runs on the I/O executor, maybe after the run has ended: it holds the
    // life guard (even while detaching), so shutdown() waits for it before it drops the pace.
    // Once the writer is detaching only shutdown() cuts (its own cut comes before its wait):
    // another caller that saw it detaching touches nothing, since the pace may be going.
    // A run holds the guard too, so a run that ended before the count went up is seen ended
    // below (each store and load here is seq_cst).
    WriterCore::Impl& d = *core_.impl_;
    d.life->active.fetch_add(1, std::memory_order_seq_cst);
    auto life = d.life;
    if ((!by_shutdown && detaching()) || !pace_ || !pace_->cut()) {
        life->leave();
        return;
    }
    asio::post(pace_->strand(), [this, life] {
        pace_->cancel();
        life->leave();  // the last touch of the writer
    });
}

void Drain::drop_pace() noexcept { pace_.reset(); }

void Drain::note_dues_io(bool stepped) noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    if (stepped) fsync_due_io_ = d.sinks.sync_due();
    tick_due_io_ = d.sinks.next_tick();
}

void Drain::take_dues() noexcept
{
    fsync_due_ = fsync_due_io_;
    tick_due_ = tick_due_io_;
}

void Drain::end_pace_io() noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    {
        std::lock_guard lk(io_work_);
        note_dues_io(true);
    }
    auto life = d.life;
    // The coroutine waits for this handler (and keeps the writer alive until it resumes).
    asio::post(strand_, [this] { paced_.cancel(); });
    life->leave();  // touches only the shared Life: the core may be gone now
}

// The I/O thread, inside on_io() under io_work_: one task at a time, never on the user's
// executor.
void Drain::run_io(IoTask task) noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    switch (task) {
    case IoTask::step: step_units_io(); break;
    case IoTask::finalize:
        d.accounting.log_queue_drops();
        if (opts_.durability != Durability::none) d.sinks.sync();
        d.sinks.close(opts_.durability != Durability::none);
        break;
    case IoTask::sync: d.sinks.sync(); break;
    case IoTask::reopen: d.sinks.reopen(); break;
    case IoTask::tick: d.sinks.tick(); break;
    }
}

// IoPace's and RoomSteps' step: step_units_io() under io_work_ (on_io() holds it already).
void Drain::step_io() noexcept
{
    std::lock_guard lk(io_work_);
    step_units_io();
}

// The I/O thread: the typed engine runs units from the queue to the sinks
// (RecordEngine::run_unit, record_engine.hpp) until the queue runs short, the writer is
// going, or a flush or close wants the strand; then the queue-drop log and a due fsync.
void Drain::step_units_io() noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    WriterCore::Impl::Guard g(d);
    if (!g) return;
    for (int i = 0; i < units_per_hop; ++i) {
        if (!core_.units_->run_unit(d.unit) || d.life->detaching.load(std::memory_order_relaxed) ||
            yield_requested())
            break;
    }
    d.accounting.log_queue_drops();
    if (d.sinks.sync_overdue()) d.sinks.sync();
}

asio::awaitable<bool> Drain::idle(std::uint64_t consumed)
{
    WriterCore::Impl& d = *core_.impl_;
    // Polling (idle_poll > 0): look again every idle_poll; after backoff_after without a
    // record, each quiet look doubles the interval, up to idle_poll_max. The doorbell stays
    // `awake`, so a producer never wakes the drain and a poll writes nothing a producer
    // reads. Parking (idle_poll 0): sleep until a submit, a flush, a close. Either way, at
    // most until a due fsync or sink tick.
    const auto now = clock::now();
    if (!empty_since_) {
        empty_since_ = now;
        poll_interval_ = opts_.idle_poll;
    } else if (now - *empty_since_ >= backoff_after) {
        poll_interval_ = std::min<clock::duration>(2 * poll_interval_, longest_poll());
    }
    auto wait = clock::duration::max();
    if (fsync_due_) wait = std::max(clock::duration::zero(), *fsync_due_ - now);
    if (tick_due_)
        wait = std::min<clock::duration>(wait, std::max(clock::duration::zero(), *tick_due_ - now));
    const bool poll = polling();
    if (poll) {
        quiet_look_ = now;  // the caller's look just found the queue empty
        wait = std::min(wait, poll_interval_);
    } else {
        doorbell_.store(parked, std::memory_order_seq_cst);
        // A producer that pushed before the store saw the drain awake and posted nothing:
        // look again after it.
        WriterCore::Impl::Guard g(d);
        if (!g) co_return false;
        if (core_.ring_->claimed() != consumed) {
            doorbell_.store(awake, std::memory_order_seq_cst);
            co_return true;
        }
    }
    boost::system::error_code ec;
    if (wait == clock::duration::max()) timer_.expires_at(clock::time_point::max());
    else timer_.expires_after(wait);
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!poll) doorbell_.store(awake, std::memory_order_seq_cst);
    if (!ec && fsync_due_ && clock::now() >= *fsync_due_) {
        co_await on_io(IoTask::sync);
        fsync_due_.reset();
    }
    if (!ec && tick_due_ && clock::now() >= *tick_due_) {
        co_await on_io(IoTask::tick);  // an idle file is rotated too
        tick_due_ = tick_due_io_;
    }
    co_return true;
}

clock::duration Drain::longest_poll() const noexcept
{
    const clock::duration floor = opts_.idle_poll;
    const clock::duration most = std::max<clock::duration>(floor, opts_.idle_poll_max);
    if (opts_.flush_interval.count() == 0) return most;
    return std::min(most, std::max<clock::duration>(floor, opts_.flush_interval));
}

bool Drain::pacing() const noexcept
{
    return polling() && opts_.flush_interval.count() == 0 && !closing_ &&
           !core_.impl_->waiters.flushing();
}

asio::awaitable<bool> Drain::linger(std::uint64_t consumed, clock::time_point since)
{
    WriterCore::Impl& d = *core_.impl_;
    const auto until = since + opts_.flush_interval;
    const std::uint64_t target = linger_target();
    const auto filled = [&] { return core_.ring_->claimed() - consumed >= target; };
    if (polling()) {
        // Look every idle_poll whether the batch filled; no producer wakes the drain. A
        // wake() (a flush, a close, a reopen) ends the linger, as it ends a parked one.
        for (;;) {
            {
                WriterCore::Impl::Guard g(d);
                if (!g) co_return false;
                // What a wake() before the wait below would have asked for is seen here.
                if (filled() || d.waiters.flushing() || closing_ || d.sinks.reopen_requested())
                    co_return true;
            }
            const auto now = clock::now();
            if (now >= until) co_return true;
            boost::system::error_code ec;
            timer_.expires_after(std::min<clock::duration>(until - now, opts_.idle_poll));
            co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return true;
        }
    }
    wake_at_.store(consumed + target, std::memory_order_relaxed);
    doorbell_.store(lingering, std::memory_order_seq_cst);
    // The batch may have filled between the caller's count and the store: a producer that
    // pushed then saw the drain awake and posted nothing, so look again after the store (as
    // the park does) instead of waiting the whole interval for it.
    bool full = false;
    {
        WriterCore::Impl::Guard g(d);
        if (!g) co_return false;
        full = filled();
    }
    if (!full) {
        boost::system::error_code ec;
        timer_.expires_at(until);
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    doorbell_.store(awake, std::memory_order_seq_cst);
    co_return true;
}

asio::awaitable<void> Drain::run(std::shared_ptr<WriterCore> keep)
{
    WriterCore::Impl& d = *keep->impl_;
    for (;;) {
        if (d.handoff.abandoned() || d.waiters.finished()) break;
        // Pacing, the look only asks whether a record waits, of the oldest cell: `claimed` is
        // then consumed + 1 or consumed (RingPositions::published(): the tail's line is the
        // one every push writes next, and the oldest cell's, when it holds a record, is not).
        const bool paced = pacing();
        std::uint64_t claimed = 0, consumed = 0;
        {
            WriterCore::Impl::Guard g(d);
            if (!g) break;
            consumed = core_.ring_->consumed();
            if (!paced) claimed = core_.ring_->claimed();
            else claimed = consumed + (core_.ring_->published(consumed) ? 1 : 0);
            // The next pace measures the rate afresh, not across the spell. Under the guard:
            // shutdown() drops the pace once no guard is held.
            if (claimed == consumed) pace_->forget_rate();
        }
        d.waiters.complete_flushes(consumed, {});
        if (d.sinks.reopen_requested() && !closing_) {
            // Between batches: the records written so far stay in the closed file.
            auto reopens = d.waiters.take_reopens();
            co_await on_io(IoTask::reopen);
            tick_due_ = tick_due_io_;
            const error_code reopened(d.sinks.reopen_error());
            for (auto& h : reopens) d.waiters.complete(std::move(h), reopened);
            continue;
        }
        const Stepped stepped = std::exchange(stepped_, Stepped::no);
        if (claimed == consumed) {
            if (closing_) {
                co_await on_io(IoTask::finalize);
                d.finish(true);
                break;
            }
            // A step here emptied the queue. At a steady rate of a record per step's time or
            // slower, the next one comes after the step more often than during it — every
            // time on a loaded core, where this strand resumes before the producer runs — and
            // a pace begun only for records waiting would never begin: each look would cost
            // the loop thread an idle poll and a step's hop. So the pace looks next (at
            // idle_poll: it has no rate yet); one that ends at an empty queue leaves the
            // looks to idle() and its back-off.
            if (stepped == Stepped::here && paced) {
                co_await pace_on_io(consumed);
                continue;
            }
            if (!co_await idle(consumed)) break;
            continue;
        }
        empty_since_.reset();
        if (stepped != Stepped::no && paced && claimed - consumed < linger_target()) {
            co_await pace_on_io(consumed);
            continue;
        }
        // Polling, the records seen now came after the last quiet look: their linger counts
        // from it, not from now (parked, the first of them woke the drain at once).
        const auto since = polling() && quiet_look_ ? *quiet_look_ : clock::now();
        quiet_look_.reset();
        if (opts_.flush_interval.count() > 0 && !closing_ && !d.waiters.flushing() &&
            claimed - consumed < linger_target()) {
            if (!co_await linger(consumed, since)) break;
        }
        yield_hop_.store(closing_ || d.waiters.flushing(), std::memory_order_relaxed);
        co_await on_io(IoTask::step);
        stepped_ = Stepped::here;
        take_dues();
    }
    // Detached (the writer is gone) or abandoned: settle every waiter.
    if (!d.waiters.finished()) d.finish(d.handoff.discarded_at_shutdown() == 0);
}

void Drain::post_wake() noexcept
{
    auto core = core_.shared_from_this();
    // A burst may post again once this one is delivered. Asio has freed the handler's memory
    // (the arena's slot) before it runs it (boost/asio/detail/executor_op.hpp, do_complete),
    // so a second burst's post finds the slot free and allocates nothing on its producer.
    if (loop_ex_) {
        asio::post(*loop_ex_, asio::bind_allocator(WakeAllocator<void>(&arena_),
                                                   [core = std::move(core)]() mutable {
                                                       Drain& drain = core->impl_->drain;
                                                       drain.burst_woken_.store(
                                                           false, std::memory_order_release);
                                                       asio::dispatch(drain.strand_, [core] {
                                                           core->impl_->drain.wake();
                                                       });
                                                   }));
    } else {
        asio::post(strand_, [core = std::move(core)] {
            Drain& drain = core->impl_->drain;
            drain.burst_woken_.store(false, std::memory_order_release);
            drain.wake();
        });
    }
}

void Drain::notify(std::uint8_t seen, std::uint64_t pos) noexcept
{
    // Lingering (idle_poll 0): only a full batch cuts it short.
    if (seen == lingering && pos + 1 < wake_at_.load(std::memory_order_relaxed)) return;
    std::uint8_t expected = seen;
    if (!doorbell_.compare_exchange_strong(expected, awake, std::memory_order_acq_rel)) return;
    // One post per park, never one per record.
    producer_wakeups_.fetch_add(1, std::memory_order_relaxed);
    post_wake();
}

void Drain::notify_burst(std::uint64_t pos) noexcept
{
    if (!polling()) return;  // parked or lingering (idle_poll 0): the doorbell wakes it
    // Another producer's later records may have been popped past this one's already (this
    // thread was descheduled between its push and here): then nothing of it waits.
    const std::uint64_t consumed = core_.ring_->consumed();
    if (consumed > pos ||
        pos + 1 - consumed < std::max<std::uint64_t>(1, opts_.queue_capacity / 4))
        return;
    if (burst_woken_.exchange(true, std::memory_order_acq_rel)) return;
    producer_wakeups_.fetch_add(1, std::memory_order_relaxed);
    post_wake();
}

void WriterCore::wake_drain(std::uint8_t seen, std::uint64_t pos) noexcept
{
    impl_->drain.notify(seen, pos);
}

void WriterCore::check_burst(std::uint64_t pos) noexcept { impl_->drain.notify_burst(pos); }

std::uint64_t WriterCore::burst_mask() const noexcept
{
    // The largest power of two no more than an eighth of the queue (at least 1): a burst is
    // seen by the time 3/8 of the queue waits, and one push in that many reads the head.
    const std::uint64_t eighth = std::max<std::uint64_t>(1, opts_.queue_capacity / 8);
    return (std::uint64_t{1} << (63 - std::countl_zero(eighth))) - 1;
}

std::uint64_t WriterCore::drain_wakeups() const noexcept
{
    return impl_->drain.producer_wakeups();
}

}  // namespace jsonlw::detail
