// The kernel launch of the emulated device: JSONLW_LAUNCH(grid, block, shared_bytes, stream,
// kernel)(args...) is what kernels.cu writes instead of kernel<<<grid, block, shared_bytes,
// stream>>>(args...) (kernels.cu defines the nvcc form when this header did not). The launch
// checks the configuration as CUDA does, copies the arguments (kernel parameters are passed
// by value), and enqueues the grid on the stream (jsonlw_emu/runtime_hooks.hpp); the stream's
// thread runs it on the SIMT executor. Errors reach cudaGetLastError() as after a real launch.
#pragma once

#include <cuda_runtime_api.h>
#include <jsonlw_emu/runtime_hooks.hpp>
#include <jsonlw_emu/vector_types.hpp>

#include <cstddef>
#include <memory>
#include <tuple>
#include <utility>

namespace jsonlw::emu {

// Runs every block of the grid (on the calling thread and the executor's workers) and returns
// cudaSuccess or the first failure's error; the failure's report goes to stderr and to
// take_kernel_report(). invoke(closure) runs the kernel body as the current GPU thread.
cudaError_t run_grid(dim3 grid, dim3 block, void (*invoke)(const void*), const void* closure);

// cudaSuccess, or cudaErrorInvalidConfiguration for a shape a GPU refuses (compute capability
// 9.0 limits: 1024 threads a block, 1024 x 1024 x 64, grid 2^31-1 x 65535 x 65535).
cudaError_t check_launch(dim3 grid, dim3 block, std::size_t shared_bytes) noexcept;

template <class... P>
class BoundKernel {
public:
    BoundKernel(dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream, void (*fn)(P...))
        : grid_(grid), block_(block), shared_bytes_(shared_bytes), stream_(stream), fn_(fn)
    {
    }

    template <class... A>
    void operator()(A&&... args) const
    {
        static_assert(sizeof...(A) == sizeof...(P), "kernel argument count");
        if (const cudaError_t e = check_launch(grid_, block_, shared_bytes_); e != cudaSuccess) {
            set_last_error(e);
            return;
        }
        auto closure = std::make_shared<const Closure>(Closure{fn_, std::tuple<P...>(std::forward<A>(args)...)});
        const dim3 grid = grid_, block = block_;
        (void)enqueue_kernel(stream_, [closure, grid, block]() {
            return run_grid(grid, block, &invoke, closure.get());
        });
    }

private:
    struct Closure {
        void (*fn)(P...);
        std::tuple<P...> args;
    };
    static void invoke(const void* c)
    {
        const auto* closure = static_cast<const Closure*>(c);
        std::apply(closure->fn, closure->args);  // each GPU thread gets its own copies
    }

    dim3 grid_, block_;
    std::size_t shared_bytes_;
    cudaStream_t stream_;
    void (*fn_)(P...);
};

template <class... P>
BoundKernel<P...> bind_kernel(dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
                              void (*fn)(P...))
{
    return BoundKernel<P...>(grid, block, shared_bytes, stream, fn);
}

}  // namespace jsonlw::emu

#define JSONLW_LAUNCH(grid, block, shared_bytes, stream, ...) \
    ::jsonlw::emu::bind_kernel((grid), (block), (shared_bytes), (stream), &__VA_ARGS__)
