// Copies and memsets, queued on a stream (CUDA runtime API docs, "API synchronization
// behavior"): a pageable host source is staged at the call, so the caller may reuse it when
// the call returns; a pageable host destination makes the call wait for the copy; pinned
// memory on both sides is fully asynchronous. The synchronous forms run on the legacy stream
// and wait. Every device side is checked against its allocation (cudaErrorInvalidValue).
#include "device_state.hpp"

#include <cstring>
#include <vector>

namespace jsonlw::emu::detail {
namespace {

// One pitched copy as the stream thread runs it (a 1D copy is one row); values only.
struct Copy2D {
    void* dst;
    std::size_t dpitch;
    const void* src;
    std::size_t spitch;
    std::size_t width;
    std::size_t height;
};

std::size_t extent(std::size_t pitch, std::size_t width, std::size_t height) noexcept
{
    return (height - 1) * pitch + width;
}

void copy_rows(const Copy2D& c) noexcept
{
    for (std::size_t r = 0; r < c.height; ++r)
        std::memcpy(static_cast<char*>(c.dst) + r * c.dpitch, static_cast<const char*>(c.src) + r * c.spitch,
                    c.width);
}

// Whether each side is device memory, from the kind (cudaMemcpyDefault: from the pointer).
bool sides(cudaMemcpyKind kind, const Copy2D& c, bool& dst_dev, bool& src_dev) noexcept
{
    switch (kind) {
    case cudaMemcpyHostToHost: dst_dev = src_dev = false; return true;
    case cudaMemcpyHostToDevice: dst_dev = true, src_dev = false; return true;
    case cudaMemcpyDeviceToHost: dst_dev = false, src_dev = true; return true;
    case cudaMemcpyDeviceToDevice: dst_dev = src_dev = true; return true;
    case cudaMemcpyDefault:
        dst_dev = is_device_pointer(c.dst);
        src_dev = is_device_pointer(c.src);
        return true;
    }
    return false;
}

// Checks, queues and (sync, or a pageable destination) waits for one 2D copy.
cudaError_t copy(Copy2D c, cudaMemcpyKind kind, cudaStream_t stream, bool sync)
{
    if (const cudaError_t e = enter()) return e;
    if (c.width > c.dpitch || c.width > c.spitch) return fail(cudaErrorInvalidPitchValue);
    bool dst_dev = false, src_dev = false;
    if (!sides(kind, c, dst_dev, src_dev)) return fail(cudaErrorInvalidMemcpyDirection);
    if (c.width == 0 || c.height == 0) return cudaSuccess;
    const std::size_t dst_n = extent(c.dpitch, c.width, c.height);
    const std::size_t src_n = extent(c.spitch, c.width, c.height);
    if (!c.dst || !c.src) return fail(cudaErrorInvalidValue);
    if (dst_dev && !device_range(c.dst, dst_n)) return fail(cudaErrorInvalidValue);
    if (src_dev && !device_range(c.src, src_n)) return fail(cudaErrorInvalidValue);

    const bool wait = sync || (!dst_dev && !pinned_range(c.dst, dst_n));
    std::shared_ptr<std::vector<std::byte>> staged;
    if (!wait && !src_dev && !pinned_range(c.src, src_n)) {
        staged = std::make_shared<std::vector<std::byte>>(c.width * c.height);
        copy_rows(Copy2D{staged->data(), c.width, c.src, c.spitch, c.width, c.height});
        c.src = staged->data();
        c.spitch = c.width;
    }

    Device& d = device();
    std::unique_lock lock(d.mu);
    const auto s = resolve_locked(sync ? nullptr : stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    Item item;
    item.work = [c, staged] {
        copy_rows(c);
        return cudaSuccess;
    };
    const std::uint64_t seq = enqueue_locked(s, std::move(item));
    if (!wait) return cudaSuccess;
    wait_locked(lock, Dep{s, seq});
    return fail(d.sticky);
}

cudaError_t set(void* p, int value, std::size_t count, cudaStream_t stream, bool sync)
{
    if (const cudaError_t e = enter()) return e;
    if (count == 0) return cudaSuccess;
    if (!device_range(p, count)) return fail(cudaErrorInvalidValue);
    Device& d = device();
    std::unique_lock lock(d.mu);
    const auto s = resolve_locked(sync ? nullptr : stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    Item item;
    item.work = [p, value, count] {
        std::memset(p, value, count);
        return cudaSuccess;
    };
    const std::uint64_t seq = enqueue_locked(s, std::move(item));
    if (!sync) return cudaSuccess;
    wait_locked(lock, Dep{s, seq});
    return fail(d.sticky);
}

}  // namespace
}  // namespace jsonlw::emu::detail

using namespace jsonlw::emu::detail;

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind)
{
    return copy(Copy2D{dst, count, src, count, count, 1}, kind, nullptr, true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    return copy(Copy2D{dst, count, src, count, count, 1}, kind, stream, false);
}

cudaError_t cudaMemcpy2D(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                         std::size_t width, std::size_t height, cudaMemcpyKind kind)
{
    return copy(Copy2D{dst, dpitch, src, spitch, width, height}, kind, nullptr, true);
}

cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                              std::size_t width, std::size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream)
{
    return copy(Copy2D{dst, dpitch, src, spitch, width, height}, kind, stream, false);
}

cudaError_t cudaMemset(void* devPtr, int value, std::size_t count)
{
    return set(devPtr, value, count, nullptr, true);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, std::size_t count, cudaStream_t stream)
{
    return set(devPtr, value, count, stream, false);
}
