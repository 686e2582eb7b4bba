// stage_device.hpp: the CUDA stage's device objects, from creation to release (or leak).
#include "stage_device.hpp"

#include "../src/stage_common.hpp"
#include "pinned_host_allocator.hpp"

#include <jsonlw/snapshot/first_gen.hpp>

#include <algorithm>
#include <cstddef>
#include <thread>

namespace jsonlw::snapshot::detail {
namespace {

using namespace cuda_detail;

template <class T>
T* device_alloc(std::size_t count, const char* what)
{
    void* p = nullptr;
    check(cudaMalloc(&p, count * sizeof(T) + 16), what);
    return static_cast<T*>(p);
}

void CUDART_CB on_slot_copied(void* p) noexcept
{
    auto* c = static_cast<HostFnContext*>(p);
    c->ring->complete(c->slot, false);
}

}  // namespace

StageDevice::StageDevice(const SnapshotConfig& config, BatchSink sink)
{
    check(cudaGetDevice(&device_), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_),
          "cudaDeviceGetAttribute(MultiProcessorCount)");
    const RingLayout layout = ring_layout(config);
    try {
        check(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        check(cudaEventCreateWithFlags(&scratch_free_, cudaEventDisableTiming), "cudaEventCreate");
        ring_ = SlotRing::create(layout, pinned_host_allocator(), std::move(sink));
        const std::size_t tile_rows = max_tile_rows(config.max_rows, config.max_vocab, sm_count_);
        partials_ = device_alloc<TilePartial>(tile_rows, "cudaMalloc(partials)");
        candidates_ = device_alloc<std::uint64_t>(tile_rows * tile_candidates,
                                                  "cudaMalloc(candidates)");
        slots_.resize(std::size_t(config.ring_slots));
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            DeviceSlot& s = slots_[i];
            s.ctx.ring = ring_.get();
            s.ctx.slot = static_cast<int>(i);
            s.rows = device_alloc<TokenSnapshot>(std::size_t(config.max_rows), "cudaMalloc(rows)");
            if (layout.max_first_gen_rows > 0) {
                s.first_gen = device_alloc<std::byte>(layout.first_gen_pool_bytes,
                                                      "cudaMalloc(first_gen)");
                s.overflow = device_alloc<std::uint32_t>(std::size_t(layout.max_first_gen_rows),
                                                         "cudaMalloc(overflow)");
            }
            check(cudaEventCreateWithFlags(&s.computed, cudaEventDisableTiming), "cudaEventCreate");
            check(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming), "cudaEventCreate");
        }
    } catch (...) {
        release();
        throw;
    }
}

void StageDevice::enqueue_copies(int slot, cudaStream_t stream, int rows, int fg_rows,
                                 std::size_t item, EnqueueStatus& status) noexcept
{
    const SlotBuffers& buf = ring_->buffers(slot);
    DeviceSlot& ds = slots_[std::size_t(slot)];
    if (status.ok()) status.step(cudaEventRecord(ds.computed, stream), "cudaEventRecord");
    if (status.ok())
        status.step(cudaStreamWaitEvent(copy_stream_, ds.computed, 0), "cudaStreamWaitEvent");
    if (status.ok() && rows > 0) {
        constexpr std::size_t pitch = sizeof(TokenSnapshot);
        constexpr std::size_t a0 = offsetof(TokenSnapshot, sampled_id);
        constexpr std::size_t a1 = offsetof(TokenSnapshot, row_flags);
        constexpr std::size_t b0 = offsetof(TokenSnapshot, topk_ids);
        static_assert(a1 < b0 && b0 + 3 * sizeof(float) * SnapshotConfig::max_k == pitch);
        auto* dst = reinterpret_cast<char*>(buf.rows);
        auto* src = reinterpret_cast<const char*>(ds.rows);
        status.step(cudaMemcpy2DAsync(dst + a0, pitch, src + a0, pitch, a1 - a0, std::size_t(rows),
                                      cudaMemcpyDeviceToHost, copy_stream_),
                    "cudaMemcpy2DAsync(rows)");
        status.step(cudaMemcpy2DAsync(dst + b0, pitch, src + b0, pitch, pitch - b0,
                                      std::size_t(rows), cudaMemcpyDeviceToHost, copy_stream_),
                    "cudaMemcpy2DAsync(top-k)");
    }
    if (status.ok() && fg_rows) {
        status.step(cudaMemcpyAsync(buf.first_gen_pool, ds.first_gen, std::size_t(fg_rows) * item,
                                    cudaMemcpyDeviceToHost, copy_stream_),
                    "cudaMemcpyAsync(first-gen)");
        constexpr std::size_t of = offsetof(FirstGenLogits, overflow_to_inf);
        status.step(cudaMemcpy2DAsync(reinterpret_cast<char*>(buf.first_gen) + of,
                                      sizeof(FirstGenLogits), ds.overflow, sizeof(std::uint32_t),
                                      sizeof(std::uint32_t), std::size_t(fg_rows),
                                      cudaMemcpyDeviceToHost, copy_stream_),
                    "cudaMemcpy2DAsync(first-gen overflow)");
    }
    if (status.ok()) status.step(cudaEventRecord(ds.copied, copy_stream_), "cudaEventRecord");
}

cudaError_t StageDevice::enqueue_completion(int slot) noexcept
{
    return cudaLaunchHostFunc(copy_stream_, on_slot_copied, &slots_[std::size_t(slot)].ctx);
}

// cudaStreamSynchronize has no timeout; a query every 100 us..1 ms costs nothing next to a
// kernel. A failed context completes the stream with an error: done, too.
bool StageDevice::wait_copies(std::chrono::steady_clock::time_point deadline) noexcept
{
    auto pause = std::chrono::microseconds(100);
    for (;;) {
        const cudaError_t q = cudaStreamQuery(copy_stream_);
        if (q != cudaErrorNotReady) {
            if (q != cudaSuccess) (void)cudaGetLastError();
            return true;
        }
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
}

void StageDevice::release() noexcept
{
    for (DeviceSlot& s : slots_) {
        if (s.computed) (void)cudaEventDestroy(s.computed);
        if (s.copied) (void)cudaEventDestroy(s.copied);
        if (s.rows) (void)cudaFree(s.rows);
        if (s.first_gen) (void)cudaFree(s.first_gen);
        if (s.overflow) (void)cudaFree(s.overflow);
        s = DeviceSlot{};
    }
    if (partials_) (void)cudaFree(partials_);
    if (candidates_) (void)cudaFree(candidates_);
    if (scratch_free_) (void)cudaEventDestroy(scratch_free_);
    if (copy_stream_) (void)cudaStreamDestroy(copy_stream_);
    partials_ = nullptr;
    candidates_ = nullptr;
    scratch_free_ = nullptr;
    copy_stream_ = nullptr;
    (void)cudaGetLastError();
}

// Whatever the stream may still touch is leaked, never freed under it: device memory (a kernel
// may write it; nothing frees it), the pinned slots (the ring; a copy may land in them) and the
// host functions' contexts (slots_, which a late host function reads; a moved vector keeps its
// elements' addresses). The late host function finds its slot delivered.
void StageDevice::leak() noexcept
{
    struct Leaked {
        std::shared_ptr<SlotRing> ring;
        std::vector<DeviceSlot> slots;
    };
    try {
        (void)new Leaked{std::move(ring_), std::move(slots_)};  // on purpose, see above
    } catch (...) {  // out of memory: the vector's move cannot throw; leak the objects instead
        (void)new std::shared_ptr<SlotRing>(std::move(ring_));
    }
}

}  // namespace jsonlw::snapshot::detail
