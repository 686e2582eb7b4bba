// Device helpers of jsonlw-bench-gpu: data fill, the read-bandwidth ceiling, a spin kernel
// standing in for a model step, and the naive multi-pass baseline (max, sum, rank, then k
// rounds of argmax: what a non-fused path costs in passes over the logits).
#include "bench_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace jsonlw_bench_gpu {
namespace {

__device__ std::uint32_t hash32(std::uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return static_cast<std::uint32_t>(x);
}

// Roughly normal(0, sigma): the sum of four uniforms, centred.
__global__ void fill_kernel(void* p, int dtype, std::size_t n, std::uint64_t seed, float sigma)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const std::uint32_t h = hash32(seed * 0x9e3779b97f4a7c15ull + i);
        const float u = float(h & 0xff) + float((h >> 8) & 0xff) + float((h >> 16) & 0xff) +
                        float(h >> 24);
        const float x = (u / 255.f - 2.f) * sigma * 1.7f;
        if (dtype == 0) static_cast<float*>(p)[i] = x;
        else if (dtype == 1) static_cast<__half*>(p)[i] = __float2half_rn(x);
        else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(x);
    }
}

// Row r's element ids[r] becomes `value` (above every filled logit: that id is the row's argmax).
__global__ void plant_kernel(void* p, int dtype, int rows, std::size_t stride, const int* ids, float value)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const std::size_t i = std::size_t(r) * stride + std::size_t(ids[r]);
    if (dtype == 0) static_cast<float*>(p)[i] = value;
    else if (dtype == 1) static_cast<__half*>(p)[i] = __float2half_rn(value);
    else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(value);
}

__global__ void read_kernel(const uint4* p, std::size_t n, unsigned* sink)
{
    unsigned acc = 0;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc;  // keeps the loads
}

__global__ void spin_kernel(long long cycles)
{
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

__device__ float widen(const void* p, int dtype, std::size_t i)
{
    if (dtype == 0) return static_cast<const float*>(p)[i];
    const std::uint16_t h = static_cast<const std::uint16_t*>(p)[i];
    if (dtype == 2) return __uint_as_float(std::uint32_t{h} << 16);
    return __half2float(__ushort_as_half(h));
}

constexpr int kT = 256;

__device__ float block_max(float v, float* red)
{
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(~0u, v, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < kT / 32; ++w) r = fmaxf(r, red[w]);
    __syncthreads();
    return r;
}
__device__ float block_sum(float v, float* red)
{
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = 0;
    for (int w = 0; w < kT / 32; ++w) r += red[w];
    __syncthreads();
    return r;
}

// One CTA per row for each pass (so each pass re-reads the row from memory).
__global__ void naive_max(const void* p, int dtype, int vocab, float* m)
{
    __shared__ float red[kT / 32];
    const std::size_t base = std::size_t(blockIdx.x) * vocab;
    float v = -INFINITY;
    for (int i = threadIdx.x; i < vocab; i += kT) v = fmaxf(v, widen(p, dtype, base + i));
    v = block_max(v, red);
    if (threadIdx.x == 0) m[blockIdx.x] = v;
}
__global__ void naive_sum(const void* p, int dtype, int vocab, const float* m, float* s)
{
    __shared__ float red[kT / 32];
    const std::size_t base = std::size_t(blockIdx.x) * vocab;
    float v = 0;
    for (int i = threadIdx.x; i < vocab; i += kT) v += __expf(widen(p, dtype, base + i) - m[blockIdx.x]);
    v = block_sum(v, red);
    if (threadIdx.x == 0) s[blockIdx.x] = v;
}
__global__ void naive_rank(const void* p, int dtype, int vocab, const int* sampled, unsigned* rank)
{
    __shared__ float red[kT / 32];
    const std::size_t base = std::size_t(blockIdx.x) * vocab;
    const float xs = widen(p, dtype, base + sampled[blockIdx.x]);
    float c = 0;
    for (int i = threadIdx.x; i < vocab; i += kT) c += widen(p, dtype, base + i) >= xs;
    c = block_sum(c, red);
    if (threadIdx.x == 0) rank[blockIdx.x] = unsigned(c);
}
// Round r: the largest value below the previous round's (ties ignored: a baseline).
__global__ void naive_argmax_round(const void* p, int dtype, int vocab, float* prev)
{
    __shared__ float red[kT / 32];
    const std::size_t base = std::size_t(blockIdx.x) * vocab;
    const float bound = prev[blockIdx.x];
    float v = -INFINITY;
    for (int i = threadIdx.x; i < vocab; i += kT) {
        const float x = widen(p, dtype, base + i);
        if (x < bound) v = fmaxf(v, x);
    }
    v = block_max(v, red);
    if (threadIdx.x == 0) prev[blockIdx.x] = v;
}
__global__ void init_bound(float* prev, int rows)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) prev[i] = INFINITY;
}

}  // namespace

void fill(void* p, int dtype, std::size_t n, std::uint64_t seed, float sigma, cudaStream_t s)
{
    fill_kernel<<<1024, 256, 0, s>>>(p, dtype, n, seed, sigma);
}

void plant(void* p, int dtype, int rows, std::size_t stride, const int* ids, float value, cudaStream_t s)
{
    plant_kernel<<<(rows + 255) / 256, 256, 0, s>>>(p, dtype, rows, stride, ids, value);
}

void read_all(const void* p, std::size_t bytes, unsigned* sink, int sm_count, cudaStream_t s)
{
    read_kernel<<<sm_count * 8, 256, 0, s>>>(static_cast<const uint4*>(p), bytes / 16, sink);
}

void spin(long long cycles, cudaStream_t s) { spin_kernel<<<1, 32, 0, s>>>(cycles); }

void naive_pass(const NaiveArgs& a, cudaStream_t s)
{
    naive_max<<<a.rows, kT, 0, s>>>(a.logits, a.dtype, a.vocab, a.m);
    naive_sum<<<a.rows, kT, 0, s>>>(a.logits, a.dtype, a.vocab, a.m, a.s);
    naive_rank<<<a.rows, kT, 0, s>>>(a.logits, a.dtype, a.vocab, a.sampled, a.rank);
    init_bound<<<(a.rows + 255) / 256, 256, 0, s>>>(a.prev, a.rows);
    for (int r = 0; r < a.k; ++r) naive_argmax_round<<<a.rows, kT, 0, s>>>(a.logits, a.dtype, a.vocab, a.prev);
}

}  // namespace jsonlw_bench_gpu
