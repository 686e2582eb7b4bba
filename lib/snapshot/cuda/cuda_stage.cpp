// The CUDA backend of SnapshotStage: capture() enqueues the kernels on the caller's stream, the
// results' copy into a pinned ring slot on the stage's copy stream, and a host function that
// only completes the slot (SlotRing::complete: an atomic state change and the sink, which the
// Asio bridge turns into one post). A watchdog thread covers host functions that never run
// (the context failed: CUDA skips them) by querying the slot's event once it is overdue.
//
// Threads: capture() on the decode thread (never waits; CUDA enqueue calls only). The host
// function on a CUDA driver thread (no CUDA calls). The watchdog thread (cudaEventQuery).
// The sink's own thread is never asked to call CUDA; only the last SlotLease to go frees the
// pinned slots (cudaFreeHost), which happens at teardown.
//
// The parts, one file each: the device objects and the pinned ring (stage_device.cpp), the
// upload of host logits (host_upload.cpp), the watchdog (slot_watchdog.cpp), the pinned
// allocator (pinned_host_allocator.cpp) and the error text (cuda_errors.cpp).
#include "../src/backends.hpp"
#include "../src/slot_ring.hpp"
#include "../src/stage_common.hpp"
#include "cuda_errors.hpp"
#include "host_upload.hpp"
#include "kernels.hpp"
#include "slot_watchdog.hpp"
#include "stage_device.hpp"

#include <jsonlw/snapshot/first_gen.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::snapshot {

int cuda_device_count(int* error) noexcept
{
    int n = 0;  // cudaGetDeviceCount leaves it untouched on failure
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (error) *error = static_cast<int>(e);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n > 0 ? n : 0;
}

namespace {
std::atomic<std::uint64_t> g_abandoned_streams{0};  // abandoned_streams()
}  // namespace

std::uint64_t abandoned_streams() noexcept { return g_abandoned_streams.load(std::memory_order_relaxed); }

namespace detail {
namespace {

using namespace cuda_detail;

class CudaStage final : public SnapshotStage {
public:
    CudaStage(const SnapshotConfig& config, BatchSink sink)
        : config_(config), dev_(config_, std::move(sink)), upload_(config_.max_rows),
          watchdog_(config_, dev_, counters_)
    {
        watchdog_.start();
    }

    ~CudaStage() override
    {
        // Teardown order: no more captures; the copy stream's work done (its host functions run);
        // every batch handed on (the watchdog still running for a failed context); then the
        // watchdog stopped and the device objects destroyed. Pinned slots stay with the ring
        // until the last lease goes. All of it within config.close_timeout: a stream that has
        // not completed by then (a hung kernel) is abandoned, as a writer's timed close does.
        closing_.store(true, std::memory_order_release);
        (void)cudaSetDevice(dev_.device());
        const auto deadline = std::chrono::steady_clock::now() + config_.close_timeout;
        const bool stream_done = dev_.wait_copies(deadline);
        dev_.ring().wait_delivered(std::min(deadline, std::chrono::steady_clock::now() +
                                                          config_.watchdog * 2 + std::chrono::milliseconds(100)));
        watchdog_.stop();
        if (stream_done) {
            release_device();
            return;
        }
        abandon();
    }

    CaptureResult capture(const LogitsView& v, const std::int32_t* sampled,
                          std::span<const RowMeta> meta, void* stream_ptr) noexcept override
    {
        const std::int64_t t0 = steady_ns();
        if (closing_.load(std::memory_order_acquire))
            return counters_.invalid("capture() after the stage closed");
        if (const char* why = check_args(v, sampled, meta)) return counters_.invalid(why);

        SlotRing& ring = dev_.ring();
        const FirstGenPlan fg = plan_first_gen(config_, v, meta, ring.layout());
        const std::size_t item = fg.item;
        const int fg_rows = fg.rows;
        if (fg.dropped && config_.backpressure == Backpressure::drop_step)
            return counters_.drop(ring, v.rows);

        const int slot = acquire_slot(ring, config_, counters_);
        if (slot < 0) return counters_.drop(ring, v.rows);
        const SlotBuffers& buf = ring.buffers(slot);
        DeviceSlot& ds = dev_.slot(slot);

        // Identity stays on the host: the copies below skip these fields.
        for (int r = 0; r < v.rows; ++r) {
            TokenSnapshot& t = buf.rows[r];
            const RowMeta& m = meta[std::size_t(r)];
            t.request_id = m.request_id;
            t.seq_index = m.seq_index;
            t.step = m.step;
            t.row_flags = m.flags;
        }
        FirstGenArgs fga;
        std::vector<std::int32_t>& fg_src = fg_src_;  // reused, no allocation once grown
        fg_src.clear();
        if (fg_rows) {
            const LogitDType dtype = first_gen_stored_dtype(config_.first_gen, v.dtype);
            int i = 0;
            for (int r = 0; r < v.rows && i < fg_rows; ++r) {
                const RowMeta& m = meta[std::size_t(r)];
                if (!(m.flags & RowMeta::first_gen)) continue;
                FirstGenLogits& fg = buf.first_gen[i];
                fg.request_id = m.request_id;
                fg.seq_index = m.seq_index;
                fg.step = m.step;
                fg.dtype = dtype;
                fg.shape[0] = 1;
                fg.shape[1] = v.vocab;
                fg.overflow_to_inf = 0;  // copied from the device below
                fg.bytes = std::span<const std::byte>(buf.first_gen_pool + std::size_t(i) * item, item);
                fg_src.push_back(r);
                ++i;
            }
        }

        auto* stream = static_cast<cudaStream_t>(stream_ptr);
        EnqueueStatus status;

        // The scratch is shared by all slots: a capture on another stream waits for the last one.
        if (have_last_stream_ && stream != last_stream_)
            status.step(cudaStreamWaitEvent(stream, dev_.scratch_free(), 0), "cudaStreamWaitEvent(scratch)");
        const DeviceInputs in = upload_.stage(v, sampled, stream, status);
        StepArgs sa;
        sa.logits = in.logits;
        sa.dtype = v.dtype;
        sa.rows = v.rows;
        sa.vocab = v.vocab;
        sa.row_stride = in.row_stride;
        sa.sampled = in.sampled;
        sa.k = config_.k;
        sa.partials = dev_.partials();
        sa.candidates = dev_.candidates();
        sa.out = ds.rows;
        const StepPlan plan = plan_step(v.dtype, v.vocab, v.rows, dev_.sm_count());
        if (status.ok() && v.rows > 0) status.step(launch_step(sa, plan, stream), "kernel launch");
        for (std::size_t base = 0; status.ok() && base < fg_src.size();
             base += first_gen_per_launch) {
            fga.logits = in.logits;
            fga.dtype = v.dtype;
            fga.vocab = v.vocab;
            fga.row_stride = in.row_stride;
            fga.mode = config_.first_gen;
            fga.out = ds.first_gen;
            fga.overflow = ds.overflow + base;
            fga.count = static_cast<int>(std::min<std::size_t>(first_gen_per_launch, fg_src.size() - base));
            for (int j = 0; j < fga.count; ++j) {
                fga.rows[j] = fg_src[base + std::size_t(j)];
                fga.offsets[j] = (base + std::size_t(j)) * item;
            }
            status.step(launch_first_gen(fga, stream), "first-gen kernel launch");
        }
        // The scratch (and the host-upload buffer) are free once this point of the stream passed.
        if (status.ok()) status.step(cudaEventRecord(dev_.scratch_free(), stream), "cudaEventRecord");
        have_last_stream_ = true;
        last_stream_ = stream;

        // Results to the slot on the copy stream, then the host function.
        dev_.enqueue_copies(slot, stream, v.rows, fg_rows, item, status);

        counters_.captured(v.rows, fg);
        ring.commit(slot, v.rows, fg.rows, fg.dropped, t0);
        if (status.ok() && config_.completion == CompletionMode::host_func)
            status.step(dev_.enqueue_completion(slot), "cudaLaunchHostFunc");
        if (!status.ok()) {
            // Nothing more goes to this slot: deliver it as failed now.
            (void)cudaGetLastError();
            counters_.set_error(cuda_error_text(status.what, status.e));
            ring.complete(slot, true);
        }
        if (config_.completion == CompletionMode::poll) watchdog_.wake();
        return CaptureResult::enqueued;
    }

    bool drain(std::chrono::milliseconds timeout) override
    {
        return dev_.ring().wait_delivered(std::chrono::steady_clock::now() + timeout);
    }

    // slow_path_rows and first_gen_overflow_to_inf stay 0 here: counting them would take a pass
    // over the delivered rows on the sink's thread; each row's status_flags and each
    // FirstGenLogits::overflow_to_inf carry them instead.
    SnapshotStats stats() const override { return counters_.stats(Backend::cuda, dev_.ring()); }

    Backend backend() const noexcept override { return Backend::cuda; }
    const SnapshotConfig& config() const noexcept override { return config_; }

private:
    const char* check_args(const LogitsView& v, const std::int32_t* sampled,
                           std::span<const RowMeta> meta) const noexcept
    {
        if (v.device != dev_.device() && v.device != -1)
            return "logits.device is neither host memory (-1) nor the stage's CUDA device";
        if (const char* why = check_capture(config_, v, sampled, meta)) return why;
        if (reinterpret_cast<std::uintptr_t>(v.data) % itemsize(v.dtype) != 0)
            return "logits.data is not aligned to its element size";
        return nullptr;
    }

    // The copy stream missed close_timeout: the steps still in flight reach the sink as failed,
    // and whatever the stream may still touch is leaked (StageDevice::leak; the host-upload
    // buffers are not freed either).
    void abandon() noexcept
    {
        counters_.set_error("close: the copy stream did not complete within close_timeout; abandoned");
        SlotRing& ring = dev_.ring();
        const std::uint64_t first = ring.delivered();
        const int n = config_.ring_slots;
        for (int i = 0; i < n; ++i) {
            const int slot = static_cast<int>((first + std::uint64_t(i)) % std::uint64_t(n));
            if (ring.enqueued(slot, nullptr) && ring.claim(slot)) ring.finish(slot, true);
        }
        dev_.leak();
        g_abandoned_streams.fetch_add(1, std::memory_order_relaxed);
    }

    void release_device() noexcept
    {
        upload_.release();
        dev_.release();
    }

    SnapshotConfig config_;
    StageDevice dev_;
    std::vector<std::int32_t> fg_src_;
    HostUpload upload_;
    bool have_last_stream_ = false;
    cudaStream_t last_stream_ = nullptr;
    std::atomic<bool> closing_{false};

    StageCounters counters_;
    SlotWatchdog watchdog_;
};

}  // namespace

std::unique_ptr<SnapshotStage> make_cuda_stage(const SnapshotConfig& config, BatchSink sink,
                                               std::string* why)
{
    int err = 0;
    if (cuda_device_count(&err) == 0) {
        if (why) {
            *why = err != 0 ? "no usable CUDA device (cudaGetDeviceCount: " +
                                  std::string(cudaGetErrorName(static_cast<cudaError_t>(err))) + ")"
                            : std::string("no CUDA device");
        }
        return nullptr;
    }
    try {
        return std::make_unique<CudaStage>(config, std::move(sink));
    } catch (const std::exception& ex) {
        if (why) *why = ex.what();
        return nullptr;
    }
}

}  // namespace detail
}  // namespace jsonlw::snapshot
