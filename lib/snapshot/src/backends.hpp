// The factories behind SnapshotStage::create (private).
#pragma once

#include <jsonlw/snapshot/stage.hpp>

#include <memory>

namespace jsonlw::snapshot::detail {

std::unique_ptr<SnapshotStage> make_cpu_stage(const SnapshotConfig& config, BatchSink sink);

// Defined by the CUDA backend (cuda/) when it is built, else by cuda_absent.cpp: a CUDA stage
// on the current device, or nullptr with *why set when no device is usable.
std::unique_ptr<SnapshotStage> make_cuda_stage(const SnapshotConfig& config, BatchSink sink,
                                               std::string* why);

// Shared range checks of create(); throws std::invalid_argument naming the field.
void validate_config(const SnapshotConfig& config);

}  // namespace jsonlw::snapshot::detail
