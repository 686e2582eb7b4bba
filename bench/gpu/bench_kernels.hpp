// Device helpers of jsonlw-bench-gpu (bench_kernels.cu), callable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace jsonlw_bench_gpu {

// dtype: 0 fp32, 1 fp16, 2 bf16 (LogitDType's order). n elements of normal-ish(0, sigma).
void fill(void* p, int dtype, std::size_t n, std::uint64_t seed, float sigma, cudaStream_t s);
// Sets element ids[r] of each row r < rows (stride elements apart) to value.
void plant(void* p, int dtype, int rows, std::size_t stride, const int* ids, float value, cudaStream_t s);
// Reads bytes (a multiple of 16) once with streaming 16-byte loads.
void read_all(const void* p, std::size_t bytes, unsigned* sink, int sm_count, cudaStream_t s);
// Busy-waits about `cycles` SM clocks on one warp.
void spin(long long cycles, cudaStream_t s);

struct NaiveArgs {
    const void* logits;
    int dtype, rows, vocab, k;
    const int* sampled;
    float *m, *s, *prev;
    unsigned* rank;
};
// max, sum of exp, rank count, then k argmax rounds: 3 + k passes over [rows, vocab].
void naive_pass(const NaiveArgs& a, cudaStream_t s);

}  // namespace jsonlw_bench_gpu
