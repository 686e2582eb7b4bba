// SnapshotStage: at each decode step, reads a [rows, vocab] logits matrix and the sampled ids,
// computes per row the top-k, the sampled token's logprob and rank, log-sum-exp and NaN/inf
// counts (semantics: reference.hpp, docs/snapshot.md), and hands the results to a sink as one
// SnapshotBatch per step, in capture order. Backends: CPU (always built; also the reference)
// and CUDA (built when nvcc is found; used only when a device is present).
//
// Thread-safety: capture() is called by one thread at a time (the decode loop); with no free
// slot it waits at most config.slot_wait (default 0: not at all), then the step is dropped
// and counted. stats() and drain() may
// be called from any thread; drain() blocks, so never on an event-loop thread. The sink runs
// on a stage thread (the capturing thread for the CPU backend, a CUDA driver thread or the
// stage's watchdog thread for CUDA): it must only hand the batch on (asio_bridge.hpp posts it
// to an executor). A SnapshotBatch may outlive the stage; its lease keeps the slot's memory.
#pragma once

#include <jsonlw/snapshot/types.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace jsonlw::snapshot {

enum class Backend : std::uint8_t {
    automatic,  // CUDA when built with it and cudaGetDeviceCount succeeds with a count > 0; else CPU
    cpu,        // the reference implementation, rows spread over a thread pool
    cuda,       // the CUDA backend; create() throws when it is not built or no device is usable
};
const char* to_string(Backend b) noexcept;

enum class CaptureResult : std::uint8_t {
    enqueued,          // the step's batch will reach the sink
    dropped,           // no free slot (the sink is behind): counted, gap_before on the next batch
    invalid_argument,  // a null pointer, a shape over the configured limits, a device mismatch,
                      // or meta.size() != rows: counted, stats().last_error says which
};
const char* to_string(CaptureResult r) noexcept;

// Number of usable CUDA devices: 0 when built without CUDA, when cudaGetDeviceCount fails
// (no driver: error 35, no device: 100, ...) or reports none. *error gets the CUDA error code
// (0 on success) when given.
int cuda_device_count(int* error = nullptr) noexcept;

// CUDA streams whose stage was destroyed before they completed (config.close_timeout), over
// the process's life; 0 when built without CUDA. Their resources stay allocated.
std::uint64_t abandoned_streams() noexcept;

namespace detail {
class SlotRing;
}

// Ownership of one ring slot: while held, the slot's rows and first-gen bytes stay valid and
// the slot is not reused. Destroying (or release()) frees it, on any thread.
class SlotLease {
public:
    SlotLease() noexcept = default;
    SlotLease(std::shared_ptr<detail::SlotRing> ring, int slot) noexcept
        : ring_(std::move(ring)), slot_(slot)
    {
    }
    SlotLease(SlotLease&& o) noexcept : ring_(std::move(o.ring_)), slot_(o.slot_) { o.slot_ = -1; }
    SlotLease& operator=(SlotLease&& o) noexcept
    {
        if (this != &o) {
            release();
            ring_ = std::move(o.ring_);
            slot_ = o.slot_;
            o.slot_ = -1;
        }
        return *this;
    }
    SlotLease(const SlotLease&) = delete;
    SlotLease& operator=(const SlotLease&) = delete;
    ~SlotLease() { release(); }

    void release() noexcept;
    explicit operator bool() const noexcept { return slot_ >= 0 && ring_ != nullptr; }

private:
    std::shared_ptr<detail::SlotRing> ring_;
    int slot_ = -1;
};

// The whole logits row of a sequence's first generated token, as captured (little-endian).
struct FirstGenLogits {
    std::uint64_t request_id = 0;
    std::uint32_t seq_index = 0;
    std::uint32_t step = 0;
    LogitDType dtype = LogitDType::f16;  // as stored in bytes (dtype_name(): the item's "dtype")
    std::int64_t shape[2] = {1, 0};     // {1, V}
    std::span<const std::byte> bytes{};
    std::uint32_t overflow_to_inf = 0;  // finite values that became inf (bf16 -> fp16 compat)
};

// One captured step. rows and first_gen point into the slot the lease holds.
struct SnapshotBatch {
    std::uint64_t batch_seq = 0;    // 0, 1, 2, ... over enqueued steps
    std::uint64_t gap_before = 0;   // steps dropped between the previous batch and this one
    std::int64_t t_enqueue_ns = 0;  // steady clock: capture() called
    std::int64_t t_ready_ns = 0;    // steady clock: results on the host
    std::uint32_t first_gen_dropped = 0;  // first-gen rows of this step not captured
    bool failed = false;            // the device failed this step (rows not valid; last_error)
    std::span<const TokenSnapshot> rows{};
    std::span<const FirstGenLogits> first_gen{};
    SlotLease lease{};
};

// Called once per enqueued step, in capture order, on a stage thread (see the top).
using BatchSink = std::function<void(SnapshotBatch&&)>;

struct SnapshotStats {
    Backend backend = Backend::cpu;
    std::uint64_t captured_steps = 0;   // capture() calls that returned Enqueued
    std::uint64_t captured_rows = 0;
    std::uint64_t dropped_steps = 0;    // capture() calls that returned Dropped
    std::uint64_t dropped_rows = 0;
    std::uint64_t invalid_arguments = 0;
    std::uint64_t delivered_batches = 0;  // handed to the sink
    std::uint64_t failed_batches = 0;     // delivered with failed = true
    std::uint64_t sink_failures = 0;      // the sink threw (the batch is lost, the slot freed)
    std::uint64_t first_gen_rows = 0;     // captured
    std::uint64_t first_gen_dropped = 0;  // first-gen rows not captured (pool too small)
    std::uint64_t first_gen_overflow_to_inf = 0;
    std::uint64_t slow_path_rows = 0;     // rows with NaN/+inf (the GPU re-scans their tiles)
    std::uint64_t watchdog_fires = 0;     // slots completed by the watchdog, not the host function
    std::uint64_t slot_waits = 0;         // captures that found no free slot and waited
    std::uint64_t slot_wait_timeouts = 0;  // of which none was free by slot_wait: dropped
    std::uint64_t slot_wait_us = 0;       // total time spent waiting, microseconds
    std::uint64_t waiting_for_slot = 0;   // 1 while a capture() waits for a slot now
    std::uint64_t in_flight = 0;          // enqueued, not yet delivered
    std::uint64_t leased = 0;             // delivered, lease not yet released
    std::string last_error;
};

class SnapshotStage {
public:
    // Throws std::invalid_argument for a configuration out of range (k not in 1..64,
    // ring_slots < 2, max_rows < 1, ...) and std::runtime_error when Backend::cuda is asked
    // for and cannot be had. The sink must not be empty.
    static std::unique_ptr<SnapshotStage> create(const SnapshotConfig& config, Backend backend,
                                                 BatchSink sink);

    virtual ~SnapshotStage() = default;  // drains first; returns within config.close_timeout

    // Reads `logits` and `sampled_ids` (rows entries; same side as the logits: host for
    // device == -1, else device memory) and enqueues the step. `meta` has one entry per row.
    // CPU: computes before returning (the buffers may be reused once it returns); device views
    // are refused. CUDA: work goes on `stream` (a cudaStream_t; nullptr = the legacy default
    // stream); device buffers must stay unchanged until that stream has passed this point, host
    // views are uploaded before capture() returns (which may then wait for the stream's earlier
    // work) and may be reused at once. Never throws; waits for a ring slot only as long as
    // config.slot_wait allows.
    virtual CaptureResult capture(const LogitsView& logits, const std::int32_t* sampled_ids,
                                  std::span<const RowMeta> meta, void* stream = nullptr) noexcept = 0;

    // Blocks until every enqueued step has been handed to the sink, or the timeout. True when
    // nothing is left in flight.
    virtual bool drain(std::chrono::milliseconds timeout) = 0;

    virtual SnapshotStats stats() const = 0;
    virtual Backend backend() const noexcept = 0;
    virtual const SnapshotConfig& config() const noexcept = 0;
};

}  // namespace jsonlw::snapshot
