// The executor's process-wide settings and its failure log (jsonlw_emu/simt.hpp has the public
// side). Any thread.
#pragma once

#include <cstdint>
#include <string>

namespace jsonlw::emu {

int worker_threads() noexcept;
void add_warp_collectives(std::uint64_t n) noexcept;
// Prints a failed launch's report to stderr and keeps it for take_kernel_report().
void record_failure(const std::string& report);

}  // namespace jsonlw::emu
