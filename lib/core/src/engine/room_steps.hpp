// RoomSteps: under Overflow::block, the I/O executor's steps for producers waiting for room.
// A producer about to wait (WriterCore::wait_for_space(), counted among SpaceWait's waiters by
// then) asks, from any thread; the run steps on the I/O executor while producers wait and
// each step pops something — never through the drain's strand, which may not run until that
// producer's thread is free again: it may be the only thread of your loop (docs/design.md).
// Owned by WriterCore::Impl; owns only whether a run is posted or running.
#pragma once

#include <jsonlw/detail/writer_core.hpp>

#include <atomic>

namespace jsonlw::detail {

class RoomSteps {
public:
    explicit RoomSteps(WriterCore& core) noexcept : core_(core) {}
    RoomSteps(const RoomSteps&) = delete;
    RoomSteps& operator=(const RoomSteps&) = delete;

    // Any thread, once the caller is counted among the waiters: posts a run unless one is
    // under way (which then sees the caller). Allocates (the post), on a thread about to block.
    void ask() noexcept;

private:
    // The I/O executor: the run.
    void run() noexcept;

    WriterCore& core_;
    std::atomic<bool> running_{false};
};

}  // namespace jsonlw::detail
