// FullQueue<Record>: what JsonlRecordWriter's submit() and async_submit() do when the queue is
// full — drop_oldest evicts, block waits on the caller's thread (at most block_timeout), and
// async_submit() under block waits without blocking it (retried after each pop). Runs on the
// submitting thread (and the retries on the I/O thread); owns nothing but the pending
// asynchronous submits, each kept alive by its own shared_ptr.
#pragma once

#include <jsonlw/detail/bounded_ring.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/overflow.hpp>
#include <jsonlw/submit_result.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>

namespace jsonlw::detail {

template <class Record>
struct FullQueue {
    using Ring = BoundedRing<Record>;
    using Handler = boost::asio::any_completion_handler<void(SubmitResult)>;

    // submit() found the queue full: apply the overflow policy to `rec`.
    static SubmitResult submit(WriterCore& core, Ring& ring, Record& rec)
    {
        const auto& o = core.options();
        std::uint64_t pos;
        if (o.overflow == Overflow::drop_oldest) {
            for (;;) {
                if (ring.try_pop_into([](Record&&) noexcept {})) core.count_evicted();
                switch (ring.try_push(rec, pos)) {
                case Ring::Push::ok: core.after_push(pos); return SubmitResult::accepted;
                case Ring::Push::closed: core.count_closed(); return SubmitResult::closed;
                case Ring::Push::full: continue;
                }
            }
        }
        if (o.overflow == Overflow::block) {
            const auto deadline = std::chrono::steady_clock::now() + o.block_timeout;
            for (;;) {
                if (!core.wait_for_space(deadline)) break;
                switch (ring.try_push(rec, pos)) {
                case Ring::Push::ok: core.after_push(pos); return SubmitResult::accepted;
                case Ring::Push::closed: core.count_closed(); return SubmitResult::closed;
                case Ring::Push::full: continue;
                }
            }
        }
        core.count_queue_full();
        return SubmitResult::dropped_queue_full;
    }

    // async_submit() under Overflow::block: retried after each pop until block_timeout,
    // completed through the writer's executor, then on the handler's associated executor.
    static void submit_async(const std::shared_ptr<WriterCore>& core, Ring& ring, Record rec,
                             Handler handler)
    {
        auto op = std::make_shared<Blocked>(std::move(rec), std::move(handler), core->executor());
        op->timer.expires_after(core->options().block_timeout);
        op->timer.async_wait([core, op](boost::system::error_code ec) {
            if (ec) return;  // cancelled: the record went in (or was refused as closed)
            op->expired.store(true, std::memory_order_release);
            expire(*core, op);
        });
        retry(core, ring, op);
    }

private:
    // state: 0 idle, 1 a retry is pushing, 2 completed. Whoever moves it to 2 completes.
    struct Blocked {
        Record rec;
        Handler handler;
        boost::asio::steady_timer timer;
        std::atomic<int> state{0};
        std::atomic<bool> expired{false};
        Blocked(Record r, Handler h, const boost::asio::any_io_executor& ex)
            : rec(std::move(r)), handler(std::move(h)), timer(ex)
        {
        }
    };

    static void complete(const std::shared_ptr<Blocked>& op, SubmitResult r)
    {
        boost::asio::post(op->timer.get_executor(),
                          boost::asio::append(std::move(op->handler), r));
    }

    static void expire(WriterCore& core, const std::shared_ptr<Blocked>& op)
    {
        int idle = 0;
        if (!op->state.compare_exchange_strong(idle, 2, std::memory_order_acq_rel)) return;
        core.count_queue_full();
        complete(op, SubmitResult::dropped_queue_full);
    }

    // `ring` belongs to the writer, which outlives every retry (its shutdown() runs the
    // remaining waiters before the ring goes).
    static void retry(const std::shared_ptr<WriterCore>& core, Ring& ring,
                      const std::shared_ptr<Blocked>& op)
    {
        int idle = 0;
        if (!op->state.compare_exchange_strong(idle, 1, std::memory_order_acq_rel)) return;
        std::uint64_t pos;
        switch (ring.try_push(op->rec, pos)) {
        case Ring::Push::ok:
            core->after_push(pos);
            op->state.store(2, std::memory_order_release);
            op->timer.cancel();
            return complete(op, SubmitResult::accepted);
        case Ring::Push::closed:
            core->count_closed();
            op->state.store(2, std::memory_order_release);
            op->timer.cancel();
            return complete(op, SubmitResult::closed);
        case Ring::Push::full:
            op->state.store(0, std::memory_order_release);
            if (op->expired.load(std::memory_order_acquire)) return expire(*core, op);
            core->add_space_waiter([core, &ring, op] { retry(core, ring, op); });
            return;
        }
    }
};

}  // namespace jsonlw::detail
