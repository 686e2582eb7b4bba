// run_grid and check_launch (jsonlw_emu/launch.hpp): a grid's blocks handed out one at a time
// to the launching thread and the worker pool, each block run to its end on one OS thread;
// the first failure stops the grid (as a GPU aborts a faulting launch) and is reported.
#include "block_run.hpp"
#include "fault_trap.hpp"
#include "fiber_stacks.hpp"
#include "settings.hpp"
#include "shared_check.hpp"
#include "traffic_recorder.hpp"
#include "worker_pool.hpp"

#include <jsonlw_emu/launch.hpp>
#include <jsonlw_emu/launch_count.hpp>

#include <atomic>
#include <csetjmp>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

namespace jsonlw::emu {

namespace {

std::mutex g_grid_mutex;  // one grid at a time on the pool

struct GridJob {
    dim3 grid, block;
    BlockRun::Invoke invoke;
    const void* closure;
    std::uint64_t seed;
    std::uint64_t blocks;
    std::atomic<std::uint64_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex m;
    std::uint64_t failed_block = std::numeric_limits<std::uint64_t>::max();
    cudaError_t error = cudaSuccess;
    std::string report;
    LaunchRecorder traffic;

    void fail(std::uint64_t b, cudaError_t e, std::string why)
    {
        std::lock_guard lock(m);
        if (b < failed_block) {
            failed_block = b;
            error = e;
            report = std::move(why);
        }
        stop.store(true, std::memory_order_relaxed);
    }
};

FiberStacks& this_thread_stacks()
{
    static thread_local FiberStacks stacks;
    return stacks;
}

// Runs one block with the fault trap armed; false when it failed (reported to the job).
void run_block(GridJob& job, std::uint64_t b)
{
    FiberStacks& stacks = this_thread_stacks();
    const uint3 idx{unsigned(b % job.grid.x), unsigned((b / job.grid.x) % job.grid.y),
                    unsigned(b / (std::uint64_t(job.grid.x) * job.grid.y))};
    BlockRun run(stacks, job.grid, job.block, idx, job.seed, job.invoke, job.closure);
    LaunchRecorder::begin_block(static_cast<int>(job.block.x * job.block.y * job.block.z));
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) == 0) {
        FaultTrap::set_jump(&jump);
        const bool ok = run.run();
        FaultTrap::set_jump(nullptr);
        if (!ok) job.fail(b, run.error(), run.report());
    } else {
        const ThreadState* who = t_current;  // the GPU thread that faulted
        t_current = nullptr;
        job.fail(b, FaultTrap::fault_was_misaligned() ? cudaErrorMisalignedAddress : cudaErrorIllegalAddress,
                 FaultTrap::describe(who, stacks));
    }
    job.traffic.end_block();
}

void run_blocks(GridJob& job)
{
    FaultTrap::arm_this_thread();
    for (;;) {
        if (job.stop.load(std::memory_order_relaxed)) return;
        const std::uint64_t b = job.next.fetch_add(1, std::memory_order_relaxed);
        if (b >= job.blocks) return;
        try {
            run_block(job, b);
        } catch (const std::exception& e) {  // no memory for stacks or lanes
            job.fail(b, cudaErrorMemoryAllocation, std::string("emulator: ") + e.what());
        }
    }
}

}  // namespace

cudaError_t check_launch(dim3 grid, dim3 block, std::size_t shared_bytes) noexcept
{
    const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
    if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
        return cudaErrorInvalidConfiguration;
    if (threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64)
        return cudaErrorInvalidConfiguration;
    if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) return cudaErrorInvalidConfiguration;
    if (shared_bytes > 227 * 1024) return cudaErrorInvalidConfiguration;
    return cudaSuccess;
}

namespace {
std::atomic<std::uint64_t> g_launches{0};  // kernel_launches()
}  // namespace

std::uint64_t kernel_launches() noexcept { return g_launches.load(); }

namespace {
std::atomic<std::uint64_t> g_streaming_bytes{0};  // streaming_load_bytes()
}  // namespace

void count_streaming_load(std::uint64_t bytes) noexcept { g_streaming_bytes.fetch_add(bytes, std::memory_order_relaxed); }
std::uint64_t streaming_load_bytes() noexcept { return g_streaming_bytes.load(); }

cudaError_t run_grid(dim3 grid, dim3 block, void (*invoke)(const void*), const void* closure, const char* kernel)
{
    g_launches.fetch_add(1, std::memory_order_relaxed);
    GridJob job;
    job.grid = grid;
    job.block = block;
    job.invoke = invoke;
    job.closure = closure;
    job.seed = schedule_seed();
    job.blocks = std::uint64_t(grid.x) * grid.y * grid.z;
    {
        std::lock_guard lock(g_grid_mutex);
        const std::uint64_t collectives = warp_collectives();  // grids run one at a time
        const std::uint64_t want = std::min<std::uint64_t>(job.blocks, std::uint64_t(worker_threads()));
        const std::function<void()> work = [&job] { run_blocks(job); };
        SharedCheck::begin_launch(kernel);
        WorkerPool::instance().run(static_cast<int>(want) - 1, work);
        SharedCheck::end_launch();
        job.traffic.publish(kernel, grid, block, job.error != cudaSuccess, warp_collectives() - collectives);
    }
    if (job.error != cudaSuccess) record_failure("jsonlw-emu: kernel launch failed: " + job.report);
    return job.error;
}

}  // namespace jsonlw::emu
