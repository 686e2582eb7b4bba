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
#include "../src/backends.hpp"
#include "../src/slot_ring.hpp"
#include "../src/stage_common.hpp"
#include "kernels.hpp"

#include <jsonlw/snapshot/first_gen.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
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

std::int64_t steady_ns() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string cuda_error_text(const char* what, cudaError_t e)
{
    return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) throw std::runtime_error(cuda_error_text(what, e));
}

// Page-locked slots: cudaMemcpyAsync into pageable memory would be synchronous. Portable so
// any device may copy into them; never write-combined (the host reads them).
class PinnedHostAllocator final : public HostAllocator {
public:
    void* allocate(std::size_t bytes) override
    {
        void* p = nullptr;
        if (cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable) != cudaSuccess) {
            (void)cudaGetLastError();
            throw std::bad_alloc();
        }
        return p;
    }
    // Errors are ignored: at process exit the runtime may already be unloading.
    void deallocate(void* p) noexcept override { (void)cudaFreeHost(p); }
};

template <class T>
T* device_alloc(std::size_t count, const char* what)
{
    void* p = nullptr;
    check(cudaMalloc(&p, count * sizeof(T) + 16), what);
    return static_cast<T*>(p);
}

class CudaStage;

// What a host function needs: plain pointers, valid until the stage synchronized its stream.
struct HostFnContext {
    SlotRing* ring = nullptr;
    int slot = 0;
};

void CUDART_CB on_slot_copied(void* p) noexcept
{
    auto* c = static_cast<HostFnContext*>(p);
    c->ring->complete(c->slot, false);
}

class CudaStage final : public SnapshotStage {
public:
    CudaStage(const SnapshotConfig& config, BatchSink sink) : config_(config)
    {
        check(cudaGetDevice(&device_), "cudaGetDevice");
        check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_),
              "cudaDeviceGetAttribute(MultiProcessorCount)");
        const RingLayout layout = ring_layout(config);
        try {
            check(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
            check(cudaEventCreateWithFlags(&scratch_free_, cudaEventDisableTiming), "cudaEventCreate");
            ring_ = SlotRing::create(layout, std::make_unique<PinnedHostAllocator>(), std::move(sink));
            const std::size_t tile_rows =
                max_tile_rows(config.max_rows, config.max_vocab, sm_count_);
            partials_ = device_alloc<TilePartial>(tile_rows, "cudaMalloc(partials)");
            candidates_ = device_alloc<std::uint64_t>(tile_rows * tile_candidates,
                                                      "cudaMalloc(candidates)");
            slots_.resize(std::size_t(config.ring_slots));
            for (std::size_t i = 0; i < slots_.size(); ++i) {
                DeviceSlot& s = slots_[i];
                s.ctx.ring = ring_.get();
                s.ctx.slot = static_cast<int>(i);
                s.rows = device_alloc<TokenSnapshot>(std::size_t(config.max_rows), "cudaMalloc(rows)");
                if (layout.max_first_gen_rows > 0) {
                    s.first_gen = device_alloc<std::byte>(layout.first_gen_pool_bytes,
                                                          "cudaMalloc(first_gen)");
                    s.overflow = device_alloc<std::uint32_t>(std::size_t(layout.max_first_gen_rows),
                                                             "cudaMalloc(overflow)");
                }
                check(cudaEventCreateWithFlags(&s.computed, cudaEventDisableTiming), "cudaEventCreate");
                check(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming), "cudaEventCreate");
            }
        } catch (...) {
            release_device();
            throw;
        }
        watchdog_ = std::thread([this] { watch(); });
    }

    ~CudaStage() override
    {
        // Teardown order: no more captures; the copy stream's work done (its host functions run);
        // every batch handed on (the watchdog still running for a failed context); then the
        // watchdog stopped and the device objects destroyed. Pinned slots stay with the ring
        // until the last lease goes. All of it within config.close_timeout: a stream that has
        // not completed by then (a hung kernel) is abandoned, as a writer's timed close does.
        closing_.store(true, std::memory_order_release);
        (void)cudaSetDevice(device_);
        const auto deadline = std::chrono::steady_clock::now() + config_.close_timeout;
        const bool stream_done = wait_stream(deadline);
        ring_->wait_delivered(std::min(deadline, std::chrono::steady_clock::now() +
                                                     config_.watchdog * 2 + std::chrono::milliseconds(100)));
        {
            std::lock_guard lock(watch_mutex_);
            stop_ = true;
        }
        watch_cv_.notify_all();
        if (watchdog_.joinable()) watchdog_.join();
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

        const FirstGenPlan fg = plan_first_gen(config_, v, meta, ring_->layout());
        const std::size_t item = fg.item;
        const int fg_rows = fg.rows;
        if (fg.dropped && config_.backpressure == Backpressure::drop_step)
            return counters_.drop(*ring_, v.rows);

        const int slot = acquire_slot(*ring_, config_, counters_);
        if (slot < 0) return counters_.drop(*ring_, v.rows);
        const SlotBuffers& buf = ring_->buffers(slot);
        DeviceSlot& ds = slots_[std::size_t(slot)];

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
        cudaError_t e = cudaSuccess;
        const char* what = "";
        auto step = [&](cudaError_t r, const char* w) {
            if (e == cudaSuccess && r != cudaSuccess) {
                e = r;
                what = w;
            }
            return e == cudaSuccess;
        };

        // The scratch is shared by all slots: a capture on another stream waits for the last one.
        if (have_last_stream_ && stream != last_stream_)
            step(cudaStreamWaitEvent(stream, scratch_free_, 0), "cudaStreamWaitEvent(scratch)");
        // Host logits go to a device buffer first. From pageable memory cudaMemcpy2DAsync returns
        // once the bytes are staged, so the caller may reuse its buffers when capture() returns
        // (it may wait for the stream's earlier work to do so).
        const void* logits = v.data;
        std::int64_t row_stride = v.row_stride;
        const std::int32_t* sampled_ids = sampled;
        if (v.device == -1 && v.rows > 0 && e == cudaSuccess) {
            const std::size_t row_bytes = std::size_t(v.vocab) * itemsize(v.dtype);
            if (!ensure_host_upload(row_bytes * std::size_t(v.rows), v.rows)) {
                e = cudaErrorMemoryAllocation;
                what = "cudaMalloc(host upload)";
            }
            step(cudaMemcpy2DAsync(host_logits_, row_bytes, v.data,
                                   std::size_t(v.row_stride) * itemsize(v.dtype), row_bytes,
                                   std::size_t(v.rows), cudaMemcpyHostToDevice, stream),
                 "cudaMemcpy2DAsync(host logits)");
            step(cudaMemcpyAsync(host_sampled_, sampled, sizeof(std::int32_t) * std::size_t(v.rows),
                                 cudaMemcpyHostToDevice, stream),
                 "cudaMemcpyAsync(host sampled ids)");
            logits = host_logits_;
            row_stride = v.vocab;
            sampled_ids = host_sampled_;
        }
        StepArgs sa;
        sa.logits = logits;
        sa.dtype = v.dtype;
        sa.rows = v.rows;
        sa.vocab = v.vocab;
        sa.row_stride = row_stride;
        sa.sampled = sampled_ids;
        sa.k = config_.k;
        sa.partials = partials_;
        sa.candidates = candidates_;
        sa.out = ds.rows;
        const StepPlan plan = plan_step(v.dtype, v.vocab, v.rows, sm_count_);
        if (e == cudaSuccess && v.rows > 0) step(launch_step(sa, plan, stream), "kernel launch");
        for (std::size_t base = 0; e == cudaSuccess && base < fg_src.size();
             base += first_gen_per_launch) {
            fga.logits = logits;
            fga.dtype = v.dtype;
            fga.vocab = v.vocab;
            fga.row_stride = row_stride;
            fga.mode = config_.first_gen;
            fga.out = ds.first_gen;
            fga.overflow = ds.overflow + base;
            fga.count = static_cast<int>(std::min<std::size_t>(first_gen_per_launch, fg_src.size() - base));
            for (int j = 0; j < fga.count; ++j) {
                fga.rows[j] = fg_src[base + std::size_t(j)];
                fga.offsets[j] = (base + std::size_t(j)) * item;
            }
            step(launch_first_gen(fga, stream), "first-gen kernel launch");
        }
        // The scratch (and the host-upload buffer) are free once this point of the stream passed.
        if (e == cudaSuccess) step(cudaEventRecord(scratch_free_, stream), "cudaEventRecord");
        have_last_stream_ = true;
        last_stream_ = stream;

        // Results to the slot on the copy stream, then the host function.
        if (e == cudaSuccess) step(cudaEventRecord(ds.computed, stream), "cudaEventRecord");
        if (e == cudaSuccess) step(cudaStreamWaitEvent(copy_stream_, ds.computed, 0), "cudaStreamWaitEvent");
        if (e == cudaSuccess && v.rows > 0) {
            constexpr std::size_t pitch = sizeof(TokenSnapshot);
            constexpr std::size_t a0 = offsetof(TokenSnapshot, sampled_id);
            constexpr std::size_t a1 = offsetof(TokenSnapshot, row_flags);
            constexpr std::size_t b0 = offsetof(TokenSnapshot, topk_ids);
            static_assert(a1 < b0 && b0 + 3 * sizeof(float) * SnapshotConfig::max_k == pitch);
            auto* dst = reinterpret_cast<char*>(buf.rows);
            auto* src = reinterpret_cast<const char*>(ds.rows);
            step(cudaMemcpy2DAsync(dst + a0, pitch, src + a0, pitch, a1 - a0, std::size_t(v.rows),
                                   cudaMemcpyDeviceToHost, copy_stream_),
                 "cudaMemcpy2DAsync(rows)");
            step(cudaMemcpy2DAsync(dst + b0, pitch, src + b0, pitch, pitch - b0, std::size_t(v.rows),
                                   cudaMemcpyDeviceToHost, copy_stream_),
                 "cudaMemcpy2DAsync(top-k)");
        }
        if (e == cudaSuccess && fg_rows) {
            step(cudaMemcpyAsync(buf.first_gen_pool, ds.first_gen, std::size_t(fg_rows) * item,
                                 cudaMemcpyDeviceToHost, copy_stream_),
                 "cudaMemcpyAsync(first-gen)");
            constexpr std::size_t of = offsetof(FirstGenLogits, overflow_to_inf);
            step(cudaMemcpy2DAsync(reinterpret_cast<char*>(buf.first_gen) + of, sizeof(FirstGenLogits),
                                   ds.overflow, sizeof(std::uint32_t), sizeof(std::uint32_t),
                                   std::size_t(fg_rows), cudaMemcpyDeviceToHost, copy_stream_),
                 "cudaMemcpy2DAsync(first-gen overflow)");
        }
        if (e == cudaSuccess) step(cudaEventRecord(ds.copied, copy_stream_), "cudaEventRecord");

        counters_.captured(v.rows, fg);
        ring_->commit(slot, v.rows, fg.rows, fg.dropped, t0);
        if (e == cudaSuccess && config_.completion == CompletionMode::host_func)
            step(cudaLaunchHostFunc(copy_stream_, on_slot_copied, &ds.ctx), "cudaLaunchHostFunc");
        if (e != cudaSuccess) {
            // Nothing more goes to this slot: deliver it as failed now.
            (void)cudaGetLastError();
            counters_.set_error(cuda_error_text(what, e));
            ring_->complete(slot, true);
        }
        if (config_.completion == CompletionMode::poll) watch_cv_.notify_one();
        return CaptureResult::enqueued;
    }

    bool drain(std::chrono::milliseconds timeout) override
    {
        return ring_->wait_delivered(std::chrono::steady_clock::now() + timeout);
    }

    // slow_path_rows and first_gen_overflow_to_inf stay 0 here: counting them would take a pass
    // over the delivered rows on the sink's thread; each row's status_flags and each
    // FirstGenLogits::overflow_to_inf carry them instead.
    SnapshotStats stats() const override { return counters_.stats(Backend::cuda, *ring_); }

    Backend backend() const noexcept override { return Backend::cuda; }
    const SnapshotConfig& config() const noexcept override { return config_; }

private:
    struct DeviceSlot {
        TokenSnapshot* rows = nullptr;
        std::byte* first_gen = nullptr;
        std::uint32_t* overflow = nullptr;
        cudaEvent_t computed = nullptr;
        cudaEvent_t copied = nullptr;
        HostFnContext ctx;
    };

    const char* check_args(const LogitsView& v, const std::int32_t* sampled,
                           std::span<const RowMeta> meta) const noexcept
    {
        if (v.device != device_ && v.device != -1)
            return "logits.device is neither host memory (-1) nor the stage's CUDA device";
        if (const char* why = check_capture(config_, v, sampled, meta)) return why;
        if (reinterpret_cast<std::uintptr_t>(v.data) % itemsize(v.dtype) != 0)
            return "logits.data is not aligned to its element size";
        return nullptr;
    }

    // The watchdog (host_func mode: the oldest enqueued slot once overdue, every watchdog/4)
    // or the poller (Poll mode: every enqueued slot in order, every millisecond).
    void watch()
    {
        (void)cudaSetDevice(device_);
        const bool poll = config_.completion == CompletionMode::poll;
        const auto period = poll ? std::chrono::milliseconds(1)
                                 : std::max(std::chrono::milliseconds(1), config_.watchdog / 4);
        const int n = config_.ring_slots;
        std::uint64_t next = 0;  // the batch_seq-order slot to look at first
        std::unique_lock lock(watch_mutex_);
        while (!stop_) {
            watch_cv_.wait_for(lock, period);
            if (stop_) break;
            lock.unlock();
            // Slots complete in order, so the oldest enqueued one is the next after the last
            // completed; walk from the delivery position.
            next = ring_->delivered();
            for (int i = 0; i < n; ++i) {
                const int slot = static_cast<int>((next + std::uint64_t(i)) % std::uint64_t(n));
                std::int64_t t_enq = 0;
                if (!ring_->enqueued(slot, &t_enq)) continue;
                if (!poll && steady_ns() - t_enq <
                                 std::chrono::duration_cast<std::chrono::nanoseconds>(config_.watchdog).count())
                    break;
                const cudaError_t q = cudaEventQuery(slots_[std::size_t(slot)].copied);
                if (q == cudaErrorNotReady) break;
                // Counted before the batch is handed on, so a sink that reads stats() when
                // the batch arrives sees this completion counted.
                const bool failed = q != cudaSuccess;
                if (failed) {
                    (void)cudaGetLastError();
                    counters_.set_error(cuda_error_text("watchdog: cudaEventQuery", q));
                }
                if (ring_->claim(slot)) {
                    if (!poll) counters_.watchdog_fired();
                    ring_->finish(slot, failed);
                }
                if (!poll) break;  // the oldest only
            }
            lock.lock();
        }
    }

    // The device buffer host logits are uploaded to, grown to the largest step seen. Growing
    // frees the old one, which synchronizes the device: it happens a few times at most.
    bool ensure_host_upload(std::size_t bytes, int rows) noexcept
    {
        if (bytes <= host_logits_bytes_ && rows <= host_sampled_rows_) return true;
        free_host_upload();
        if (cudaMalloc(&host_logits_, bytes) != cudaSuccess ||
            cudaMalloc(reinterpret_cast<void**>(&host_sampled_),
                       sizeof(std::int32_t) * std::size_t(config_.max_rows)) != cudaSuccess) {
            (void)cudaGetLastError();
            return false;
        }
        host_logits_bytes_ = bytes;
        host_sampled_rows_ = config_.max_rows;
        return true;
    }

    // The device copies of host logits and sampled ids, none after.
    void free_host_upload() noexcept
    {
        if (host_logits_) (void)cudaFree(host_logits_);
        if (host_sampled_) (void)cudaFree(host_sampled_);
        host_logits_ = nullptr;
        host_sampled_ = nullptr;
        host_logits_bytes_ = 0;
        host_sampled_rows_ = 0;
    }

    // Polls the copy stream until it has run everything enqueued (true) or the deadline.
    // cudaStreamSynchronize has no timeout; a query every 100 us..1 ms costs nothing next to
    // a kernel. A failed context completes the stream with an error: done, too.
    bool wait_stream(std::chrono::steady_clock::time_point deadline) noexcept
    {
        auto pause = std::chrono::microseconds(100);
        for (;;) {
            const cudaError_t q = cudaStreamQuery(copy_stream_);
            if (q != cudaErrorNotReady) {
                if (q != cudaSuccess) (void)cudaGetLastError();
                return true;
            }
            if (std::chrono::steady_clock::now() >= deadline) return false;
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(1000));
        }
    }

    // The copy stream missed close_timeout: the steps still in flight reach the sink as failed,
    // and whatever the stream may still touch is leaked, never freed under it: device memory
    // (a kernel may write it), the pinned slots (the ring; a copy may land in them) and the
    // host functions' contexts (slots_, which a late host function reads; a moved vector keeps
    // its elements' addresses). The late host function finds its slot delivered.
    void abandon() noexcept
    {
        counters_.set_error("close: the copy stream did not complete within close_timeout; abandoned");
        const std::uint64_t first = ring_->delivered();
        const int n = config_.ring_slots;
        for (int i = 0; i < n; ++i) {
            const int slot = static_cast<int>((first + std::uint64_t(i)) % std::uint64_t(n));
            if (ring_->enqueued(slot, nullptr) && ring_->claim(slot)) ring_->finish(slot, true);
        }
        struct Leaked {
            std::shared_ptr<SlotRing> ring;
            std::vector<DeviceSlot> slots;
        };
        try {
            (void)new Leaked{std::move(ring_), std::move(slots_)};  // on purpose, see above
        } catch (...) {  // out of memory: the vector's move cannot throw; leak the objects instead
            (void)new std::shared_ptr<SlotRing>(std::move(ring_));
        }
        g_abandoned_streams.fetch_add(1, std::memory_order_relaxed);
    }

    void release_device() noexcept
    {
        free_host_upload();
        for (DeviceSlot& s : slots_) {
            if (s.computed) (void)cudaEventDestroy(s.computed);
            if (s.copied) (void)cudaEventDestroy(s.copied);
            if (s.rows) (void)cudaFree(s.rows);
            if (s.first_gen) (void)cudaFree(s.first_gen);
            if (s.overflow) (void)cudaFree(s.overflow);
            s = DeviceSlot{};
        }
        if (partials_) (void)cudaFree(partials_);
        if (candidates_) (void)cudaFree(candidates_);
        if (scratch_free_) (void)cudaEventDestroy(scratch_free_);
        if (copy_stream_) (void)cudaStreamDestroy(copy_stream_);
        partials_ = nullptr;
        candidates_ = nullptr;
        scratch_free_ = nullptr;
        copy_stream_ = nullptr;
        (void)cudaGetLastError();
    }

    SnapshotConfig config_;
    int device_ = 0;
    int sm_count_ = 1;
    std::shared_ptr<SlotRing> ring_;
    cudaStream_t copy_stream_ = nullptr;
    cudaEvent_t scratch_free_ = nullptr;
    TilePartial* partials_ = nullptr;
    std::uint64_t* candidates_ = nullptr;
    std::vector<DeviceSlot> slots_;
    std::vector<std::int32_t> fg_src_;
    void* host_logits_ = nullptr;  // host views are uploaded here (ensure_host_upload)
    std::size_t host_logits_bytes_ = 0;
    std::int32_t* host_sampled_ = nullptr;
    int host_sampled_rows_ = 0;
    bool have_last_stream_ = false;
    cudaStream_t last_stream_ = nullptr;
    std::atomic<bool> closing_{false};

    std::thread watchdog_;
    std::mutex watch_mutex_;
    std::condition_variable watch_cv_;
    bool stop_ = false;

    StageCounters counters_;
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
