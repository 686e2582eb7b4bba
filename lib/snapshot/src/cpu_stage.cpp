// The CPU backend: fast_row (fast_row.hpp: reference_row's results in one read of the row, on
// the SIMD path JSONLW_SNAPSHOT_CPU_PATH pins or the best this CPU has) over host logits, rows
// spread over a small pool of worker threads when the batch is large (the capturing thread
// works too), results straight into a ring slot, delivered before capture() returns.
#include "backends.hpp"
#include "slot_ring.hpp"
#include "stage_common.hpp"

#include <jsonlw/snapshot/fast_row.hpp>
#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/reference.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace jsonlw::snapshot::detail {
namespace {

// What one step asks of the workers: rows [0, rows) of `view` into `out`.
struct RowJob {
    const LogitsView* view = nullptr;
    const std::int32_t* sampled = nullptr;
    TokenSnapshot* out = nullptr;
    int k = 0;
    int rows = 0;
    CpuRowPath path = CpuRowPath::reference;
    std::atomic<int> next{0};
    std::atomic<int> done{0};
};

// Fixed worker threads, each with its own scratch. run() hands a job out, works on it from the
// calling thread too, and returns when every row is done.
class RowPool {
public:
    RowPool(int workers, int nice) : scratch_(std::size_t(workers) + 1)
    {
        threads_.reserve(std::size_t(workers));
        for (int i = 0; i < workers; ++i)
            threads_.emplace_back([this, i, nice] {
                lower_priority(i, nice);
                worker(std::size_t(i) + 1);
            });
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
    // Named (for top -H, perf sched) and niced: Linux gives each thread its own nice value, so
    // the loop and the writers' I/O threads preempt a row worker when they wake up.
    static void lower_priority(int index, int nice) noexcept
    {
#ifdef __linux__
        char name[16];
        std::snprintf(name, sizeof name, "jsonlw-rows-%d", index + 1);
        pthread_setname_np(pthread_self(), name);
        if (nice > 0) {
            const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
            errno = 0;
            const int now = ::getpriority(PRIO_PROCESS, tid);
            if (errno == 0) (void)::setpriority(PRIO_PROCESS, tid, std::min(19, now + nice));
        }
#else
        (void)index;
        (void)nice;
#endif
    }

    static void work(RowJob& job, RowScratch& scratch)
    {
        for (int r = job.next.fetch_add(1, std::memory_order_relaxed); r < job.rows;
             r = job.next.fetch_add(1, std::memory_order_relaxed)) {
            const LogitsView& v = *job.view;
            const auto* row = static_cast<const char*>(v.data) +
                              std::int64_t(r) * v.row_stride * std::int64_t(itemsize(v.dtype));
            fast_row(row, v.dtype, v.vocab, job.sampled[r], job.k, job.out[r], scratch,
                     job.path);
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
        : config_(config), path_(row_path()), pool_(workers(config), config.cpu_worker_nice),
          ring_(SlotRing::create(ring_layout(config), aligned_host_allocator(), std::move(sink)))
    {
    }

    ~CpuStage() override { drain(config_.watchdog); }

    CaptureResult capture(const LogitsView& v, const std::int32_t* sampled,
                          std::span<const RowMeta> meta, void*) noexcept override
    {
        const std::int64_t t0 = steady_ns();
        if (busy_.exchange(true, std::memory_order_acquire))
            return counters_.invalid("capture() called from two threads at once");
        struct Unbusy {
            std::atomic<bool>& b;
            ~Unbusy() { b.store(false, std::memory_order_release); }
        } unbusy{busy_};

        if (v.device != -1)
            return counters_.invalid("the CPU backend reads host memory only (device != -1)");
        if (const char* why = check_capture(config_, v, sampled, meta)) return counters_.invalid(why);

        const FirstGenPlan fg = plan_first_gen(config_, v, meta, ring_->layout());
        if (fg.dropped && config_.backpressure == Backpressure::drop_step)
            return counters_.drop(*ring_, v.rows);

        const int slot = acquire_slot(*ring_, config_, counters_);
        if (slot < 0) return counters_.drop(*ring_, v.rows);
        const SlotBuffers& buf = ring_->buffers(slot);

        RowJob job;
        job.view = &v;
        job.sampled = sampled;
        job.out = buf.rows;
        job.k = config_.k;
        job.rows = v.rows;
        job.path = path_;
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
        if (fg.rows) {
            std::byte* out = buf.first_gen_pool;
            int i = 0;
            for (int r = 0; r < v.rows && i < fg.rows; ++r) {
                const RowMeta& m = meta[std::size_t(r)];
                if (!(m.flags & RowMeta::first_gen)) continue;
                const auto* row = static_cast<const char*>(v.data) +
                                  std::int64_t(r) * v.row_stride * std::int64_t(itemsize(v.dtype));
                FirstGenLogits& f = buf.first_gen[i++];
                f.request_id = m.request_id;
                f.seq_index = m.seq_index;
                f.step = m.step;
                f.dtype = first_gen_stored_dtype(config_.first_gen, v.dtype);
                f.shape[0] = 1;
                f.shape[1] = v.vocab;
                f.overflow_to_inf = convert_first_gen_row(row, v.dtype, v.vocab, config_.first_gen, out);
                f.bytes = std::span<const std::byte>(out, fg.item);
                overflow += f.overflow_to_inf;
                out += fg.item;
            }
        }

        counters_.captured(v.rows, fg);
        counters_.slow_path_rows(slow);
        counters_.first_gen_overflow(overflow);
        ring_->commit(slot, v.rows, fg.rows, fg.dropped, t0);
        ring_->complete(slot, false);
        return CaptureResult::enqueued;
    }

    bool drain(std::chrono::milliseconds timeout) override
    {
        return ring_->wait_delivered(std::chrono::steady_clock::now() + timeout);
    }

    SnapshotStats stats() const override { return counters_.stats(Backend::cpu, *ring_); }

    Backend backend() const noexcept override { return Backend::cpu; }
    const SnapshotConfig& config() const noexcept override { return config_; }

private:
    // Workers besides the capturing thread: cpu_threads - 1, by default one per other core
    // (niced: they use what the loop and the writers' threads leave).
    static int workers(const SnapshotConfig& c)
    {
        if (c.cpu_threads > 0) return c.cpu_threads - 1;
        const unsigned hw = std::thread::hardware_concurrency();
        return hw > 1 ? int(hw) - 1 : 0;
    }

    // JSONLW_SNAPSHOT_CPU_PATH, read once per stage; a pinned path this CPU lacks or a value
    // that names none is said once, on stderr (the stage has no log sink of its own).
    static CpuRowPath row_path()
    {
        std::string warning;
        const CpuRowPath p = cpu_row_path_from_env(&warning);
        if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
        return p;
    }

    SnapshotConfig config_;
    CpuRowPath path_;
    RowPool pool_;
    std::shared_ptr<SlotRing> ring_;
    std::atomic<bool> busy_{false};
    StageCounters counters_;
};

}  // namespace

std::unique_ptr<SnapshotStage> make_cpu_stage(const SnapshotConfig& config, BatchSink sink)
{
    return std::make_unique<CpuStage>(config, std::move(sink));
}

}  // namespace jsonlw::snapshot::detail
