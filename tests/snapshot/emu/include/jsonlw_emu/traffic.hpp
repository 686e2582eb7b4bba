// What each kernel launch did to global memory, as Nsight Compute's memory metrics would show
// it (l1tex__t_requests, l1tex__t_sectors, "sector efficiency"): the emulated device watches
// every global access a kernel makes through __ldcs, ld_global and st_global
// (jsonlw_emu/global_access.hpp) and groups the lanes' accesses into warp-wide instructions.
// take_launch_traffic() may be called from any host thread; the records are complete once the
// launch's stream has run it (synchronize first). Test-only (docs/emulated-device.md).
//
// An instruction is one pass of a warp's lanes through one source site (nvcc's unrolled copies
// of one line are one site here). Lanes run one after another on the emulator, so passes are
// recovered from counts: a site every lane of the warp executed equally often pairs the lanes'
// n-th executions; any other site pairs executions by the lanes' progress through those (so a
// lane that a branch or a shorter inner loop leaves out is missing from that pass).
// Sectors are 32-byte units counted from the start of the allocation, as on a GPU, where
// cudaMalloc returns 256-byte aligned memory (the emulator's allocations are only 16-aligned).
#pragma once

#include <jsonlw_emu/vector_types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::emu {

inline constexpr std::uint64_t sector_bytes = 32;

// Loads or stores of one launch (or of one buffer in it).
struct AccessCounts {
    std::uint64_t instructions = 0;     // warp-wide memory instructions
    std::uint64_t requested_bytes = 0;  // every lane's access size, summed
    std::uint64_t used_bytes = 0;       // distinct bytes each instruction touched, summed
    std::uint64_t sectors = 0;          // distinct sectors each instruction touched, summed
    // Bytes used / bytes of the sectors touched (1 when nothing was accessed): 1.0 for a warp
    // reading 512 contiguous aligned bytes, 0.5 for 16-byte lanes 32 bytes apart, 1/8 for 32
    // lanes reading one 4-byte word.
    double sector_efficiency() const noexcept
    {
        return sectors == 0 ? 1.0 : double(used_bytes) / double(sectors * sector_bytes);
    }
    AccessCounts& operator+=(const AccessCounts& o) noexcept
    {
        instructions += o.instructions;
        requested_bytes += o.requested_bytes;
        used_bytes += o.used_bytes;
        sectors += o.sectors;
        return *this;
    }
};

// One device allocation's share of a launch's traffic.
struct BufferTraffic {
    const void* base = nullptr;  // what cudaMalloc returned (null: memory the runtime does not know)
    std::size_t size = 0;
    AccessCounts loads, stores;
    std::uint64_t distinct_read_bytes = 0;     // bytes read at least once
    std::uint64_t distinct_read_sectors = 0;   // sectors read at least once
    std::uint64_t distinct_written_sectors = 0;  // sectors written at least once
};

// One grid, in launch order.
struct LaunchTraffic {
    std::string kernel;  // as the launch wrote it, e.g. "partial_kernel<DT, 2>"
    dim3 grid, block;
    bool failed = false;  // the launch failed: counts stop where it did
    AccessCounts loads, stores;
    std::uint64_t distinct_read_bytes = 0;
    std::uint64_t distinct_read_sectors = 0;
    std::uint64_t distinct_written_sectors = 0;
    std::uint64_t warp_collectives = 0;  // completed, one per warp and call
    std::vector<BufferTraffic> buffers;  // by base address

    // The buffer that holds p (a default one, all zero, when the launch never touched it).
    BufferTraffic buffer(const void* p) const noexcept;
    std::uint64_t blocks() const noexcept { return std::uint64_t(grid.x) * grid.y * grid.z; }
};

// The launches recorded since the last take, oldest first, and forgets them. At most the last
// 256 are kept (older ones are dropped) so that a process that never takes stays bounded.
std::vector<LaunchTraffic> take_launch_traffic();

}  // namespace jsonlw::emu
