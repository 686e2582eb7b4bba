// RoomSteps (see room_steps.hpp): the run a blocked producer asks for, on the I/O executor.
#include "room_steps.hpp"

#include "writer_core_impl.hpp"

#include <boost/asio/post.hpp>

#include <thread>

namespace jsonlw::detail {

void RoomSteps::ask() noexcept
{
    if (running_.exchange(true, std::memory_order_seq_cst)) return;  // it will see this caller
    WriterCore::Impl& d = *core_.impl_;
    if (!d.enter()) {  // the writer is going: shutdown wakes the waiters
        running_.store(false, std::memory_order_seq_cst);
        return;
    }
    boost::asio::post(d.io_ex, [this, life = d.life] {
        run();
        life->leave();  // touches only the shared Life: the core may be gone now
    });
}

// Steps while producers wait and records remain. The caller that asked was counted among the
// waiters before it asked, so once the run marks itself over, a waiter that found it running
// (and posted nothing) is seen by the look after the mark — or, counted after that look, finds
// the mark cleared and posts a run of its own (every access seq_cst).
void RoomSteps::run() noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    const RingPositions& q = *core_.ring_;
    const auto over = [&] {  // nothing more to pop for anyone
        return d.life->detaching.load(std::memory_order_seq_cst) || d.handoff.abandoned();
    };
    for (;;) {
        while (d.space.waiting() > 0 && !over()) {
            const std::uint64_t before = q.consumed();
            d.drain.step_io();
            if (q.consumed() != before) continue;
            // Nothing popped: the queue is empty, or its oldest record is still being copied
            // in by a producer (published in a moment: look again after it).
            if (q.claimed() == q.consumed()) break;
            std::this_thread::yield();
        }
        running_.store(false, std::memory_order_seq_cst);
        if (d.space.waiting() == 0 || over() || !q.published(q.consumed()) ||
            running_.exchange(true, std::memory_order_seq_cst))
            return;
    }
}

}  // namespace jsonlw::detail
