// host_upload.hpp: the upload of host logits, on the capturing stream.
#include "host_upload.hpp"

#include <jsonlw/snapshot/types.hpp>  // itemsize

namespace jsonlw::snapshot::detail {

DeviceInputs HostUpload::stage(const LogitsView& v, const std::int32_t* sampled,
                               cudaStream_t stream, EnqueueStatus& status) noexcept
{
    DeviceInputs in{v.data, v.row_stride, sampled};
    if (v.device != -1 || v.rows <= 0 || !status.ok()) return in;
    // Host logits go to a device buffer first. From pageable memory cudaMemcpy2DAsync returns
    // once the bytes are staged, so the caller may reuse its buffers when capture() returns
    // (it may wait for the stream's earlier work to do so).
    const std::size_t row_bytes = std::size_t(v.vocab) * itemsize(v.dtype);
    if (!ensure(row_bytes * std::size_t(v.rows), v.rows))
        status.step(cudaErrorMemoryAllocation, "cudaMalloc(host upload)");
    status.step(cudaMemcpy2DAsync(logits_, row_bytes, v.data,
                                  std::size_t(v.row_stride) * itemsize(v.dtype), row_bytes,
                                  std::size_t(v.rows), cudaMemcpyHostToDevice, stream),
                "cudaMemcpy2DAsync(host logits)");
    status.step(cudaMemcpyAsync(sampled_, sampled, sizeof(std::int32_t) * std::size_t(v.rows),
                                cudaMemcpyHostToDevice, stream),
                "cudaMemcpyAsync(host sampled ids)");
    return {logits_, v.vocab, sampled_};
}

// Grown to the largest step seen. Growing frees the old buffers, which synchronizes the
// device: it happens a few times at most.
bool HostUpload::ensure(std::size_t bytes, int rows) noexcept
{
    if (bytes <= logits_bytes_ && rows <= sampled_rows_) return true;
    release();
    if (cudaMalloc(&logits_, bytes) != cudaSuccess ||
        cudaMalloc(reinterpret_cast<void**>(&sampled_),
                   sizeof(std::int32_t) * std::size_t(max_rows_)) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    logits_bytes_ = bytes;
    sampled_rows_ = max_rows_;
    return true;
}

void HostUpload::release() noexcept
{
    if (logits_) (void)cudaFree(logits_);
    if (sampled_) (void)cudaFree(sampled_);
    logits_ = nullptr;
    sampled_ = nullptr;
    logits_bytes_ = 0;
    sampled_rows_ = 0;
}

}  // namespace jsonlw::snapshot::detail
