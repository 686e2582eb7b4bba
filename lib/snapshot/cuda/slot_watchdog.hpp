// SlotWatchdog: the CUDA stage's completion thread. In host_func mode it covers host functions
// that never run (the context failed: CUDA skips them) by querying the oldest enqueued slot's
// copied event once it is overdue; in poll mode it completes every slot itself, in order.
// Owned by one CudaStage: start() at the end of its constructor, wake() from capture() on the
// decode thread, stop() in its destructor. The thread calls cudaEventQuery and the ring's
// claim/finish only; the StageDevice, the counters and the config outlive it.
#pragma once

#include "../src/stage_common.hpp"
#include "stage_device.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace jsonlw::snapshot::detail {

class SlotWatchdog {
public:
    SlotWatchdog(const SnapshotConfig& config, StageDevice& device, StageCounters& counters) noexcept
        : config_(config), device_(device), counters_(counters)
    {
    }
    SlotWatchdog(const SlotWatchdog&) = delete;
    SlotWatchdog& operator=(const SlotWatchdog&) = delete;
    ~SlotWatchdog() { stop(); }

    void start();
    // A slot was enqueued: the poller looks now rather than at its next period.
    void wake() noexcept { cv_.notify_one(); }
    // Idempotent; returns once the thread has ended.
    void stop() noexcept;

private:
    void watch();

    const SnapshotConfig& config_;
    StageDevice& device_;
    StageCounters& counters_;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
};

}  // namespace jsonlw::snapshot::detail
