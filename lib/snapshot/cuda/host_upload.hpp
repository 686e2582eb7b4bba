// HostUpload: the device buffers a step's host logits and sampled ids (LogitsView::device == -1)
// are copied into before the kernels read them, grown to the largest step seen. Owned by one
// CudaStage: used by capture() on the decode thread, freed by the stage's release at teardown
// (never freed by its own destructor: an abandoned stream may still read it).
#pragma once

#include "cuda_errors.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace jsonlw::snapshot::detail {

// Where the kernels read a step's logits and sampled ids from.
struct DeviceInputs {
    const void* logits = nullptr;
    std::int64_t row_stride = 0;  // elements
    const std::int32_t* sampled = nullptr;
};

class HostUpload {
public:
    explicit HostUpload(int max_rows) noexcept : max_rows_(max_rows) {}
    HostUpload(const HostUpload&) = delete;
    HostUpload& operator=(const HostUpload&) = delete;

    // The step's inputs as the kernels see them: the caller's pointers for device logits; for
    // host logits, the upload buffers, with the copies enqueued on stream (nothing is enqueued
    // once status has failed). Failures go to status.
    DeviceInputs stage(const LogitsView& v, const std::int32_t* sampled, cudaStream_t stream,
                       EnqueueStatus& status) noexcept;

    // The device copies of host logits and sampled ids, none after.
    void release() noexcept;

private:
    bool ensure(std::size_t bytes, int rows) noexcept;

    int max_rows_;
    void* logits_ = nullptr;  // host views are uploaded here (ensure)
    std::size_t logits_bytes_ = 0;
    std::int32_t* sampled_ = nullptr;
    int sampled_rows_ = 0;
};

}  // namespace jsonlw::snapshot::detail
