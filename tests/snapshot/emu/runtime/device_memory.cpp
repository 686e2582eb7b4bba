// Device and pinned host allocations. A device allocation is its own mapping:
//   [guard page][padding][user range, rounded up to 16 bytes][guard page]
// so a kernel access past the end (beyond the 16-byte rounding) or far before the start
// faults, and find_allocation() names the allocation for the report. Base alignment is
// therefore 16 bytes, not the 256 cudaMalloc guarantees (CUDA programming guide, "Device
// Memory Accesses"): a kernel that needs more than 16 would fail here, not pass by luck.
// Fresh device memory is filled with 0xff bytes (NaN as floats), as contents are undefined.
// Pinned host memory is plain page-aligned memory, tracked so copies know it is pinned.
#include "device_state.hpp"

#include <jsonlw_emu/runtime_hooks.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>

namespace jsonlw::emu::detail {
namespace {

// One cudaMalloc mapping: its whole region and the user range inside it.
struct DeviceAllocation {
    std::uintptr_t region = 0;  // the mapping, guards included
    std::size_t region_bytes = 0;
    std::uintptr_t base = 0;    // what cudaMalloc returned
    std::size_t size = 0;
};

// Guarded by its own mutex, never held while user code runs: find_allocation() may be called
// from a kernel's fault path.
struct Allocations {
    std::mutex mu;
    std::map<std::uintptr_t, DeviceAllocation> device;  // by region start
    std::map<std::uintptr_t, std::size_t> host;         // base -> size
};

Allocations& allocations() noexcept
{
    static Allocations* a = new Allocations;  // leaked: see device()
    return *a;
}

std::size_t page_size() noexcept
{
    static const std::size_t p = std::size_t(sysconf(_SC_PAGESIZE));
    return p;
}

std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

// The device allocation whose region holds p, or null. Caller holds allocations().mu.
const DeviceAllocation* region_of_locked(const void* p) noexcept
{
    auto& m = allocations().device;
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = m.upper_bound(a);
    if (it == m.begin()) return nullptr;
    --it;
    return a < it->second.region + it->second.region_bytes ? &it->second : nullptr;
}

}  // namespace

bool device_range(const void* p, std::size_t n) noexcept
{
    std::lock_guard lock(allocations().mu);
    const DeviceAllocation* a = region_of_locked(p);
    const auto u = reinterpret_cast<std::uintptr_t>(p);
    return a && u >= a->base && n <= a->size && u - a->base <= a->size - n;
}

bool is_device_pointer(const void* p) noexcept
{
    std::lock_guard lock(allocations().mu);
    return region_of_locked(p) != nullptr;
}

bool pinned_range(const void* p, std::size_t n) noexcept
{
    Allocations& al = allocations();
    std::lock_guard lock(al.mu);
    const auto u = reinterpret_cast<std::uintptr_t>(p);
    auto it = al.host.upper_bound(u);
    if (it == al.host.begin()) return false;
    --it;
    return n <= it->second && u - it->first <= it->second - n;
}

cudaError_t take_alloc_fault(Memory which) noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    AllocFault& f = d.alloc_fault[int(which)];
    if (f.after < 0) return cudaSuccess;
    if (f.after-- > 0) return cudaSuccess;
    return f.error;  // after is now -1: disarmed
}

}  // namespace jsonlw::emu::detail

using namespace jsonlw::emu::detail;

jsonlw::emu::AllocationInfo jsonlw::emu::find_allocation(const void* addr) noexcept
{
    std::lock_guard lock(allocations().mu);
    const DeviceAllocation* a = region_of_locked(addr);
    if (!a) return {};
    return AllocationInfo{true, reinterpret_cast<const void*>(a->base), a->size};
}

cudaError_t cudaMalloc(void** devPtr, std::size_t size)
{
    if (const cudaError_t e = enter()) return e;
    if (!devPtr) return fail(cudaErrorInvalidValue);
    if (const cudaError_t e = take_alloc_fault(jsonlw::emu::Memory::device)) return fail(e);
    if (size == 0) {
        *devPtr = nullptr;
        return cudaSuccess;
    }
    const std::size_t page = page_size();
    const std::size_t user = round_up(size, 16);
    const std::size_t body = round_up(user, page);
    const std::size_t total = body + 2 * page;
    if (size > (std::size_t(1) << 46)) return fail(cudaErrorMemoryAllocation);
    void* m = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
    auto* region = static_cast<std::byte*>(m);
    if (mprotect(region + page, body, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, total);
        return fail(cudaErrorMemoryAllocation);
    }
    std::byte* base = region + page + body - user;
    std::memset(base, 0xff, user);
    DeviceAllocation a{reinterpret_cast<std::uintptr_t>(region), total,
                       reinterpret_cast<std::uintptr_t>(base), size};
    {
        std::lock_guard lock(allocations().mu);
        allocations().device.emplace(a.region, a);
    }
    *devPtr = base;
    return cudaSuccess;
}

// Synchronizes the device first (CUDA runtime API docs, "API synchronization behavior"). With a
// sticky error the memory is still released, and the error returned.
cudaError_t cudaFree(void* devPtr)
{
    if (const cudaError_t e = gate()) return e;
    if (!devPtr) return sticky_result();
    const auto base = reinterpret_cast<std::uintptr_t>(devPtr);
    auto known = [&] {
        std::lock_guard lock(allocations().mu);
        const DeviceAllocation* a = region_of_locked(devPtr);
        return a && a->base == base ? a->region : 0;
    };
    if (!known()) return fail(cudaErrorInvalidValue);
    {
        Device& d = device();
        std::unique_lock lock(d.mu);
        synchronize_all_locked(lock);
    }
    DeviceAllocation a;
    {
        std::lock_guard lock(allocations().mu);
        const DeviceAllocation* p = region_of_locked(devPtr);
        if (!p || p->base != base) return fail(cudaErrorInvalidValue);  // freed meanwhile
        a = *p;
        allocations().device.erase(a.region);
    }
    munmap(reinterpret_cast<void*>(a.region), a.region_bytes);
    return sticky_result();
}

cudaError_t cudaHostAlloc(void** pHost, std::size_t size, unsigned int flags)
{
    if (const cudaError_t e = enter()) return e;
    constexpr unsigned known = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
    if (!pHost || (flags & ~known)) return fail(cudaErrorInvalidValue);
    if (const cudaError_t e = take_alloc_fault(jsonlw::emu::Memory::host)) return fail(e);
    void* p = nullptr;
    if (posix_memalign(&p, page_size(), size == 0 ? 1 : size) != 0) return fail(cudaErrorMemoryAllocation);
    {
        std::lock_guard lock(allocations().mu);
        allocations().host.emplace(reinterpret_cast<std::uintptr_t>(p), size);
    }
    *pHost = p;
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, std::size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void* ptr)
{
    if (const cudaError_t e = gate()) return e;
    if (ptr) {
        std::lock_guard lock(allocations().mu);
        if (!allocations().host.erase(reinterpret_cast<std::uintptr_t>(ptr))) return fail(cudaErrorInvalidValue);
    }
    std::free(ptr);
    return sticky_result();
}
