// The throughput yardstick for `jsonlw report`: a bare simdjson iterate_many pass (on-demand,
// one thread, documents counted and not read) over the same files. bench/ can call it next to
// build_report() for the side-by-side figure; `jsonlw report --bench-baseline DIR` prints both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace jsonlw::tools {

struct BaselineResult {
    std::uint64_t bytes = 0;
    std::uint64_t documents = 0;
    std::uint64_t truncated_bytes = 0;  // torn tails, as iterate_many reports them
    double seconds = 0;                 // loading the files and the pass
    std::string error;                  // the first file iterate_many stopped on, if any

    double mb_per_s() const noexcept { return seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0; }
};

// Loads each file (padded_string::load) and runs ondemand::parser::iterate_many over it.
// Stops at a file's first malformed document (iterate_many cannot go past it).
BaselineResult iterate_many_baseline(const std::vector<std::filesystem::path>& files);

}  // namespace jsonlw::tools
