// Drain: the writer's drain — one coroutine per writer on a strand of the user's executor
// (started by WriterCore::start()) that polls an empty queue (every idle_poll, backing off to
// idle_poll_max; with idle_poll 0 it parks instead), lingers for a short batch, hops to the
// I/O thread for each step (and for fsyncs, sink ticks, a reopen, the final close), hands
// its steps to the I/O executor's own pace (IoPace) while records keep coming, and completes
// flushes; and the wake-up a producer's submit() posts to it when it parked.
// Owned by WriterCore::Impl. run() and everything but the marked functions run on the
// strand; notify(), request_yield() and cut_pace() on any thread; yield_requested(),
// detaching() and step_io() on the I/O thread.
// Owns its state: the timer it waits on, the wake-up's memory, the claim position from which
// a submit wakes it, since when the queue is empty and the idle poll's interval, whether its
// last pass stepped, the I/O-side pace, the fsync and sink tick it owes, whether close has
// begun, the mutex that keeps the I/O side's work one at a time. The one piece producers read, the doorbell (awake, parked, lingering), is
// WriterCore's, so that submit() reads it inline.
#pragma once

#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/writer_options.hpp>

#include "io_pace.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace jsonlw::detail {

// The memory of the wake-up a producer posts: one slot owned by the writer, so a wake-up
// allocates nothing on the producer's thread. A second wake-up while the first is still
// queued (rare: the drain re-parked before the first ran) falls back to the heap.
struct WakeArena {
    alignas(std::max_align_t) unsigned char slot[256];
    std::atomic<bool> busy{false};

    void* allocate(std::size_t n)
    {
        if (n <= sizeof slot && !busy.exchange(true, std::memory_order_acquire)) return slot;
        return ::operator new(n);
    }
    void deallocate(void* p) noexcept
    {
        if (p == slot) busy.store(false, std::memory_order_release);
        else ::operator delete(p);
    }
};

// What the drain has the I/O thread do (Drain::run_io).
enum class IoTask { step, finalize, sync, reopen, tick };

class Drain {
public:
    using clock = std::chrono::steady_clock;
    using Strand = boost::asio::strand<boost::asio::any_io_executor>;

    Drain(WriterCore& core, Strand& strand);
    Drain(const Drain&) = delete;
    Drain& operator=(const Drain&) = delete;

    // start()'s caller, once: spawns the coroutine on the strand.
    void start();
    bool running() const noexcept { return running_.load(std::memory_order_acquire); }

    // Any thread, after a push at `pos` found the doorbell `seen` (not awake): posts one
    // wake-up per park — while polling or lingering, only once enough records wait.
    void notify(std::uint8_t seen, std::uint64_t pos) noexcept;
    // Any thread, from one push in burst_stride at position `pos`: while the drain polls,
    // posts one wake-up when a quarter of the queue waits (once until that one is delivered).
    void notify_burst(std::uint64_t pos) noexcept;
    // Wake-ups producers posted so far (notify()'s and notify_burst()'s posts). Any thread.
    std::uint64_t producer_wakeups() const noexcept
    {
        return producer_wakeups_.load(std::memory_order_relaxed);
    }
    // The strand: cuts the current park, poll, linger or I/O-side pace short.
    void wake() noexcept
    {
        timer_.cancel();
        cut_pace(false);
    }
    // Any thread: cuts the I/O-side pace short; shutdown() passes true (the writer is
    // detaching: no other caller touches the pace then).
    void cut_pace(bool by_shutdown) noexcept;
    // shutdown(), once no life guard is held: destroys the I/O-side pace. Its strand and timer
    // belong to the I/O executor, which the caller may destroy once the writer is gone while
    // the core lives on (a handler of the user's executor may hold it): they go now.
    void drop_pace() noexcept;
    // Any thread: have wake() run on the strand.
    void post_wake() noexcept;

    // A thread of the I/O executor (IoPace, RoomSteps): one step of units, under the mutex
    // that keeps the I/O side's work one at a time.
    void step_io() noexcept;

    // The strand: close has begun — the drain writes what is queued, then finalizes.
    void begin_close() noexcept { closing_ = true; }
    bool closing() const noexcept { return closing_; }

    // Any thread: the I/O thread should return to the strand after its current unit (a
    // flush or close is waiting). The I/O thread reads it between units.
    void request_yield() noexcept { yield_hop_.store(true, std::memory_order_relaxed); }
    bool yield_requested() const noexcept { return yield_hop_.load(std::memory_order_relaxed); }

private:
    friend class IoPace;  // paces step_io() on the I/O executor, reads the ring and the options

    boost::asio::awaitable<void> run(std::shared_ptr<WriterCore> keep);
    // co_await on_io(task): runs the task on the I/O thread and resumes on the strand.
    auto on_io(IoTask task);
    // co_await pace_on_io(consumed): the I/O executor paces the steps (IoPace::run) until
    // the queue is empty, a wake() or the writer is gone; resumes on the strand with the
    // run's due fsync and tick taken over.
    boost::asio::awaitable<void> pace_on_io(std::uint64_t consumed);
    // The I/O thread: a task; a step of units.
    void run_io(IoTask task) noexcept;
    void step_units_io() noexcept;
    bool detaching() const noexcept;
    const RingPositions& ring() const noexcept { return *core_.ring_; }
    // The I/O thread, IoPace's last act: ends pace_on_io()'s wait on the strand and leaves
    // the life guard it entered.
    void end_pace_io() noexcept;
    // The I/O thread, after a task or a pace's run: the sinks' due fsync (after steps) and
    // tick, for the strand to take over with take_dues() once the completion has hopped back
    // (the hop orders the writes before the reads).
    void note_dues_io(bool stepped) noexcept;
    void take_dues() noexcept;
    // Whether the drain polls (idle_poll > 0: producers never wake it) or parks (idle_poll 0:
    // the first submit after it parked, or a full batch while it lingers, posts a wake-up).
    bool polling() const noexcept { return opts_.idle_poll.count() > 0; }
    // The strand, at an empty queue: waits its poll interval (polling), or parks until a
    // submit, a flush or a close; either way at most until a due fsync or sink tick.
    // Returns false when the writer is gone.
    boost::asio::awaitable<bool> idle(std::uint64_t consumed);
    // The strand, with fewer than linger_target() waiting: give them until `since` +
    // flush_interval to grow to it (polling: looking every idle_poll), where `since` is the
    // earliest any of them can have been queued. Returns false when the writer is gone.
    boost::asio::awaitable<bool> linger(std::uint64_t consumed, clock::time_point since);
    // Polling with no flush_interval, a step that left fewer than linger_target() records
    // waiting (those queued while it ran) is followed by the next one once half a batch has
    // come at the measured rate, at most longest_poll() later (IoPace::wait()), not at once
    // — cut short by a burst (a quarter of the queue), a flush, a close or a reopen, as an
    // idle poll is. A drain that stepped again at once would, where a step lasts about as
    // long as the gap between two records, pop each record as it is published and read the
    // cell its producer fills next: a cross-core miss on that producer's next submit()
    // (docs/queue.md, "The tail"). The I/O executor paces those steps itself (IoPace), so
    // the loop thread takes no wake-up for them. A step here that emptied the queue is
    // followed by the pace's look too (at idle_poll); a pace that found the queue empty
    // leaves the looks to idle().
    // Whether the drain paces its steps (see above): polling, no flush_interval, no close
    // or flush under way. The strand.
    bool pacing() const noexcept;
    // The longest idle() sleeps between two looks: idle_poll_max, but no longer than
    // flush_interval when one is set (never below idle_poll) — so a record submitted to an
    // idle writer is seen, and written, within flush_interval.
    clock::duration longest_poll() const noexcept;
    // Records that end a linger: a full batch, or a quarter of the queue when a batch is
    // larger (a linger must not hold back a queue that overflow would soon refuse).
    std::uint64_t linger_target() const noexcept
    {
        return std::max<std::uint64_t>(
            1, std::min<std::uint64_t>(opts_.batch_records, opts_.queue_capacity / 4));
    }

    WriterCore& core_;
    Strand& strand_;
    const WriterOptions& opts_;
    std::atomic<std::uint8_t>& doorbell_;  // WriterCore's wake_state_
    std::optional<boost::asio::io_context::executor_type> loop_ex_;  // when it is an io_context's
    WakeArena arena_;
    boost::asio::steady_timer timer_;  // the drain parks (or lingers) on it
    // pace_on_io() waits on it until the I/O-side pace has ended (never cut by wake(): the
    // pace must have stopped stepping before the strand steps again).
    boost::asio::steady_timer paced_;
    std::atomic<bool> running_{false};
    std::atomic<bool> yield_hop_{false};
    // The I/O executor's work for the drain — its tasks, the pace's steps, RoomSteps' — one
    // at a time where that executor has several threads (on the writer's own I/O thread it is
    // never contended).
    std::mutex io_work_;
    // Lingering (idle_poll 0): the claim position from which a submit wakes the drain.
    std::atomic<std::uint64_t> wake_at_{0};
    std::atomic<std::uint64_t> producer_wakeups_{0};  // one per park at most: never hot
    // A burst's wake-up is posted and not yet delivered: no second one. Cleared by the posted
    // handler, not by the drain's next loop: until it runs it holds the arena's slot, and a
    // second post would then allocate on the producer's thread.
    std::atomic<bool> burst_woken_{false};

    // The strand's own.
    bool closing_ = false;
    // What the last pass ran: a step here (on_io), a pace on the I/O executor, or neither.
    // After either, what came during it is paced; after a step here that emptied the queue,
    // the pace looks next all the same (run()).
    enum class Stepped : std::uint8_t { no, here, paced };
    Stepped stepped_ = Stepped::no;
    std::optional<IoPace> pace_;  // made by start(), when the I/O executor is known
    std::optional<clock::time_point> empty_since_;  // when the drain found the queue empty
    clock::duration poll_interval_{};               // the idle poll's current interval
    // Polling: when the drain last found the queue empty — every record it sees next was
    // queued after it.
    std::optional<clock::time_point> quiet_look_;
    std::optional<clock::time_point> fsync_due_;    // Durability::fsync_interval's next fsync
    std::optional<clock::time_point> tick_due_;     // the sink's next tick()
    // Written by an I/O task, read on the strand after its completion (the hop orders them).
    std::optional<clock::time_point> fsync_due_io_;
    std::optional<clock::time_point> tick_due_io_;
};

}  // namespace jsonlw::detail
