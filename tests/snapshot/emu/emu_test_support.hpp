// What the emulated device's own tests share: device buffers and a launch that must fail.
// Host side only; one test thread.
#pragma once

#include <cuda_runtime.h>
#include <jsonlw_emu/faults.hpp>
#include <jsonlw_emu/simt.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace emu_test {

// A zeroed device array of n T, freed when it goes.
template <class T>
struct DeviceArray {
    T* p = nullptr;
    std::size_t n;
    explicit DeviceArray(std::size_t count) : n(count)
    {
        REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)) == cudaSuccess);
        REQUIRE(cudaMemset(p, 0, n * sizeof(T)) == cudaSuccess);
    }
    ~DeviceArray() { (void)cudaFree(p); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    std::vector<T> get() const
    {
        std::vector<T> h(n);
        REQUIRE(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
        return h;
    }
};

// A launch that must fail: its error and report, and the device back to a clean state.
struct Failure {
    cudaError_t error;
    std::string report;
};
inline Failure expect_failed_launch()
{
    const cudaError_t e = cudaDeviceSynchronize();
    Failure f{e, jsonlw::emu::take_kernel_report()};
    jsonlw::emu::reset_device();
    REQUIRE(cudaGetLastError() == cudaSuccess);
    return f;
}

}  // namespace emu_test
