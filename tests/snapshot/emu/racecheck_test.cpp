// racecheck on the emulated device: a write and another thread's access of the same
// JSONLW_SHARED element between two barriers fail the launch with a report naming the hazard,
// the variable and element, both threads and both source lines, under schedule seed 0 (thread
// order), unless a warp collective or __syncwarp both threads took part in orders them; atomics
// do not race with each other.
#include "emu_test_support.hpp"

#include <cuda_runtime.h>
#include <jsonlw_emu/simt.hpp>

#include <catch2/catch.hpp>

#include <initializer_list>

#include <cstdint>
#include <string>

using namespace emu_test;

namespace {

constexpr unsigned kFull = 0xffffffffu;

// Thread 0 publishes s[0] and every thread reads it with no barrier in between.
__global__ void read_after_write(int* out)
{
    JSONLW_SHARED(int, s, 64);
    if (threadIdx.x == 0) s[0] = 42;
    out[threadIdx.x] = s[0];
}

// A reduction buffer reused without the barrier that lets every thread finish reading it: the
// last thread overwrites the slot the others read (block_reduce without its second barrier).
__global__ void write_after_read(int* out)
{
    JSONLW_SHARED(int, s, 64);
    if (threadIdx.x == 0) s[0] = 1;
    __syncthreads();
    const int v = s[0];
    if (threadIdx.x == blockDim.x - 1) s[0] = v + 1;
    out[threadIdx.x] = v;
}

// Every thread stores its id into one slot.
__global__ void write_after_write(int* out)
{
    JSONLW_SHARED(int, s, 64);
    s[0] = int(threadIdx.x);
    __syncthreads();
    out[threadIdx.x] = s[0];
}

// Lanes exchange through shared memory inside their warp, ordered only by warp collectives: a
// __syncwarp, a __syncwarp of each half-warp (the exchange stays inside the half), a shuffle.
__global__ void warp_synchronous(int* out)
{
    JSONLW_SHARED(int, s, 64);
    const int t = int(threadIdx.x), lane = t & 31;
    s[t] = t;
    __syncwarp();
    int v = s[t ^ 1];
    __syncwarp();
    s[t] = v * 10;  // overwrites what lane ^ 1 read, after it read it
    const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    __syncwarp(half);
    v = s[t ^ 2];
    __syncwarp(half);
    s[t] = v;
    const int w = __shfl_xor_sync(kFull, v, 4);
    out[t] = s[t ^ 8] + w;
}

// Two half-warps each synchronize among themselves: that orders nothing between the halves.
__global__ void halves_do_not_order_each_other(int* out)
{
    JSONLW_SHARED(int, s, 32);
    const int lane = int(threadIdx.x);
    if (lane == 0) s[0] = 7;
    __syncwarp(lane < 16 ? 0x0000ffffu : 0xffff0000u);
    out[lane] = lane == 16 ? int(s[0]) : 0;
}

// Every thread takes a slot with atomicAdd on one counter; a plain read of the counter in the
// same interval is a race, after the barrier it is not.
template <bool ReadTooEarly>
__global__ void atomic_slots(int* out)
{
    JSONLW_SHARED_SCALAR(int, s_next);
    if (threadIdx.x == 0) s_next = 0;
    __syncthreads();
    const int pos = atomicAdd(&s_next, 1);
    if (ReadTooEarly && threadIdx.x == 0) out[blockDim.x] = s_next;
    __syncthreads();
    out[pos] = s_next;
}

__global__ void index_past_the_end(int* out)
{
    JSONLW_SHARED(int, s, 64);
    s[threadIdx.x] = 1;  // 65 threads
    out[threadIdx.x] = 0;
}

Failure race_under_seed_0(void (*kernel)(int*), int threads)
{
    jsonlw::emu::set_schedule_seed(0);
    DeviceArray<int> out(std::size_t(threads) + 1);
    JSONLW_LAUNCH(1, threads, 0, nullptr, *kernel)(out.p);  // &*kernel: the function
    return expect_failed_launch();
}

// 64 threads of `kernel` under seed 0: the launch fails, and racecheck's report holds each part.
void require_race(void (*kernel)(int*), std::initializer_list<const char*> parts)
{
    const Failure f = race_under_seed_0(kernel, 64);
    CHECK(f.error == cudaErrorLaunchFailure);
    INFO(f.report);
    for (const char* part : parts) {
        CAPTURE(part);
        CHECK(f.report.find(part) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("racecheck: a read of a slot another thread wrote, with no barrier between, fails the launch", "[emu][racecheck]")
{
    require_race(read_after_write,
                 {"racecheck: read-after-write hazard on __shared__ s[0] (bytes 0-3 of 256) in ",
                  "read_after_write(int*), block (0,0,0): thread (0,0,0) writes at racecheck_test.cpp:",
                  ", then thread (1,0,0) reads at racecheck_test.cpp:",
                  "with no __syncthreads between them and no warp collective or __syncwarp both took part in"});
}

TEST_CASE("racecheck: overwriting a slot other threads still read, with no barrier between, fails the launch", "[emu][racecheck]")
{
    require_race(write_after_read, {"racecheck: write-after-read hazard on __shared__ s[0] (bytes 0-3 of 256)",
                                    "thread (0,0,0) reads at racecheck_test.cpp:",
                                    ", then thread (63,0,0) writes at racecheck_test.cpp:"});
}

TEST_CASE("racecheck: two threads writing one slot between two barriers fail the launch", "[emu][racecheck]")
{
    require_race(write_after_write, {"racecheck: write-after-write hazard on __shared__ s[0] (bytes 0-3 of 256)",
                                     "thread (0,0,0) writes at racecheck_test.cpp:",
                                     ", then thread (1,0,0) writes at racecheck_test.cpp:"});
}

TEST_CASE("racecheck: lanes that exchange through shared memory between __syncwarp and shuffles are not flagged", "[emu][racecheck]")
{
    for (std::uint64_t seed : {0u, 1u, 2u, 7u}) {
        INFO("schedule seed " << seed);
        jsonlw::emu::set_schedule_seed(seed);
        DeviceArray<int> out(64);
        JSONLW_LAUNCH(1, 64, 0, nullptr, warp_synchronous)(out.p);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const auto h = out.get();
        const auto first = [](int i) { return (i ^ 1) * 10; };  // s[i] after the first exchange
        for (int t = 0; t < 64; ++t) {
            INFO("thread " << t);
            REQUIRE(h[std::size_t(t)] == first(t ^ 8 ^ 2) + first(t ^ 4 ^ 2));
        }
    }
    jsonlw::emu::set_schedule_seed(0);
}

TEST_CASE("racecheck: a __syncwarp of one half-warp does not order it with the other half", "[emu][racecheck]")
{
    jsonlw::emu::set_schedule_seed(0);
    DeviceArray<int> out(32);
    JSONLW_LAUNCH(1, 32, 0, nullptr, halves_do_not_order_each_other)(out.p);
    const Failure f = expect_failed_launch();
    INFO(f.report);
    CHECK(f.report.find("racecheck: read-after-write hazard on __shared__ s[0]") != std::string::npos);
    CHECK(f.report.find("thread (0,0,0) writes at") != std::string::npos);
    CHECK(f.report.find(", then thread (16,0,0) reads at") != std::string::npos);
}

TEST_CASE("racecheck: atomics on one counter do not race with each other, a plain read among them does", "[emu][racecheck]")
{
    for (std::uint64_t seed : {0u, 1u, 2u}) {
        INFO("schedule seed " << seed);
        jsonlw::emu::set_schedule_seed(seed);
        DeviceArray<int> out(257);
        JSONLW_LAUNCH(1, 256, 0, nullptr, atomic_slots<false>)(out.p);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const auto h = out.get();
        for (int i = 0; i < 256; ++i) REQUIRE(h[std::size_t(i)] == 256);
    }
    const Failure f = race_under_seed_0(atomic_slots<true>, 256);
    INFO(f.report);
    CHECK(f.error == cudaErrorLaunchFailure);
    // Thread 0 reads right after its own atomic; thread 1's atomic comes next.
    CHECK(f.report.find("racecheck: write-after-read hazard on __shared__ s_next (bytes 0-3 of 4)") != std::string::npos);
    CHECK(f.report.find("thread (0,0,0) reads at a line not recorded (a scalar), then thread (1,0,0) updates atomically at racecheck_test.cpp:") != std::string::npos);
}

TEST_CASE("memcheck: a __shared__ index past the end of its array fails the launch with an illegal address", "[emu][racecheck]")
{
    const Failure f = race_under_seed_0(index_past_the_end, 65);
    CHECK(f.error == cudaErrorIllegalAddress);
    INFO(f.report);
    CHECK(f.report.find("memcheck: invalid __shared__ write of s[64], an array of 64, by block (0,0,0) thread (64,0,0) at racecheck_test.cpp:") != std::string::npos);
    jsonlw::emu::set_schedule_seed(0);
}
