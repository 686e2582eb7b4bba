// The HostAllocator of the CUDA backend's ring slots: page-locked host memory
// (pinned_host_allocator.cpp says why). Made once per stage by StageDevice; its allocate() runs
// while the ring is built, its deallocate() on whichever thread drops the ring's last reference.
#pragma once

#include "../src/slot_ring.hpp"

#include <memory>

namespace jsonlw::snapshot::detail {

std::unique_ptr<HostAllocator> pinned_host_allocator();

}  // namespace jsonlw::snapshot::detail
