// SerializerPool: the helper threads of WriterOptions::serializer_threads. Owned by one
// writer's core; run() is called by that writer's I/O thread only, one unit at a time, and
// returns once every task has run — so no helper touches the writer between units.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace jsonlw::detail {

class SerializerPool {
public:
    using Task = void (*)(void* ctx, std::size_t index) noexcept;

    // Starts `helpers` threads named "<name>/1", "<name>/2", ... (truncated to 15 bytes).
    SerializerPool(std::size_t helpers, const std::string& name);
    ~SerializerPool();  // stops and joins the helpers
    SerializerPool(const SerializerPool&) = delete;
    SerializerPool& operator=(const SerializerPool&) = delete;

    std::size_t helpers() const noexcept { return threads_.size(); }

    // Runs task(ctx, i) for every i in [0, n) — on the calling thread and on whichever
    // helpers are free; each index exactly once. Returns when all have returned. n < 2^20.
    void run(std::size_t n, Task task, void* ctx) noexcept;

private:
    // claim_: generation (24 bits) | n (20 bits) | next index (20 bits). A thread runs index
    // i of generation g only if its compare-exchange moved claim_ from (g, n, i) with i < n:
    // a helper that woke late for an earlier unit can never run a task of the current one
    // with the earlier one's parameters.
    static constexpr unsigned idx_bits = 20;
    static constexpr std::uint64_t idx_mask = (std::uint64_t{1} << idx_bits) - 1;
    bool claim_and_run(std::uint64_t generation) noexcept;
    void helper(std::size_t slot) noexcept;

    alignas(64) std::atomic<std::uint64_t> claim_{0};
    std::atomic<Task> task_{nullptr};
    std::atomic<void*> ctx_{nullptr};
    alignas(64) std::atomic<std::size_t> done_{0};
    alignas(64) std::atomic<std::uint32_t> wake_{0};  // bumped per unit; helpers wait on it
    std::atomic<int> sleeping_{0};
    std::atomic<bool> stop_{false};
    std::uint64_t generation_ = 0;  // the caller's (I/O thread's)
    std::vector<std::thread> threads_;
};

}  // namespace jsonlw::detail
