// The snapshot stage's value types: what it reads (LogitsView, RowMeta), how it is configured
// (SnapshotConfig) and what it produces per row (TokenSnapshot). Free of CUDA and Asio so a
// host TU, a .cu TU and a user's program can all include it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

// Marks the few functions a CUDA kernel shares with the host (the total order, the fp16 bit
// conversions): one definition, so the device cannot drift from the CPU reference.
#if defined(__CUDACC__)
#define JSONLW_SNAPSHOT_HD __host__ __device__
#else
#define JSONLW_SNAPSHOT_HD
#endif

namespace jsonlw::snapshot {

// Element type of a logits buffer. bf16 and fp16 widen exactly to fp32.
enum class LogitDType : std::uint8_t { f32, f16, bf16 };

constexpr std::size_t itemsize(LogitDType t) noexcept { return t == LogitDType::f32 ? 4 : 2; }
constexpr const char* dtype_name(LogitDType t) noexcept
{
    return t == LogitDType::f32 ? "float32" : t == LogitDType::f16 ? "float16" : "bfloat16";
}

// A [rows, vocab] logits matrix the stage reads and never writes. Rows may be padded
// (row_stride >= vocab, in elements); data needs only element alignment.
struct LogitsView {
    const void* data = nullptr;
    LogitDType dtype = LogitDType::f32;
    std::int32_t rows = 0;
    std::int32_t vocab = 0;
    std::int64_t row_stride = 0;  // elements between the starts of two rows
    int device = -1;              // -1: host memory; >= 0: the CUDA device holding data
};

// Per-row identity; request ids never go to the GPU.
struct RowMeta {
    static constexpr std::uint8_t first_gen = 1;  // flags bit: the sequence's first generated token

    std::uint64_t request_id = 0;
    std::uint32_t seq_index = 0;  // which output / beam of the request
    std::uint32_t step = 0;       // decode step (position of the generated token)
    std::uint8_t flags = 0;
};

// Whether and how the whole logits row of a first generated token is captured.
enum class FirstGenMode : std::uint8_t {
    off,             // not captured
    float16_compat,  // TensorRT-LLM's format: fp32/fp16 as they are, bf16 converted to fp16
                    // (values above 65504 become inf, counted in overflow_to_inf)
    float32_exact,   // every dtype widened to fp32 (exact, twice the bytes of fp16)
    bfloat16_raw,    // bf16 bytes as they are, "dtype": "bfloat16" (needs ml_dtypes to read in
                    // numpy); fp16/fp32 input is captured as in float16_compat
};

// What capture() does when no ring slot is free (after waiting up to
// SnapshotConfig::slot_wait for one, when that is set; by default it never waits).
enum class Backpressure : std::uint8_t {
    drop_step,             // the whole step is dropped and counted; the next batch says gap_before
    drop_first_gen_first,  // also: first-gen rows are dropped (counted) when the slot's first-gen
                        // pool is too small, while the step's token rows still go through
};

// How a CUDA slot's completion reaches the host (the CPU backend completes at once).
enum class CompletionMode : std::uint8_t {
    host_func,  // cudaLaunchHostFunc: an atomic store and one post (default)
    poll,       // cudaEventQuery from the stage's own thread every millisecond
};

// An aggregate for designated initializers; fields in declaration order.
struct SnapshotConfig {
    static constexpr int max_k = 64;

    int k = 20;                       // top-k width, 1..64
    bool topk_logits = true;          // which outputs the records carry
    bool topk_logprobs = true;
    bool sampled_logprob = true;
    bool sampled_rank = true;
    bool nan_count = true;
    FirstGenMode first_gen = FirstGenMode::off;
    int max_rows = 512;               // rows per capture() (larger: invalid_argument)
    int max_vocab = 262144;           // vocab per row (larger: invalid_argument)
    int max_first_gen_rows_per_step = 32;  // first-gen pool per slot, in rows of max_vocab
    int ring_slots = 4;               // slots in flight or leased, at least 2
    CompletionMode completion = CompletionMode::host_func;
    std::chrono::milliseconds watchdog{250};  // a slot overdue this long is checked by query
    // How long the stage's destructor waits for its copy stream and the last deliveries
    // (2 s, the default; 1 ms .. 60 s). A stream still busy then (a hung kernel) is abandoned,
    // as a writer's timed close abandons its I/O: the steps still in flight reach the sink as
    // failed batches, and the stream's device memory, pinned slots and host-function contexts
    // are leaked on purpose (the kernel may still write them), counted by abandoned_streams().
    std::chrono::milliseconds close_timeout{2000};
    Backpressure backpressure = Backpressure::drop_first_gen_first;
    // How long capture() may wait for a free slot before it drops the step (0, the default:
    // never wait, drop at once). A bounded stall of the decode loop for engines that prefer
    // it to lost per-token data; counted in stats().slot_waits / slot_wait_timeouts /
    // slot_wait_us. At most 10 s.
    std::chrono::microseconds slot_wait{0};
    // CPU backend: threads computing rows, the capturing thread included (0, the default:
    // hardware_concurrency). The workers run at a lower priority (cpu_worker_nice), so they
    // take only the CPU that the threads draining the results (the loop handling the
    // batches, the writers' I/O threads) leave: a CPU-bound decode loop cannot starve them.
    int cpu_threads = 0;
    int cpu_parallel_min_rows = 8;    // batches smaller than this run on one thread
    // CPU backend: added to the nice value of the pool's worker threads (Linux gives each
    // thread its own), 0..19, default 10: a nice-0 thread that wakes up preempts a worker and
    // gets about 10 times its share of a contended core. 0 keeps the process's priority.
    int cpu_worker_nice = 10;
};

// status_flags bits of a TokenSnapshot.
namespace flags {
inline constexpr std::uint16_t invalid_sampled_id = 1u << 0;  // sampled id outside [0, V)
inline constexpr std::uint16_t k_padded = 1u << 1;            // k > V: tail padded with id -1
inline constexpr std::uint16_t has_nan = 1u << 2;             // the row has a NaN: lse NaN
inline constexpr std::uint16_t has_posinf = 1u << 3;          // +inf and no NaN: lse +inf
inline constexpr std::uint16_t fully_masked = 1u << 4;        // every logit -inf: lse -inf
inline constexpr std::uint16_t sampled_nonfinite = 1u << 5;   // the sampled logprob is not finite
}  // namespace flags

// One row's results. A fixed-size POD so it can live in a pinned slot and be copied as bytes.
// Only the first k entries of the arrays are meaningful.
struct TokenSnapshot {
    std::uint64_t request_id = 0;
    std::uint32_t seq_index = 0;
    std::uint32_t step = 0;
    std::int32_t sampled_id = 0;
    float sampled_logit = 0;      // NaN when the id is out of range
    float sampled_logprob = 0;
    std::uint32_t sampled_rank = 0;  // 1-based position in the total order; 0: invalid id
    float lse = 0;                // log-sum-exp of the row (summed in double on the CPU)
    std::uint32_t nan_count = 0;
    std::uint32_t posinf_count = 0;
    std::uint16_t status_flags = 0;
    std::uint8_t k = 0;
    std::uint8_t row_flags = 0;   // RowMeta::flags as given
    std::int32_t topk_ids[SnapshotConfig::max_k];
    float topk_logits[SnapshotConfig::max_k];
    float topk_logprobs[SnapshotConfig::max_k];
};

}  // namespace jsonlw::snapshot
