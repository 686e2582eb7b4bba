// IoPace (see io_pace.hpp): the paced steps' timer, looks and end, on a strand of the I/O
// executor.
#include "io_pace.hpp"

#include "writer_core_impl.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <utility>

namespace jsonlw::detail {

namespace asio = boost::asio;

IoPace::IoPace(Drain& drain, const asio::any_io_executor& io_ex)
    : drain_(drain), strand_(asio::make_strand(io_ex)), timer_(strand_)
{
}

void IoPace::run(std::uint64_t consumed)
{
    cut_.store(false, std::memory_order_relaxed);
    running_.store(true, std::memory_order_seq_cst);
    asio::post(strand_, [this, consumed] { wait(consumed); });
}

bool IoPace::cut() noexcept
{
    cut_.store(true, std::memory_order_seq_cst);
    return running_.load(std::memory_order_seq_cst);
}

// As long as half a batch (Drain::linger_target()) takes to arrive at the rate records came
// since the last wait, but no longer than the longest poll (idle_poll_max, or flush_interval
// when shorter): a third to a half of the looks cost the caller's next submit() a cross-core
// miss (a look reads the cell that caller fills next), so a steady stream is looked at once
// per half batch — one call in 128 at the defaults — rather than every idle_poll (docs/queue.md, "The
// tail"); and a small queue at a high rate is not left to fill to a quarter, where a producer
// would post the burst's wake-up (a system call on its thread) and, under Overflow::block,
// wait for room. Before the rate is known: idle_poll. A batch already waiting is stepped at
// once.
void IoPace::wait(std::uint64_t consumed)
{
    if (cut_.load(std::memory_order_seq_cst) || drain_.detaching()) return finish();
    const std::uint64_t target = drain_.linger_target();
    if (drain_.ring().published(consumed + target - 1)) {
        asio::post(strand_, [this] { look(); });  // not inline: others share the executor
        return;
    }
    const auto now = clock::now();
    clock::duration pause = drain_.opts_.idle_poll;
    if (paced_at_ && now > *paced_at_ && consumed > paced_head_) {
        const double per_tick = static_cast<double>(consumed - paced_head_) /
                                static_cast<double>((now - *paced_at_).count());
        const double half = static_cast<double>(std::max<std::uint64_t>(1, target / 2));
        pause = drain_.longest_poll();
        if (half / per_tick < static_cast<double>(pause.count()))
            pause = clock::duration(static_cast<clock::rep>(half / per_tick));
    }
    paced_at_ = now;
    paced_head_ = consumed;
    timer_.expires_after(pause);
    timer_.async_wait(asio::bind_executor(strand_, [this](const boost::system::error_code&) {
        look();
    }));
}

// A look: only whether the oldest cell holds a record (RingPositions::published(); the
// tail's line is the one every push writes next). Empty: the run ends and the drain's
// strand polls (Drain::idle()).
void IoPace::look()
{
    if (cut_.load(std::memory_order_seq_cst) || drain_.detaching() || drain_.yield_requested())
        return finish();
    const auto& ring = drain_.ring();
    if (!ring.published(ring.consumed())) return finish();
    drain_.step_io();
    wait(ring.consumed());
}

void IoPace::finish()
{
    running_.store(false, std::memory_order_seq_cst);
    drain_.end_pace_io();  // the last touch: the writer may be gone after it
}

}  // namespace jsonlw::detail
