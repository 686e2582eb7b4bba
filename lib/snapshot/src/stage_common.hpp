// What every backend does around its compute, written once: the argument checks of capture(),
// the ring layout, the first-gen plan of a step, and the counters behind stats().
#pragma once

#include "slot_ring.hpp"

#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>

namespace jsonlw::snapshot::detail {

// The checks every backend makes (the device rule aside); nullptr when the step is valid.
inline const char* check_capture(const SnapshotConfig& c, const LogitsView& v,
                                 const std::int32_t* sampled, std::span<const RowMeta> meta) noexcept
{
    if (v.rows < 0) return "rows is negative";
    if (v.rows > c.max_rows) return "rows exceeds max_rows";
    if (v.vocab < 1) return "vocab must be at least 1";
    if (v.vocab > c.max_vocab) return "vocab exceeds max_vocab";
    if (v.row_stride < v.vocab) return "row_stride is smaller than vocab";
    if (v.dtype != LogitDType::f32 && v.dtype != LogitDType::f16 && v.dtype != LogitDType::bf16)
        return "unknown dtype";
    if (meta.size() != std::size_t(v.rows)) return "meta.size() differs from rows";
    if (v.rows > 0 && (v.data == nullptr || sampled == nullptr)) return "logits or sampled ids is null";
    return nullptr;
}

// Slots for max_rows rows; with first-gen capture, a pool per slot holding
// max_first_gen_rows_per_step rows of max_vocab at the widest item (fp32).
inline RingLayout ring_layout(const SnapshotConfig& c) noexcept
{
    RingLayout layout;
    layout.slots = c.ring_slots;
    layout.max_rows = c.max_rows;
    if (c.first_gen != FirstGenMode::off) {
        layout.max_first_gen_rows = c.max_first_gen_rows_per_step;
        layout.first_gen_pool_bytes =
            std::size_t(c.max_first_gen_rows_per_step) * std::size_t(c.max_vocab) * 4;
    }
    return layout;
}

// Which of a step's first-gen rows fit the slot: the first ones, in row order.
struct FirstGenPlan {
    std::size_t item = 0;     // bytes of one captured row (0: first-gen capture is off)
    int rows = 0;             // captured
    std::uint32_t dropped = 0;  // flagged but not captured (pool or entry count too small)
};
inline FirstGenPlan plan_first_gen(const SnapshotConfig& c, const LogitsView& v,
                                   std::span<const RowMeta> meta, const RingLayout& layout) noexcept
{
    FirstGenPlan p;
    if (c.first_gen == FirstGenMode::off) return p;
    p.item = first_gen_item_bytes(c.first_gen, v.dtype, v.vocab);
    std::size_t bytes = 0;
    for (const RowMeta& m : meta) {
        if (!(m.flags & RowMeta::first_gen)) continue;
        if (p.rows < layout.max_first_gen_rows && bytes + p.item <= layout.first_gen_pool_bytes) {
            ++p.rows;
            bytes += p.item;
        } else {
            ++p.dropped;
        }
    }
    return p;
}

// The counters of stats(), updated with relaxed atomics (read together, they are a snapshot
// of independent counts, not a transaction), and the last error.
class StageCounters {
public:
    CaptureResult invalid(const char* why) noexcept
    {
        invalid_.fetch_add(1, std::memory_order_relaxed);
        set_error(std::string("capture: ") + why);
        return CaptureResult::invalid_argument;
    }
    CaptureResult drop(SlotRing& ring, int rows) noexcept
    {
        ring.record_drop();
        dropped_steps_.fetch_add(1, std::memory_order_relaxed);
        dropped_rows_.fetch_add(std::uint64_t(rows), std::memory_order_relaxed);
        return CaptureResult::dropped;
    }
    void captured(int rows, const FirstGenPlan& fg) noexcept
    {
        captured_steps_.fetch_add(1, std::memory_order_relaxed);
        captured_rows_.fetch_add(std::uint64_t(rows), std::memory_order_relaxed);
        first_gen_rows_.fetch_add(std::uint64_t(fg.rows), std::memory_order_relaxed);
        first_gen_dropped_.fetch_add(fg.dropped, std::memory_order_relaxed);
    }
    // The slot wait of one capture (acquire()): waited_ns > 0 when it had to wait.
    void slot_wait(std::int64_t waited_ns, bool timed_out) noexcept
    {
        if (waited_ns <= 0 && !timed_out) return;
        slot_waits_.fetch_add(1, std::memory_order_relaxed);
        slot_wait_ns_.fetch_add(std::uint64_t(std::max<std::int64_t>(waited_ns, 0)),
                                std::memory_order_relaxed);
        if (timed_out) slot_wait_timeouts_.fetch_add(1, std::memory_order_relaxed);
    }
    void slow_path_rows(std::uint64_t n) noexcept { slow_rows_.fetch_add(n, std::memory_order_relaxed); }
    void first_gen_overflow(std::uint64_t n) noexcept
    {
        first_gen_overflow_.fetch_add(n, std::memory_order_relaxed);
    }
    void watchdog_fired() noexcept { watchdog_fires_.fetch_add(1, std::memory_order_relaxed); }
    void set_error(const std::string& s) noexcept
    {
        try {
            std::lock_guard lock(error_mutex_);
            last_error_ = s;
        } catch (...) {  // the message is lost, never the caller's step
        }
    }

    SnapshotStats stats(Backend backend, const SlotRing& ring) const
    {
        SnapshotStats s;
        s.backend = backend;
        s.captured_steps = captured_steps_.load(std::memory_order_relaxed);
        s.captured_rows = captured_rows_.load(std::memory_order_relaxed);
        s.dropped_steps = dropped_steps_.load(std::memory_order_relaxed);
        s.dropped_rows = dropped_rows_.load(std::memory_order_relaxed);
        s.invalid_arguments = invalid_.load(std::memory_order_relaxed);
        s.delivered_batches = ring.delivered();
        s.failed_batches = ring.failed_batches();
        s.sink_failures = ring.sink_failures();
        s.first_gen_rows = first_gen_rows_.load(std::memory_order_relaxed);
        s.first_gen_dropped = first_gen_dropped_.load(std::memory_order_relaxed);
        s.first_gen_overflow_to_inf = first_gen_overflow_.load(std::memory_order_relaxed);
        s.slow_path_rows = slow_rows_.load(std::memory_order_relaxed);
        s.watchdog_fires = watchdog_fires_.load(std::memory_order_relaxed);
        s.slot_waits = slot_waits_.load(std::memory_order_relaxed);
        s.slot_wait_timeouts = slot_wait_timeouts_.load(std::memory_order_relaxed);
        s.slot_wait_us = slot_wait_ns_.load(std::memory_order_relaxed) / 1000;
        s.waiting_for_slot = std::uint64_t(ring.slot_waiters());
        s.in_flight = ring.committed() - ring.delivered();
        s.leased = ring.leased();
        {
            std::lock_guard lock(error_mutex_);
            s.last_error = last_error_;
        }
        if (s.last_error.empty()) s.last_error = ring.last_sink_error();
        return s;
    }

private:
    std::atomic<std::uint64_t> captured_steps_{0}, captured_rows_{0}, dropped_steps_{0},
        dropped_rows_{0}, invalid_{0}, slow_rows_{0}, first_gen_rows_{0}, first_gen_dropped_{0},
        first_gen_overflow_{0}, watchdog_fires_{0}, slot_waits_{0}, slot_wait_timeouts_{0},
        slot_wait_ns_{0};
    mutable std::mutex error_mutex_;
    std::string last_error_;
};

// The ring slot for the next step, waiting up to config.slot_wait for one (counted); -1: the
// step is dropped (the caller counts the drop).
inline int acquire_slot(SlotRing& ring, const SnapshotConfig& c, StageCounters& counters) noexcept
{
    std::int64_t waited_ns = 0;
    const int slot = ring.acquire(c.slot_wait, &waited_ns);
    counters.slot_wait(waited_ns, slot < 0 && c.slot_wait.count() > 0);
    return slot;
}

}  // namespace jsonlw::snapshot::detail
