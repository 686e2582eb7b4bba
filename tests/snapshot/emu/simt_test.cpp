// The SIMT executor of the emulated device on its own: CUDA's semantics for the built-ins,
// barriers and warp collectives the snapshot kernels use, seeded schedules that expose an
// order-dependent result, and the checks a GPU would not make (synccheck, warp masks,
// memcheck), each reported with a failed launch, never a hang.
#include "emu_test_support.hpp"

#include <cuda_runtime.h>
#include <jsonlw_emu/faults.hpp>
#include <jsonlw_emu/simt.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace emu_test;

namespace {

constexpr unsigned kFull = 0xffffffffu;

__global__ void indices(unsigned* out)
{
    const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    out[b * n + t] = b * 1000 + t;
}

__global__ void reverse_through_shared(const int* in, int* out)
{
    __shared__ int s[256];
    const int t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    out[blockIdx.x * 256 + t] = s[255 - t];
}

__global__ void warp_ops(unsigned* out)
{
    const unsigned lane = threadIdx.x & 31;
    unsigned sum = lane;
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFull, sum, o);
    const unsigned ballot = __ballot_sync(kFull, lane % 3 == 0);
    const unsigned down = __shfl_down_sync(kFull, lane * 10, 1, 8);   // segments of 8
    const unsigned up = __shfl_up_sync(kFull, lane * 10, 2);
    const unsigned idx = __shfl_sync(kFull, lane * 10, 5, 16);        // lane 5 of each half
    const unsigned xor8 = __shfl_xor_sync(kFull, lane, 8, 8);  // a later segment: own value
    unsigned* o = out + threadIdx.x * 8;
    o[0] = sum;
    o[1] = ballot;
    o[2] = unsigned(__popc(ballot));
    o[3] = down;
    o[4] = up;
    o[5] = idx;
    o[6] = xor8;
    o[7] = unsigned(__all_sync(kFull, lane < 32)) + 2u * unsigned(__any_sync(kFull, lane == 7));
}

// The order in which threads take slots decides where each writes: a result that depends on
// the schedule, which the emulator must be able to show.
__global__ void slots_in_arrival_order(int* out)
{
    __shared__ int s_next;
    if (threadIdx.x == 0) s_next = 0;
    __syncthreads();
    const int pos = atomicAdd(&s_next, 1);
    out[pos] = threadIdx.x;
}

__global__ void divergent_barrier(int* out)
{
    if (threadIdx.x >= 64) return;  // half the block leaves
    __syncthreads();
    out[threadIdx.x] = 1;
}

__global__ void two_barriers(int* out)
{
    if (threadIdx.x & 1) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}

__global__ void half_warp_shuffle(int* out)
{
    int v = threadIdx.x;
    if ((threadIdx.x & 31) < 16) v = __shfl_xor_sync(kFull, v, 1);  // names lanes that never come
    __syncthreads();
    out[threadIdx.x] = v;
}

__global__ void mask_without_self(int* out)
{
    out[threadIdx.x] = __shfl_xor_sync(0x2u, int(threadIdx.x), 1);  // lane 0 is not in 0x2
}

__global__ void read_past_end(const float* in, float* out, int n)
{
    out[threadIdx.x] = in[n + threadIdx.x];  // thread 0 reads in[n]: one past the end
}

__global__ void misaligned_vector_load(const unsigned* in, unsigned* out)
{
    const uint4 v = __ldcs(reinterpret_cast<const uint4*>(in + 1));  // 4 bytes off the grid
    out[threadIdx.x] = v.x;
}

}  // namespace

TEST_CASE("memcheck: a 16-byte vector load off its grid fails the launch with a misaligned address", "[emu]")
{
    DeviceArray<unsigned> in(64), out(32);
    JSONLW_LAUNCH(1, 32, 0, nullptr, misaligned_vector_load)(in.p, out.p);
    const Failure f = expect_failed_launch();
    CHECK(f.error == cudaErrorMisalignedAddress);
    INFO(f.report);
    CHECK(f.report.find("memcheck: misaligned access (a vector load or store off its alignment grid) by block (0,0,0) thread (") != std::string::npos);
}

TEST_CASE("Each GPU thread sees its own threadIdx and blockIdx in a 3-D grid of 3-D blocks", "[emu]")
{
    const dim3 grid(3, 2, 2), block(4, 4, 2);
    DeviceArray<unsigned> out(12 * 32);
    JSONLW_LAUNCH(grid, block, 0, nullptr, indices)(out.p);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const auto h = out.get();
    for (unsigned b = 0; b < 12; ++b)
        for (unsigned t = 0; t < 32; ++t) REQUIRE(h[b * 32 + t] == b * 1000 + t);
}

TEST_CASE("__shared__ is per block and __syncthreads publishes it to the whole block", "[emu]")
{
    for (int threads : {1, 2}) {
        jsonlw::emu::set_worker_threads(threads);
        std::vector<int> in(256 * 40);
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = int(i) * 7 + 1;
        DeviceArray<int> din(in.size()), dout(in.size());
        REQUIRE(cudaMemcpy(din.p, in.data(), in.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
        for (std::uint64_t seed : {0, 1, 2}) {
            jsonlw::emu::set_schedule_seed(seed);
            JSONLW_LAUNCH(40, 256, 0, nullptr, reverse_through_shared)(din.p, dout.p);
            REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
            const auto h = dout.get();
            for (int b = 0; b < 40; ++b)
                for (int t = 0; t < 256; ++t) REQUIRE(h[std::size_t(b * 256 + t)] == in[std::size_t(b * 256 + 255 - t)]);
        }
    }
    jsonlw::emu::set_schedule_seed(0);
}

TEST_CASE("Warp shuffles, ballot and votes give CUDA's results for 32-lane warps", "[emu]")
{
    for (std::uint64_t seed : {0, 5}) {
        jsonlw::emu::set_schedule_seed(seed);
        DeviceArray<unsigned> out(64 * 8);
        JSONLW_LAUNCH(1, 64, 0, nullptr, warp_ops)(out.p);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const auto h = out.get();
        unsigned want_ballot = 0;
        for (unsigned l = 0; l < 32; l += 3) want_ballot |= 1u << l;
        for (unsigned t = 0; t < 64; ++t) {
            const unsigned lane = t & 31;
            const unsigned* o = &h[t * 8];
            INFO("thread " << t);
            CHECK(o[0] == 496);  // 0 + 1 + ... + 31
            CHECK(o[1] == want_ballot);
            CHECK(o[2] == 11);
            CHECK(o[3] == ((lane % 8) == 7 ? lane * 10 : (lane + 1) * 10));
            CHECK(o[4] == (lane >= 2 ? (lane - 2) * 10 : lane * 10));
            CHECK(o[5] == ((lane & 16) + 5) * 10);
            CHECK(o[6] == ((lane ^ 8u) < (lane & ~7u) + 8 ? lane ^ 8u : lane));  // earlier: allowed
            CHECK(o[7] == 3);
        }
    }
    jsonlw::emu::set_schedule_seed(0);
}

TEST_CASE("An atomic's slot order differs between schedule seeds and repeats under one seed", "[emu]")
{
    auto run = [](std::uint64_t seed) {
        jsonlw::emu::set_schedule_seed(seed);
        DeviceArray<int> out(256);
        JSONLW_LAUNCH(1, 256, 0, nullptr, slots_in_arrival_order)(out.p);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        return out.get();
    };
    const auto natural = run(0), a = run(11), a_again = run(11), b = run(12);
    jsonlw::emu::set_schedule_seed(0);
    for (int t = 0; t < 256; ++t) REQUIRE(natural[std::size_t(t)] == t);  // thread order
    CHECK(a == a_again);
    CHECK(a != natural);
    CHECK(a != b);
    auto sorted = a;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == natural);  // every thread got exactly one slot
}

TEST_CASE("synccheck: threads that exit while the rest wait at __syncthreads fail the launch, no hang", "[emu]")
{
    DeviceArray<int> out(128);
    JSONLW_LAUNCH(2, 128, 0, nullptr, divergent_barrier)(out.p);
    const Failure f = expect_failed_launch();
    CHECK(f.error == cudaErrorLaunchFailure);
    INFO(f.report);
    CHECK(f.report.find("synccheck: 64 threads of block (0,0,0) exited without reaching the __syncthreads at simt_test.cpp:") != std::string::npos);
    CHECK(f.report.find("that 64 threads wait at") != std::string::npos);
}

TEST_CASE("synccheck: threads waiting at two different __syncthreads are reported", "[emu]")
{
    DeviceArray<int> out(64);
    JSONLW_LAUNCH(1, 64, 0, nullptr, two_barriers)(out.p);
    const Failure f = expect_failed_launch();
    CHECK(f.error == cudaErrorLaunchFailure);
    INFO(f.report);
    CHECK(f.report.find("synccheck:") != std::string::npos);
    CHECK(f.report.find("while 1 threads of its block wait at the one at simt_test.cpp:") != std::string::npos);
}

TEST_CASE("A full-mask shuffle that half the warp calls is reported as a deadlock naming it", "[emu]")
{
    DeviceArray<int> out(64);
    JSONLW_LAUNCH(1, 64, 0, nullptr, half_warp_shuffle)(out.p);
    const Failure f = expect_failed_launch();
    CHECK(f.error == cudaErrorLaunchFailure);
    INFO(f.report);
    CHECK(f.report.find("deadlock in block (0,0,0)") != std::string::npos);
    CHECK(f.report.find("32 threads wait at __syncthreads") != std::string::npos);
    CHECK(f.report.find("warp 0 lanes 0-15 wait in __shfl_xor_sync (mask 0xffffffff)") != std::string::npos);
    CHECK(f.report.find("warp 1 lanes 0-15 wait in __shfl_xor_sync (mask 0xffffffff)") != std::string::npos);
}

TEST_CASE("A shuffle whose mask leaves out the calling lane is reported", "[emu]")
{
    DeviceArray<int> out(32);
    JSONLW_LAUNCH(1, 32, 0, nullptr, mask_without_self)(out.p);
    const Failure f = expect_failed_launch();
    CHECK(f.error == cudaErrorLaunchFailure);
    INFO(f.report);
    CHECK(f.report.find("a mask without its own lane") != std::string::npos);
}

TEST_CASE("memcheck: a read one element past a device allocation fails the launch with an illegal address", "[emu]")
{
    const int n = 1000;  // 4000 bytes: a multiple of 16, so in[n] is the guard page's first byte
    DeviceArray<float> in(n), out(32);
    for (int workers : {1, 2}) {
        jsonlw::emu::set_worker_threads(workers);
        JSONLW_LAUNCH(4, 32, 0, nullptr, read_past_end)(in.p, out.p, n);
        const Failure f = expect_failed_launch();
        CHECK(f.error == cudaErrorIllegalAddress);
        INFO(f.report);
        CHECK(f.report.find("memcheck: invalid read at 0x") != std::string::npos);
        CHECK(f.report.find("by block (0,0,0) thread (0,0,0): 0 bytes after the end of the 4000-byte device allocation") != std::string::npos);
    }
    // reset_device() cleared the sticky error: the device runs kernels again.
    DeviceArray<unsigned> ids(32);
    JSONLW_LAUNCH(1, 32, 0, nullptr, indices)(ids.p);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(ids.get()[31] == 31);
}

TEST_CASE("A launch configuration a GPU refuses is the launching thread's last error", "[emu]")
{
    DeviceArray<int> out(64);
    JSONLW_LAUNCH(1, 2048, 0, nullptr, mask_without_self)(out.p);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    CHECK(cudaGetLastError() == cudaSuccess);
    JSONLW_LAUNCH(dim3(1, 70000), 32, 0, nullptr, mask_without_self)(out.p);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);  // nothing was enqueued
}
