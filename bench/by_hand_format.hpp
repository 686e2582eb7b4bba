// What a user writes by hand to format the configured writers' records with fmt, for the
// equal-work baselines: the same bytes as PerfMetricsWriter's line, the same fields as
// RawOutputWriter's.
#pragma once

#include "writer_workloads.hpp"

#include <jsonlw/perf_metrics_record.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// Compiled fmt::format_to of the fields the record has, keys appended as literals, in the
// order and spelling of TensorRT-LLM's tensorrt_llm/serve/perf_metrics.py (Python-repr
// doubles): the same bytes as PerfMetricsWriter's line.
void format_perf_by_hand(const jsonlw::PerfMetricsRecord& r, fmt::memory_buffer& b);

// An output as a user accumulates and formats it by hand: the 4 chunks' text and token ids
// appended (what the hook does), then one line with the same fields as RawOutputWriter's.
struct ByHandOutput {
    std::string text;
    std::vector<std::size_t> frame_ends;
    std::vector<std::int32_t> tokens;
    std::chrono::system_clock::time_point started_at, finished_at;
};

// Accumulates the output's 4 chunks into `acc` (as the hook does), then appends one line with
// the same fields as RawOutputWriter's to `b`, ISO 8601 stamps from gmtime_r.
void format_output_by_hand(const RawOutputShape& o, std::uint64_t id, ByHandOutput& acc,
                           fmt::memory_buffer& b);

// A RawOutputWriter line with its two timestamps blanked, to compare with a by-hand line.
std::string without_stamps(std::string line);

}  // namespace bench
