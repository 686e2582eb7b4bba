// Settings of the SIMT executor, its failure log, and the device-side calls' entry points
// (jsonlw_emu/simt.hpp), which find the running block through t_current.
#include "settings.hpp"

#include "block_run.hpp"

#include <jsonlw_emu/simt.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace jsonlw::emu {

constinit thread_local ThreadState* t_current = nullptr;

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t fallback)
{
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    return std::strtoull(v, nullptr, 0);
}

std::atomic<std::uint64_t> g_seed{env_u64("JSONLW_EMU_SEED", 0)};
std::atomic<int> g_workers{static_cast<int>(env_u64(
    "JSONLW_EMU_THREADS", std::min(8u, std::max(1u, std::thread::hardware_concurrency()))))};
std::atomic<std::uint64_t> g_failures{0};
std::atomic<std::uint64_t> g_collectives{0};
std::mutex g_report_mutex;
std::string g_report;

[[noreturn]] void outside_kernel(const char* what)
{
    std::fprintf(stderr, "jsonlw-emu: %s called outside a kernel\n", what);
    std::abort();
}

}  // namespace

void set_schedule_seed(std::uint64_t seed) noexcept { g_seed.store(seed); }
std::uint64_t schedule_seed() noexcept { return g_seed.load(); }
void set_worker_threads(int n) noexcept { g_workers.store(std::clamp(n, 1, 64)); }
int worker_threads() noexcept { return g_workers.load(); }
std::uint64_t kernel_failures() noexcept { return g_failures.load(); }
std::uint64_t warp_collectives() noexcept { return g_collectives.load(); }
void add_warp_collectives(std::uint64_t n) noexcept { g_collectives.fetch_add(n, std::memory_order_relaxed); }

void record_failure(const std::string& report)
{
    g_failures.fetch_add(1);
    std::fprintf(stderr, "%s\n", report.c_str());
    std::lock_guard lock(g_report_mutex);
    g_report = report;
}

std::string take_kernel_report()
{
    std::lock_guard lock(g_report_mutex);
    return std::exchange(g_report, std::string());
}

const char* collective_name(Collective c) noexcept
{
    switch (c) {
    case Collective::shfl_idx: return "__shfl_sync";
    case Collective::shfl_up: return "__shfl_up_sync";
    case Collective::shfl_down: return "__shfl_down_sync";
    case Collective::shfl_xor: return "__shfl_xor_sync";
    case Collective::ballot: return "__ballot_sync";
    case Collective::any: return "__any_sync";
    case Collective::all: return "__all_sync";
    case Collective::syncwarp: return "__syncwarp";
    }
    return "?";
}

void block_barrier(std::source_location where)
{
    ThreadState* me = t_current;
    if (!me) outside_kernel("__syncthreads");
    me->block->barrier(*me, where);
}

std::uint64_t warp_collective(Collective kind, unsigned mask, std::uint64_t value, int arg, int width,
                              std::source_location where)
{
    ThreadState* me = t_current;
    if (!me) outside_kernel(collective_name(kind));
    return me->block->collective(*me, kind, mask, value, arg, width, where);
}

void misaligned_access(const void* p, std::size_t align, std::source_location where)
{
    ThreadState* me = t_current;
    if (!me) outside_kernel("a vector load");
    const char* f = where.file_name();
    if (const char* sl = std::strrchr(f, '/')) f = sl + 1;
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", p);
    me->block->fault(*me, cudaErrorMisalignedAddress,
                     "memcheck: misaligned access (a vector load or store off its alignment grid) by " +
                         BlockRun::who(*me) + ": " + std::to_string(align) + "-byte load at " + addr + " (" +
                         f + ":" + std::to_string(where.line()) + ")");
}

void scheduling_point()
{
    ThreadState* me = t_current;
    if (me) me->block->scheduling_point(*me);  // host code may use the atomics too
}

}  // namespace jsonlw::emu
