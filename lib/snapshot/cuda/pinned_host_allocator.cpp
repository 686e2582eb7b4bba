// pinned_host_allocator.hpp: slot memory from cudaHostAlloc.
#include "pinned_host_allocator.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <new>

namespace jsonlw::snapshot::detail {
namespace {

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

}  // namespace

std::unique_ptr<HostAllocator> pinned_host_allocator()
{
    return std::make_unique<PinnedHostAllocator>();
}

}  // namespace jsonlw::snapshot::detail
