#include <jsonlw/report/detail/report_stats.hpp>

#include <algorithm>
#include <cmath>

namespace jsonlw::tools {

double percentile_sorted(std::span<const double> sorted, double p) noexcept
{
    if (sorted.empty()) return 0.0;
    const double h = static_cast<double>(sorted.size() - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::vector<double>& values)
{
    Summary s;
    if (values.empty()) return s;
    std::sort(values.begin(), values.end());
    s.count = values.size();
    // Kahan-free: values are ms of one request each; a plain sum is exact enough in double.
    double sum = 0;
    for (const double v : values) sum += v;
    s.mean = sum / static_cast<double>(values.size());
    s.median = percentile_sorted(values, 50);
    s.p75 = percentile_sorted(values, 75);
    s.p99 = percentile_sorted(values, 99);
    s.min = values.front();
    s.max = values.back();
    return s;
}

void SampleSet::merge(SampleSet&& other)
{
    if (values.empty()) values = std::move(other.values);
    else values.insert(values.end(), other.values.begin(), other.values.end());
    missing += other.missing;
    inverted += other.inverted;
}

}  // namespace jsonlw::tools
