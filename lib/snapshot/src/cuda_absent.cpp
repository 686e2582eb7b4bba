// Built instead of the CUDA backend when nvcc was not found or -Dcuda=disabled: no device is
// ever usable, so Backend::automatic is the CPU and Backend::cuda is refused with a reason.
#include "backends.hpp"

#include <string>

namespace jsonlw::snapshot {

int cuda_device_count(int* error) noexcept
{
    if (error) *error = 0;
    return 0;
}

std::uint64_t abandoned_streams() noexcept { return 0; }

namespace detail {

std::unique_ptr<SnapshotStage> make_cuda_stage(const SnapshotConfig&, BatchSink, std::string* why)
{
    if (why) *why = "jsonlw was built without the CUDA backend (-Dcuda=disabled or no nvcc)";
    return nullptr;
}

}  // namespace detail
}  // namespace jsonlw::snapshot
