// What the emulated device counts over the process's life that a GPU profiler would show:
// the grids launched (one trace line each) and the bytes read by streaming loads.
#pragma once

#include <cstdint>

namespace jsonlw::emu {

// Grids that run_grid (jsonlw_emu/launch.hpp) started, failed ones included; launches that
// check_launch refused or fail_next_launch failed never reach it and are not counted.
std::uint64_t kernel_launches() noexcept;

// Bytes that kernels requested through __ldcs (the logits' vector loads), faulting ones included.
std::uint64_t streaming_load_bytes() noexcept;

}  // namespace jsonlw::emu
