// The time a step's launches would take on a GPU if DRAM bandwidth were the only limit, from
// what the emulated device counted (jsonlw_emu/traffic.hpp): each distinct 32-byte sector a
// launch reads or writes crosses DRAM once, at the device's peak rate. It cannot see caches
// across launches, occupancy, latency hiding or clocks (docs/emulated-device.md, "Speed-shaped facts
// it counts"); jsonlw-bench-gpu prints the same model next to the measured time.
#pragma once

#include <jsonlw_emu/traffic.hpp>

#include <cstdint>
#include <vector>

namespace jsonlw::emu {

inline constexpr double h200_bytes_per_second = 4.8e12;  // H200 HBM3e peak

struct TrafficPrediction {
    std::uint64_t useful_bytes = 0;  // what the pass must read at least (the logits)
    std::uint64_t moved_bytes = 0;   // 32 x (distinct sectors read + written), over the launches
    double predicted_us = 0;         // moved_bytes at bytes_per_second
    double share = 0;                // useful_bytes / moved_bytes: the share of peak the pass reaches
};

inline TrafficPrediction predict(const std::vector<LaunchTraffic>& launches, std::uint64_t useful_bytes,
                                 double bytes_per_second = h200_bytes_per_second) noexcept
{
    TrafficPrediction p;
    p.useful_bytes = useful_bytes;
    for (const LaunchTraffic& l : launches)
        p.moved_bytes += sector_bytes * (l.distinct_read_sectors + l.distinct_written_sectors);
    p.predicted_us = double(p.moved_bytes) / bytes_per_second * 1e6;
    p.share = p.moved_bytes == 0 ? 0.0 : double(useful_bytes) / double(p.moved_bytes);
    return p;
}

}  // namespace jsonlw::emu
