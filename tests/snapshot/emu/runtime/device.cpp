// The emulated device itself: one context, its counts and attributes, device-wide
// synchronization. Values are those of an H200 as cudaDeviceProp reports them, approximately:
// only the SM count feeds a computation (the stage's tiling).
#include "device_state.hpp"

#include <cstdlib>
#include <cstring>

namespace jsonlw::emu::detail {
namespace {

int env_int(const char* name, int fallback) noexcept
{
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return (*end == '\0' && n >= 0 && n < 1'000'000) ? int(n) : fallback;
}

}  // namespace

int default_device_count() noexcept { return env_int("JSONLW_EMU_DEVICE_COUNT", 1); }
int default_sm_count() noexcept { return env_int("JSONLW_EMU_SM_COUNT", 132); }

Device& device() noexcept
{
    // Leaked on purpose: detached stream threads may still wait on it during exit.
    static Device* d = [] {
        auto* p = new Device;
        p->device_count = default_device_count();
        p->sm_count = default_sm_count();
        return p;
    }();
    return *d;
}

cudaError_t gate() noexcept
{
    if (in_host_func()) return fail(cudaErrorNotPermitted);
    Device& d = device();
    std::lock_guard lock(d.mu);
    if (d.device_count <= 0) return fail(cudaErrorNoDevice);
    return cudaSuccess;
}

cudaError_t sticky_result() noexcept
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    return fail(d.sticky);
}

cudaError_t enter() noexcept
{
    if (const cudaError_t e = gate()) return e;
    return sticky_result();
}

void synchronize_all_locked(std::unique_lock<std::mutex>& lock)
{
    Device& d = device();
    std::vector<Dep> targets;
    for (const auto& s : d.running) targets.push_back(Dep{s, s->enqueued});
    for (const Dep& t : targets) wait_locked(lock, t);
}

}  // namespace jsonlw::emu::detail

using namespace jsonlw::emu::detail;

cudaError_t cudaGetDeviceCount(int* count)
{
    if (!count) return fail(cudaErrorInvalidValue);
    if (in_host_func()) return fail(cudaErrorNotPermitted);
    Device& d = device();
    std::lock_guard lock(d.mu);
    *count = d.device_count > 0 ? d.device_count : 0;
    return d.device_count > 0 ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int* dev)
{
    if (const cudaError_t e = enter()) return e;
    if (!dev) return fail(cudaErrorInvalidValue);
    *dev = 0;  // only device 0 is ever current
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    if (const cudaError_t e = enter()) return e;
    Device& d = device();
    std::lock_guard lock(d.mu);
    return dev == 0 && d.device_count > 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int dev)
{
    if (const cudaError_t e = enter()) return e;
    if (!value) return fail(cudaErrorInvalidValue);
    if (dev != 0) return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 * 1024; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrClockRate: *value = 1'980'000; break;
    case cudaDevAttrMultiProcessorCount: {
        Device& d = device();
        std::lock_guard lock(d.mu);
        *value = d.sm_count;
        break;
    }
    case cudaDevAttrMemoryClockRate: *value = 2'619'000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = 6144; break;
    case cudaDevAttrL2CacheSize: *value = 60 * 1024 * 1024; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 227 * 1024; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int dev)
{
    if (const cudaError_t e = enter()) return e;
    if (!prop) return fail(cudaErrorInvalidValue);
    if (dev != 0) return fail(cudaErrorInvalidDevice);
    *prop = cudaDeviceProp{};
    std::strcpy(prop->name, "jsonlw emulated device (H200-like)");
    prop->totalGlobalMem = std::size_t(141) << 30;
    (void)cudaDeviceGetAttribute(&prop->warpSize, cudaDevAttrWarpSize, 0);
    (void)cudaDeviceGetAttribute(&prop->maxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, 0);
    (void)cudaDeviceGetAttribute(&prop->clockRate, cudaDevAttrClockRate, 0);
    (void)cudaDeviceGetAttribute(&prop->major, cudaDevAttrComputeCapabilityMajor, 0);
    (void)cudaDeviceGetAttribute(&prop->minor, cudaDevAttrComputeCapabilityMinor, 0);
    (void)cudaDeviceGetAttribute(&prop->multiProcessorCount, cudaDevAttrMultiProcessorCount, 0);
    (void)cudaDeviceGetAttribute(&prop->l2CacheSize, cudaDevAttrL2CacheSize, 0);
    (void)cudaDeviceGetAttribute(&prop->memoryClockRate, cudaDevAttrMemoryClockRate, 0);
    (void)cudaDeviceGetAttribute(&prop->memoryBusWidth, cudaDevAttrGlobalMemoryBusWidth, 0);
    prop->sharedMemPerBlock = 48 * 1024;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize()
{
    if (const cudaError_t e = gate()) return e;
    Device& d = device();
    std::unique_lock lock(d.mu);
    synchronize_all_locked(lock);
    return fail(d.sticky);
}

// Simplified: clears the sticky error and the caller's last error only; allocations, streams
// and events stay valid (cudart destroys them all).
cudaError_t cudaDeviceReset()
{
    if (const cudaError_t e = gate()) return e;
    Device& d = device();
    {
        std::lock_guard lock(d.mu);
        d.sticky = cudaSuccess;
    }
    (void)cudaGetLastError();
    return cudaSuccess;
}
