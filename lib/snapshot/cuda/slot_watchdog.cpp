// slot_watchdog.hpp: the watchdog (host_func mode: the oldest enqueued slot once overdue, every
// watchdog/4) or the poller (poll mode: every enqueued slot in order, every millisecond).
#include "slot_watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace jsonlw::snapshot::detail {

void SlotWatchdog::start()
{
    thread_ = std::thread([this] { watch(); });
}

void SlotWatchdog::stop() noexcept
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void SlotWatchdog::watch()
{
    (void)cudaSetDevice(device_.device());
    SlotRing& ring = device_.ring();
    const bool poll = config_.completion == CompletionMode::poll;
    const auto period = poll ? std::chrono::milliseconds(1)
                             : std::max(std::chrono::milliseconds(1), config_.watchdog / 4);
    const int n = config_.ring_slots;
    std::uint64_t next = 0;  // the batch_seq-order slot to look at first
    std::unique_lock lock(mutex_);
    while (!stop_) {
        cv_.wait_for(lock, period);
        if (stop_) break;
        lock.unlock();
        // Slots complete in order, so the oldest enqueued one is the next after the last
        // completed; walk from the delivery position.
        next = ring.delivered();
        for (int i = 0; i < n; ++i) {
            const int slot = static_cast<int>((next + std::uint64_t(i)) % std::uint64_t(n));
            std::int64_t t_enq = 0;
            if (!ring.enqueued(slot, &t_enq)) continue;
            if (!poll && steady_ns() - t_enq <
                             std::chrono::duration_cast<std::chrono::nanoseconds>(config_.watchdog).count())
                break;
            const cudaError_t q = cudaEventQuery(device_.slot_copied(slot));
            if (q == cudaErrorNotReady) break;
            // Counted before the batch is handed on, so a sink that reads stats() when
            // the batch arrives sees this completion counted.
            const bool failed = q != cudaSuccess;
            if (failed) {
                (void)cudaGetLastError();
                counters_.set_error(cuda_error_text("watchdog: cudaEventQuery", q));
            }
            if (ring.claim(slot)) {
                if (!poll) counters_.watchdog_fired();
                ring.finish(slot, failed);
            }
            if (!poll) break;  // the oldest only
        }
        lock.lock();
    }
}

}  // namespace jsonlw::snapshot::detail
