// The CPU backend: reference_row over host logits, rows spread over a small pool of worker
// threads when the batch is large (the capturing thread works too), results straight into a
// ring slot, delivered before capture() returns.
#include "backends.hpp"
#include "slot_ring.hpp"

#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/reference.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jsonlw::snapshot::detail {
namespace {

std::int64_t steady_ns() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// What one step asks of the workers: rows [0, rows) of `view` into `out`.
struct RowJob {
    const LogitsView* view = nullptr;
    const std::int32_t* sampled = nullptr;
    TokenSnapshot* out = nullptr;
    int k = 0;
    int rows = 0;
    std::atomic<int> next{0};
    std::atomic<int> done{0};
};

// Fixed worker threads, each with its own scratch. run() hands a job out, works on it from the
// calling thread too, and returns when every row is done.
class RowPool {
public:
    explicit RowPool(int workers) : scratch_(std::size_t(workers) + 1)
    {
        threads_.reserve(std::size_t(workers));
        for (int i = 0; i < workers; ++i)
            threads_.emplace_back([this, i] { worker(std::size_t(i) + 1); });
    }
    ~RowPool()
    {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
    }

    void run(RowJob& job, bool parallel)
    {
        if (!parallel || threads_.empty()) {
            work(job, scratch_[0]);
            return;
        }
        {
            std::lock_guard lock(mutex_);
            job_ = &job;
            ++generation_;
        }
        cv_.notify_all();
        work(job, scratch_[0]);
        // Wait for rows other threads took; then make sure no worker still holds the job.
        for (int d = job.done.load(std::memory_order_acquire); d < job.rows;
             d = job.done.load(std::memory_order_acquire))
            job.done.wait(d, std::memory_order_acquire);
        std::unique_lock lock(mutex_);
        job_ = nullptr;
        idle_cv_.wait(lock, [&] { return busy_ == 0; });
    }

private:
    static void work(RowJob& job, RowScratch& scratch)
    {
        for (int r = job.next.fetch_add(1, std::memory_order_relaxed); r < job.rows;
             r = job.next.fetch_add(1, std::memory_order_relaxed)) {
            const LogitsView& v = *job.view;
            const auto* row = static_cast<const char*>(v.data) +
                              std::int64_t(r) * v.row_stride * std::int64_t(itemsize(v.dtype));
            reference_row(row, v.dtype, v.vocab, job.sampled[r], job.k, job.out[r], scratch);
            if (job.done.fetch_add(1, std::memory_order_acq_rel) + 1 == job.rows)
                job.done.notify_all();
        }
    }

    void worker(std::size_t index)
    {
        std::uint64_t seen = 0;
        std::unique_lock lock(mutex_);
        for (;;) {
            cv_.wait(lock, [&] { return stop_ || (generation_ != seen && job_ != nullptr); });
            if (stop_) return;
            seen = generation_;
            RowJob* job = job_;
            ++busy_;
            lock.unlock();
            work(*job, scratch_[index]);
            lock.lock();
            if (--busy_ == 0) idle_cv_.notify_all();
        }
    }

    std::vector<RowScratch> scratch_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::condition_variable idle_cv_;
    RowJob* job_ = nullptr;
    std::uint64_t generation_ = 0;
    int busy_ = 0;
    bool stop_ = false;
};

class CpuStage final : public SnapshotStage {
public:
    CpuStage(const SnapshotConfig& config, BatchSink sink)
        : config_(config), pool_(workers(config))
    {
        RingLayout layout;
        layout.slots = config.ring_slots;
        layout.max_rows = config.max_rows;
        if (config.first_gen != FirstGenMode::Off) {
            layout.max_first_gen_rows = config.max_first_gen_rows_per_step;
            // Room for that many rows of max_vocab at the widest item (fp32).
            layout.first_gen_pool_bytes = std::size_t(config.max_first_gen_rows_per_step) *
                                          std::size_t(config.max_vocab) * 4;
        }
        ring_ = SlotRing::create(layout, aligned_host_allocator(), std::move(sink));
    }

    ~CpuStage() override { drain(config_.watchdog); }

    CaptureResult capture(const LogitsView& v, const std::int32_t* sampled,
                          std::span<const RowMeta> meta, void*) noexcept override
    {
        const std::int64_t t0 = steady_ns();
        if (busy_.exchange(true, std::memory_order_acquire))
            return invalid("capture() called from two threads at once");
        struct Unbusy {
            std::atomic<bool>& b;
            ~Unbusy() { b.store(false, std::memory_order_release); }
        } unbusy{busy_};

        if (const char* why = check(v, sampled, meta)) return invalid(why);

        // First-gen rows: as many as the slot's pool holds, in row order.
        int fg_wanted = 0, fg_rows = 0;
        std::size_t fg_bytes = 0;
        const std::size_t item =
            config_.first_gen == FirstGenMode::Off
                ? 0
                : first_gen_item_bytes(config_.first_gen, v.dtype, v.vocab);
        if (item) {
            for (const RowMeta& m : meta) {
                if (!(m.flags & RowMeta::first_gen)) continue;
                ++fg_wanted;
                if (fg_rows < ring_->layout().max_first_gen_rows &&
                    fg_bytes + item <= ring_->layout().first_gen_pool_bytes) {
                    ++fg_rows;
                    fg_bytes += item;
                }
            }
        }
        const auto fg_dropped = std::uint32_t(fg_wanted - fg_rows);
        if (fg_dropped && config_.backpressure == Backpressure::DropStep)
            return drop(v.rows);

        const int slot = ring_->try_acquire();
        if (slot < 0) return drop(v.rows);
        const SlotBuffers& buf = ring_->buffers(slot);

        RowJob job;
        job.view = &v;
        job.sampled = sampled;
        job.out = buf.rows;
        job.k = config_.k;
        job.rows = v.rows;
        pool_.run(job, v.rows >= config_.cpu_parallel_min_rows);

        std::uint64_t slow = 0;
        for (int r = 0; r < v.rows; ++r) {
            TokenSnapshot& t = buf.rows[r];
            t.request_id = meta[std::size_t(r)].request_id;
            t.seq_index = meta[std::size_t(r)].seq_index;
            t.step = meta[std::size_t(r)].step;
            t.row_flags = meta[std::size_t(r)].flags;
            if (t.status_flags & (flags::has_nan | flags::has_posinf)) ++slow;
        }

        std::uint64_t overflow = 0;
        if (fg_rows) {
            std::byte* out = buf.first_gen_pool;
            int i = 0;
            for (int r = 0; r < v.rows && i < fg_rows; ++r) {
                const RowMeta& m = meta[std::size_t(r)];
                if (!(m.flags & RowMeta::first_gen)) continue;
                const auto* row = static_cast<const char*>(v.data) +
                                  std::int64_t(r) * v.row_stride * std::int64_t(itemsize(v.dtype));
                FirstGenLogits& fg = buf.first_gen[i++];
                fg.request_id = m.request_id;
                fg.seq_index = m.seq_index;
                fg.step = m.step;
                fg.dtype = first_gen_dtype(config_.first_gen, v.dtype);
                fg.shape[0] = 1;
                fg.shape[1] = v.vocab;
                fg.overflow_to_inf = convert_first_gen_row(row, v.dtype, v.vocab, config_.first_gen, out);
                fg.bytes = std::span<const std::byte>(out, item);
                overflow += fg.overflow_to_inf;
                out += item;
            }
        }

        captured_steps_.fetch_add(1, std::memory_order_relaxed);
        captured_rows_.fetch_add(std::uint64_t(v.rows), std::memory_order_relaxed);
        slow_rows_.fetch_add(slow, std::memory_order_relaxed);
        first_gen_rows_.fetch_add(std::uint64_t(fg_rows), std::memory_order_relaxed);
        first_gen_dropped_.fetch_add(fg_dropped, std::memory_order_relaxed);
        first_gen_overflow_.fetch_add(overflow, std::memory_order_relaxed);
        ring_->commit(slot, v.rows, fg_rows, fg_dropped, t0);
        ring_->complete(slot, false);
        return CaptureResult::Enqueued;
    }

    bool drain(std::chrono::milliseconds timeout) override
    {
        return ring_->wait_delivered(std::chrono::steady_clock::now() + timeout);
    }

    SnapshotStats stats() const override
    {
        SnapshotStats s;
        s.backend = Backend::Cpu;
        s.captured_steps = captured_steps_.load(std::memory_order_relaxed);
        s.captured_rows = captured_rows_.load(std::memory_order_relaxed);
        s.dropped_steps = dropped_steps_.load(std::memory_order_relaxed);
        s.dropped_rows = dropped_rows_.load(std::memory_order_relaxed);
        s.invalid_arguments = invalid_.load(std::memory_order_relaxed);
        s.delivered_batches = ring_->delivered();
        s.failed_batches = ring_->failed_batches();
        s.sink_failures = ring_->sink_failures();
        s.first_gen_rows = first_gen_rows_.load(std::memory_order_relaxed);
        s.first_gen_dropped = first_gen_dropped_.load(std::memory_order_relaxed);
        s.first_gen_overflow_to_inf = first_gen_overflow_.load(std::memory_order_relaxed);
        s.slow_path_rows = slow_rows_.load(std::memory_order_relaxed);
        s.in_flight = ring_->committed() - ring_->delivered();
        s.leased = ring_->leased();
        {
            std::lock_guard lock(error_mutex_);
            s.last_error = last_error_;
        }
        if (s.last_error.empty()) s.last_error = ring_->last_sink_error();
        return s;
    }

    Backend backend() const noexcept override { return Backend::Cpu; }
    const SnapshotConfig& config() const noexcept override { return config_; }

private:
    static int workers(const SnapshotConfig& c)
    {
        if (c.cpu_threads > 0) return c.cpu_threads - 1;
        const unsigned hw = std::thread::hardware_concurrency();
        return hw > 1 ? int(hw) - 1 : 0;
    }

    const char* check(const LogitsView& v, const std::int32_t* sampled,
                      std::span<const RowMeta> meta) const noexcept
    {
        if (v.device != -1) return "the CPU backend reads host memory only (device != -1)";
        if (v.rows < 0) return "rows is negative";
        if (v.rows > config_.max_rows) return "rows exceeds max_rows";
        if (v.vocab < 1) return "vocab must be at least 1";
        if (v.vocab > config_.max_vocab) return "vocab exceeds max_vocab";
        if (v.row_stride < v.vocab) return "row_stride is smaller than vocab";
        if (v.dtype != LogitDType::F32 && v.dtype != LogitDType::F16 && v.dtype != LogitDType::BF16)
            return "unknown dtype";
        if (meta.size() != std::size_t(v.rows)) return "meta.size() differs from rows";
        if (v.rows > 0 && (v.data == nullptr || sampled == nullptr))
            return "logits or sampled ids is null";
        return nullptr;
    }

    CaptureResult invalid(const char* why) noexcept
    {
        invalid_.fetch_add(1, std::memory_order_relaxed);
        try {
            std::lock_guard lock(error_mutex_);
            last_error_ = std::string("capture: ") + why;
        } catch (...) {
        }
        return CaptureResult::InvalidArgument;
    }

    CaptureResult drop(int rows) noexcept
    {
        ring_->record_drop();
        dropped_steps_.fetch_add(1, std::memory_order_relaxed);
        dropped_rows_.fetch_add(std::uint64_t(rows), std::memory_order_relaxed);
        return CaptureResult::Dropped;
    }

    SnapshotConfig config_;
    RowPool pool_;
    std::shared_ptr<SlotRing> ring_;
    std::atomic<bool> busy_{false};
    std::atomic<std::uint64_t> captured_steps_{0}, captured_rows_{0}, dropped_steps_{0},
        dropped_rows_{0}, invalid_{0}, slow_rows_{0}, first_gen_rows_{0}, first_gen_dropped_{0},
        first_gen_overflow_{0};
    mutable std::mutex error_mutex_;
    std::string last_error_;
};

}  // namespace

std::unique_ptr<SnapshotStage> make_cpu_stage(const SnapshotConfig& config, BatchSink sink)
{
    return std::make_unique<CpuStage>(config, std::move(sink));
}

}  // namespace jsonlw::snapshot::detail
