// A throughput cell: jsonlw's rows and their baselines alternated run by run over one record
// size and producer count, then each baseline's ratio against the jsonlw row doing the same
// work. Shared by the throughput and serializers scenarios.
#pragma once

#include "line_pool.hpp"
#include "report.hpp"
#include "runs.hpp"
#include "scenarios.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bench {

// A variant of a throughput cell. jsonlw rows come first; every other row's ratio is against
// the jsonlw row named by `against` (empty: the first row), the one doing the same work.
struct CellVariant {
    CellVariant(std::string n, std::function<ThroughputResult(const ThroughputSpec&)> r,
                std::string nt, bool j = false, std::string ag = {}, bool avail = true,
                std::string why = {})
        : name(std::move(n)), run(std::move(r)), note(std::move(nt)), jsonlw(j),
          against(std::move(ag)), available(avail), why_not(std::move(why))
    {
    }
    std::string name;
    std::function<ThroughputResult(const ThroughputSpec&)> run;
    std::string note;     // says whether it validates, and what else it does
    bool jsonlw = false;  // a jsonlw row: no ratio of its own
    std::string against;
    bool available = true;
    std::string why_not;
};

// One throughput cell: the variants alternated run by run. Returns the section; goals are
// the caller's.
Section throughput_cell(const Config& cfg, const std::string& writer, const LinePool& pool,
                        std::size_t records, int producers, const std::vector<CellVariant>& cells);

// The index of the row named `name`, or sec.rows.size().
std::size_t row_index(const Section& sec, const std::string& name);
// Median of the pair-by-pair ratios of row `a` over row `b` (> 1: a is faster).
std::optional<double> ratio_between(const Section& sec, const std::string& a, const std::string& b);

inline const char* const limit_row = "write() 1 MiB chunks (limit)";
inline const char* const fprintf_row = "fprintf + std::mutex";
inline const char* const fprintf_owned_row = "fprintf + std::mutex, a std::string per record";

// The goal: the writer's bytes/s at least 30 % of the write() limit's in this cell.
void limit_goal(Report& report, const Section& sec, const std::string& writer,
                const std::string& label, int producers);

// The rows every cell has: the write() limit and plain fprintf, neither validating.
std::vector<CellVariant> plain_baselines(const std::string& against);

}  // namespace bench
