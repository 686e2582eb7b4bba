// The floors of the submit-tail scenario, measured in the same run as the writer: what
// jsonlw's queue costs a paced caller with no writer around it, and what a drain that polls
// every idle_poll costs an idle process at the least (a bare timer on a bare loop). They say
// how much of a cell's figure is the writer's and how much this machine's
// (docs/benchmarks.md, "What limits the cells that miss their goals").
#include "bare_ring.hpp"
#include "clock.hpp"
#include "line_pool.hpp"
#include "paced_calls.hpp"
#include "runs.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

namespace bench {

SubmitCostResult ring_floor_submit_cost(const SubmitCostSpec& s, bool appends)
{
    SubmitCostResult r;
    std::uint64_t popped = 0;
    const auto path = s.dir / "ring-floor.jsonl";
    const int fd = appends ? ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640) : -1;
    if (appends && fd < 0) {
        r.problem = fmt::format("open {}: {}", path.string(), std::strerror(errno));
        return r;
    }
    {
        BareRing ring(s.queue_capacity, std::chrono::microseconds(s.idle_poll_us), fd);
        PacedCalls paced(s, r);
        const auto make = [&](std::size_t i) {
            return [&ring, &line = s.pool->at(i)] { return ring.push(line); };
        };
        if (s.from_loop) {
            // Each call a handler that re-posts itself on an Asio loop with a timer pending
            // (as the writer's loop has its drain's, and any server its sockets): between
            // handlers the scheduler polls its reactor, an epoll_wait() on the caller's
            // thread — what the writer's loop-thread cells pay around each call.
            boost::asio::io_context loop;
            boost::asio::steady_timer pending(loop, std::chrono::hours(1));
            pending.async_wait([](const boost::system::error_code&) {});
            using Make = decltype(make);
            struct Next {
                PacedCalls* paced;
                const Make* calls;
                boost::asio::steady_timer* pending;
                void operator()() const
                {
                    paced->step(*calls);
                    if (paced->more()) boost::asio::post(pending->get_executor(), *this);
                    else pending->cancel();
                }
            };
            boost::asio::post(loop, Next{&paced, &make, &pending});
            loop.run();
        } else {
            while (paced.more()) paced.step(make);
        }
        paced.finish();
        ring.finish();
        popped = ring.popped();
        if (r.problem.empty()) r.problem = ring.problem();
    }
    const std::uint64_t accepted = r.calls - r.refused;
    if (popped != accepted && r.problem.empty())
        r.problem = fmt::format("{} popped, {} pushed", popped, accepted);
    if (fd >= 0) {
        ::close(fd);
        if (r.problem.empty())
            r.problem = file_problem(check_file(path), accepted, accepted * s.pool->line_bytes);
        empty_dir(s.dir);
    }
    return r;
}

double timer_floor_cpu_share(std::chrono::microseconds every, double seconds)
{
    boost::asio::io_context io;
    boost::asio::steady_timer timer(io);
    const auto end = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                              std::chrono::duration<double>(seconds));
    // What a look at an empty queue cannot cost less than: the loop thread woken by its
    // timer, the handler run, the timer set again.
    std::function<void()> arm = [&] {
        timer.expires_after(every);
        timer.async_wait([&](const boost::system::error_code& ec) {
            if (!ec && SteadyClock::now() < end) arm();
        });
    };
    const double c0 = process_cpu_seconds();
    const auto t0 = SteadyClock::now();
    arm();
    io.run();
    return (process_cpu_seconds() - c0) / seconds_since(t0);
}

}  // namespace bench
