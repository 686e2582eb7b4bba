// Samples and their summary (count, mean, median, p75, p99) as the report prints them.
// Percentiles use linear interpolation between the two nearest ranks (numpy's default,
// the one TensorRT-LLM's perf-sanity aggregator uses): p of sorted x[0..n-1] is
// x[h] + (h - floor(h)) * (x[floor(h)+1] - x[floor(h)]) with h = (n - 1) * p / 100.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace jsonlw::tools {

struct Summary {
    std::uint64_t count = 0;  // 0: the other fields are meaningless (printed as "-" / null)
    double mean = 0, median = 0, p75 = 0, p99 = 0, min = 0, max = 0;
};

// Linear-interpolation percentile of an ascending, non-empty range; p in [0, 100].
double percentile_sorted(std::span<const double> sorted, double p) noexcept;

// Sorts `values` in place (the histogram reuses the order) and summarizes them.
Summary summarize(std::vector<double>& values);

// Values of one figure plus the observations left out of it.
struct SampleSet {
    std::vector<double> values;
    std::uint64_t missing = 0;   // an end absent, null, not a number, <= 0 or non-finite
    std::uint64_t inverted = 0;  // end before start

    std::uint64_t seen() const noexcept { return values.size() + missing + inverted; }
    void merge(SampleSet&& other);
};

}  // namespace jsonlw::tools
