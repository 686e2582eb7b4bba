// CUDA errors as the CUDA backend reports them: a cudaError_t as text (its name and string),
// as an exception at setup, and as the first failure of a chain of enqueue calls (EnqueueStatus).
// Free functions and a value type; any thread.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace jsonlw::snapshot::detail {

// "what: cudaErrorX (its description)".
std::string cuda_error_text(const char* what, cudaError_t e);

// Throws std::runtime_error(cuda_error_text(what, e)) unless e is cudaSuccess.
void check(cudaError_t e, const char* what);

// The first failure of a step's enqueue calls, and the call it came from. Later calls still
// run (the caller evaluates them to pass their result); only the first error is kept. One per
// capture(), on the decode thread.
struct EnqueueStatus {
    cudaError_t e = cudaSuccess;
    const char* what = "";

    bool ok() const noexcept { return e == cudaSuccess; }
    // Keeps r as the failure when it is the first; true while nothing has failed.
    bool step(cudaError_t r, const char* w) noexcept
    {
        if (e == cudaSuccess && r != cudaSuccess) {
            e = r;
            what = w;
        }
        return e == cudaSuccess;
    }
};

}  // namespace jsonlw::snapshot::detail
