// How many grids the emulated device has run, over the process's life: the number of kernel
// launches a step costs, which a GPU profiler's trace would show (one line per launch).
#pragma once

#include <cstdint>

namespace jsonlw::emu {

// Grids that run_grid (jsonlw_emu/launch.hpp) started, failed ones included; launches that
// check_launch refused or fail_next_launch failed never reach it and are not counted.
std::uint64_t kernel_launches() noexcept;

}  // namespace jsonlw::emu
