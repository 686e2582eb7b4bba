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

// alternate() of variants that time one record in ns, each run shown as "<ns> ns".
inline std::vector<std::vector<double>> alternate_ns(const Config& cfg, const std::string& cell,
                                                    std::vector<Variant<double>>& variants)
{
    return alternate<double>(cfg, cell, variants,
                             [](double x) { return fmt::format("{:.0f} ns", x); });
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

// Every row after the first compared with the first (jsonlw's), pair by pair.
inline void compare_with_first(std::vector<Row>& rows, bool higher)
{
    for (std::size_t v = 1; v < rows.size(); ++v)
        rows[v].ratio = pair_ratios(rows[0].values, rows[v].values, higher);
}

// The row of a variant that was not run.
template <class Result>
Row skipped_row(Row row, const Variant<Result>& v)
{
    row.skipped = true;
    row.problem = v.why_not;
    return row;
}

template <class Result>
std::string first_problem(const std::vector<Result>& rs)
{
    for (const Result& r : rs)
        if (!r.problem.empty()) return r.problem;
    return {};
}

// One lower-is-better row per variant, in the variants' order: a value per measured run
// (value(result)) in `unit`, and the first problem a run met when results say; an unavailable
// variant's row skipped.
template <class Result, class Value>
std::vector<Row> lower_is_better_rows(const std::vector<Variant<Result>>& variants,
                                      const std::vector<std::vector<Result>>& results,
                                      const std::string& unit, Value value)
{
    std::vector<Row> rows;
    for (std::size_t v = 0; v < variants.size() && v < results.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.unit = unit;
        row.higher_is_better = false;
        if (!variants[v].available) {
            rows.push_back(skipped_row(std::move(row), variants[v]));
            continue;
        }
        for (const Result& r : results[v]) row.values.v.push_back(value(r));
        if constexpr (requires(const Result& r) { r.problem; })
            row.problem = first_problem(results[v]);
        rows.push_back(std::move(row));
    }
    return rows;
}

// The rows of variants that time one record in ns.
inline std::vector<Row> ns_per_record_rows(const std::vector<Variant<double>>& variants,
                                           const std::vector<std::vector<double>>& results)
{
    return lower_is_better_rows(variants, results, "ns/record", [](double ns) { return ns; });
}

inline std::string spdlog_missing() { return "spdlog not found by Meson at build time"; }

}  // namespace bench
