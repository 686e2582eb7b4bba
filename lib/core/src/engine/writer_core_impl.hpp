// WriterCore::Impl: the engine's objects put together, and the one place that says which
// file of lib/core/src/engine/ owns which part (docs/design.md, "Data flow", names the
// objects). Included only by those files.
//
//   writer_core.cpp    the public WriterCore: construction, start(), shutdown(), envelope
//   drain.hpp/.cpp     Drain: the drain coroutine on the strand and its state, its
//                      wake-ups, the hops to the I/O thread and its tasks there (a step
//                      of units, the final close, fsync, reopen, tick)
//   io_pace.hpp/.cpp   IoPace: the drain's steps paced on the I/O executor while records
//                      keep coming
//   unit_context.cpp   UnitContext (jsonlw/detail/unit_context.hpp): a unit's way through
//                      the objects below, for the typed engine's run_unit()
//   close_handoff.hpp  CloseHandoff: who counts the unit in flight when close runs out of time
//   accounting.hpp/.cpp  Accounting: where a record is counted (written, dropped, unknown),
//                      the stats snapshot, the rate-limited logs of each reason
//   sink_set.cpp       SinkSet (jsonlw/detail/sink_set.hpp): the writer's sink stack, the
//                      count of the typed engine's appends to it, fsyncs, reopen, tick, close
//   waiters.hpp/.cpp   Waiters: the pending flush, reopen and close completions
//   async_ops.cpp      async_*_impl, close's protocol and its timeout
//   space_wait.hpp/.cpp  SpaceWait: Overflow::block, producers waiting for room
//   room_steps.hpp/.cpp  RoomSteps: the I/O executor's steps for them, not the strand's
//   serializer_pool.hpp/.cpp  SerializerPool: serializer_threads' helpers
//   parallel_serialize.cpp  a unit's records serialized ahead on the pool
#pragma once

#include <jsonlw/detail/bounded_ring.hpp>
#include <jsonlw/detail/sink_set.hpp>
#include <jsonlw/detail/unit_context.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/error.hpp>

#include "../host_names.hpp"

#include "accounting.hpp"
#include "close_handoff.hpp"
#include "drain.hpp"
#include "room_steps.hpp"
#include "serializer_pool.hpp"
#include "space_wait.hpp"
#include "waiters.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace jsonlw::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

struct WriterCore::Impl {
    explicit Impl(WriterCore& core);  // writer_core.cpp
    ~Impl();

    // --- hooks guard: the typed writer may be destroyed while the core lives on ---
    // Shared with I/O tasks so that a task can leave() after handing its completion to the
    // strand, when the core itself may already be gone.
    struct Life {
        std::atomic<int> active{0};
        std::atomic<bool> detaching{false};
        bool enter() noexcept
        {
            active.fetch_add(1, std::memory_order_seq_cst);
            if (detaching.load(std::memory_order_seq_cst)) {
                leave();
                return false;
            }
            return true;
        }
        void leave() noexcept
        {
            if (active.fetch_sub(1, std::memory_order_seq_cst) == 1) active.notify_all();
        }
    };
    bool enter() noexcept { return life->enter(); }
    void leave() noexcept { life->leave(); }

    // --- the life guard, held by each I/O task and each look at the typed queue ---
    struct Guard {
        Impl& d;
        bool ok;
        explicit Guard(Impl& i) noexcept : d(i), ok(i.enter()) {}
        ~Guard()
        {
            if (ok) d.leave();
        }
        explicit operator bool() const noexcept { return ok; }
    };

    // --- async_ops.cpp (strand) ---
    // Close is done (drained: nothing was left behind): completes every waiter.
    void finish(bool drained);
    void abandon();
    void on_close_request(asio::any_completion_handler<void(error_code, CloseReport)> h);

    // --- parallel_serialize.cpp (start(), on its caller's thread) ---
    static constexpr std::size_t max_serializer_threads = 64;
    void start_serializers() noexcept;

    WriterCore& self;
    asio::strand<asio::any_io_executor> strand;
    std::optional<asio::thread_pool> own_io;
    asio::any_io_executor io_ex;
    asio::steady_timer close_timer;  // shutdown_timeout

    // The engine's objects; each says at its top who calls it from which thread.
    Accounting accounting;
    SinkSet sinks;
    SpaceWait space;
    Waiters waiters;
    CloseHandoff handoff;
    UnitContext unit{self};
    // serializer_threads > 1 (and a writer that allows it): the helpers. Made by start().
    std::unique_ptr<SerializerPool> pool;

    // Guard for the typed writer's lifetime.
    std::shared_ptr<Life> life = std::make_shared<Life>();

    // The drain: its coroutine, wake-ups and state (drain.hpp). It reads the others.
    Drain drain;
    // Overflow::block: the I/O executor's steps for producers waiting for room (room_steps.hpp).
    RoomSteps room{self};
};

}  // namespace jsonlw::detail
