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
// take_kernel_report(). invoke(closure) runs the kernel body as the current GPU thread. kernel
// names the launch in take_launch_traffic() (jsonlw_emu/traffic.hpp).
cudaError_t run_grid(dim3 grid, dim3 block, void (*invoke)(const void*), const void* closure,
                     const char* kernel = "");

// cudaSuccess, or cudaErrorInvalidConfiguration for a shape a GPU refuses (compute capability
// 9.0 limits: 1024 threads a block, 1024 x 1024 x 64, grid 2^31-1 x 65535 x 65535).
cudaError_t check_launch(dim3 grid, dim3 block, std::size_t shared_bytes) noexcept;

template <class... P>
class BoundKernel {
public:
    BoundKernel(dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream, void (*fn)(P...),
                const char* name)
        : grid_(grid), block_(block), shared_bytes_(shared_bytes), stream_(stream), fn_(fn), name_(name)
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
        const char* name = name_;
        (void)enqueue_kernel(stream_, [closure, grid, block, name]() {
            return run_grid(grid, block, &invoke, closure.get(), name);
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
    const char* name_;  // a string literal
};

template <class... P>
BoundKernel<P...> bind_kernel(dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
                              void (*fn)(P...), const char* name)
{
    return BoundKernel<P...>(grid, block, shared_bytes, stream, fn, name);
}

}  // namespace jsonlw::emu

#define JSONLW_LAUNCH(grid, block, shared_bytes, stream, ...) \
    ::jsonlw::emu::bind_kernel((grid), (block), (shared_bytes), (stream), &__VA_ARGS__, #__VA_ARGS__)
