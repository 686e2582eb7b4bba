// The serializer helpers: each waits for a unit (spinning briefly, then on a futex), claims
// chunks of it until none is left, and waits again. See serializer_pool.hpp.
#include "serializer_pool.hpp"

#include <jsonlw/detail/serial_cache.hpp>

#include <pthread.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define JSONLW_CPU_RELAX() _mm_pause()
#else
#define JSONLW_CPU_RELAX() std::this_thread::yield()
#endif

namespace jsonlw::detail {

namespace {

thread_local std::size_t t_slot = 0;

// How long a helper spins for the next unit before it sleeps: under load units follow each
// other within this, so the I/O thread rarely pays a futex wake; idle, a helper costs
// nothing after it.
constexpr std::chrono::microseconds helper_spin{50};

using steady = std::chrono::steady_clock;

}  // namespace

std::size_t current_serializer_slot() noexcept { return t_slot; }

SerializerPool::SerializerPool(std::size_t helpers, const std::string& name)
{
    threads_.reserve(helpers);
    for (std::size_t i = 1; i <= helpers; ++i) {
        std::string thread_name = "jsonlw" + std::to_string(i) + ":" + name;
        thread_name.resize(std::min<std::size_t>(thread_name.size(), 15));
        threads_.emplace_back([this, i, thread_name] {
            pthread_setname_np(pthread_self(), thread_name.c_str());
            t_slot = i;
            helper(i);
        });
    }
}

SerializerPool::~SerializerPool()
{
    stop_.store(true, std::memory_order_seq_cst);
    wake_.fetch_add(1, std::memory_order_seq_cst);
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
}

bool SerializerPool::claim_and_run(std::uint64_t generation) noexcept
{
    std::uint64_t v = claim_.load(std::memory_order_acquire);
    std::uint64_t index;
    for (;;) {
        if ((v >> (2 * idx_bits)) != generation) return false;
        const std::uint64_t n = (v >> idx_bits) & idx_mask;
        index = v & idx_mask;
        if (index >= n) return false;
        if (claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel,
                                         std::memory_order_acquire))
            break;
    }
    task_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), index);
    done_.fetch_add(1, std::memory_order_acq_rel);
    return true;
}

void SerializerPool::run(std::size_t n, Task task, void* ctx) noexcept
{
    if (n == 0) return;
    generation_ = (generation_ + 1) & ((std::uint64_t{1} << 24) - 1);
    task_.store(task, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    claim_.store((generation_ << (2 * idx_bits)) | (std::uint64_t{n} << idx_bits),
                 std::memory_order_release);
    wake_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) wake_.notify_all();
    while (claim_and_run(generation_)) {
    }
    // Every index is claimed; wait for the helpers still running theirs.
    for (unsigned spins = 0; done_.load(std::memory_order_acquire) < n; ++spins) {
        if (spins < 1024) JSONLW_CPU_RELAX();
        else std::this_thread::yield();
    }
}

void SerializerPool::helper(std::size_t) noexcept
{
    // Not wake_'s value when this thread gets to run: a unit may have been posted already.
    std::uint32_t seen = 0;
    for (;;) {
        const auto spin_until = steady::now() + helper_spin;
        // Pauses first, then yields: on a machine with fewer cores than busy threads the
        // producers get the core while this helper waits.
        for (unsigned i = 0; wake_.load(std::memory_order_acquire) == seen; ++i) {
            if (i < 256) {
                JSONLW_CPU_RELAX();
                continue;
            }
            std::this_thread::yield();
            if (steady::now() >= spin_until) break;
        }
        if (wake_.load(std::memory_order_acquire) == seen) {
            sleeping_.fetch_add(1, std::memory_order_seq_cst);
            if (wake_.load(std::memory_order_seq_cst) == seen)
                wake_.wait(seen, std::memory_order_seq_cst);
            sleeping_.fetch_sub(1, std::memory_order_seq_cst);
            continue;
        }
        seen = wake_.load(std::memory_order_acquire);
        if (stop_.load(std::memory_order_acquire)) return;
        const std::uint64_t generation =
            claim_.load(std::memory_order_acquire) >> (2 * idx_bits);
        while (claim_and_run(generation)) {
        }
    }
}

}  // namespace jsonlw::detail
