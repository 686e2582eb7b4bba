// How every scenario measures: its variants run one after the other in each round (A B C ...
// A B C ..., warm-up rounds discarded), and a baseline is compared with jsonlw pair by pair.
#pragma once

#include "report.hpp"
#include "scenarios.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

inline constexpr double mib = 1024.0 * 1024.0;

// A variant of a scenario: its row's name and how one run of it goes; an unavailable one is
// not run and its row says why.
template <class Result>
struct Variant {
    Variant(std::string n, std::function<Result()> r, bool avail = true, std::string why = {})
        : name(std::move(n)), run(std::move(r)), available(avail), why_not(std::move(why))
    {
    }
    std::string name;
    std::function<Result()> run;
    bool available = true;
    std::string why_not;  // when unavailable
};

// Runs warm-up rounds, then `pairs` measured rounds; in each round every variant once, in
// order (jsonlw first): A B C ... A B C ... Returns the measured results per variant.
template <class Result>
std::vector<std::vector<Result>> alternate(const Config& cfg, const std::string& cell,
                                           std::vector<Variant<Result>>& variants,
                                           const std::function<std::string(const Result&)>& brief)
{
    std::vector<std::vector<Result>> out(variants.size());
    const int rounds = cfg.warmups + cfg.pairs;
    for (int round = 0; round < rounds; ++round) {
        const bool warm = round < cfg.warmups;
        for (std::size_t v = 0; v < variants.size(); ++v) {
            if (!variants[v].available) continue;
            Result r = variants[v].run();
            progress(fmt::format("{} {} {}: {}", cell,
                                 warm ? std::string("warm-up") :
                                        fmt::format("pair {}/{}", round - cfg.warmups + 1, cfg.pairs),
                                 variants[v].name, brief(r)));
            if (!warm) out[v].push_back(std::move(r));
        }
    }
    return out;
}

// Pair by pair: advantage of row `a` over row `b`, `higher` says which way is better.
inline Series pair_ratios(const Series& a, const Series& b, bool higher)
{
    Series s;
    for (std::size_t i = 0; i < std::min(a.v.size(), b.v.size()); ++i) {
        const double x = a.v[i], y = b.v[i];
        s.v.push_back(higher ? x / y : y / x);
    }
    return s;
}

// One row per variant of a lower-is-better ns/record cell, in the variants' order.
inline std::vector<Row> ns_per_record_rows(const std::vector<std::string>& names,
                                           const std::vector<std::vector<double>>& results)
{
    std::vector<Row> rows;
    for (std::size_t v = 0; v < names.size() && v < results.size(); ++v) {
        Row row;
        row.variant = names[v];
        row.unit = "ns/record";
        row.higher_is_better = false;
        row.values.v = results[v];
        rows.push_back(std::move(row));
    }
    return rows;
}

template <class Result>
std::string first_problem(const std::vector<Result>& rs)
{
    for (const Result& r : rs)
        if (!r.problem.empty()) return r.problem;
    return {};
}

// The row of a variant that was not run.
template <class Result>
Row skipped_row(Row row, const Variant<Result>& v)
{
    row.skipped = true;
    row.problem = v.why_not;
    return row;
}

inline std::string spdlog_missing() { return "spdlog not found by Meson at build time"; }

}  // namespace bench
