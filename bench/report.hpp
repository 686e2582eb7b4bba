// What a bench run found: sections of rows (one row per variant), the goals, the machine; and
// the two ways it is shown, a table on stdout and a JSON document.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// One figure per measured repetition.
struct Series {
    std::vector<double> v;

    bool empty() const noexcept { return v.empty(); }
    double median() const;
    double min() const;
    double max() const;
};

// The q-quantile (0..1) of `v`, nearest rank; 0 when empty.
double quantile(std::vector<double> v, double q);
double mean(const std::vector<double>& v);

struct Row {
    std::string variant;
    std::string unit;            // of `values`
    bool higher_is_better = true;
    Series values;
    // A second column derived from the median: median * scale2 (e.g. records/s -> MiB/s).
    std::string unit2;
    double scale2 = 0;
    // jsonlw's advantage over this variant, pair by pair (> 1: jsonlw better), or, on the
    // limit's row, the fraction of the limit jsonlw reaches.
    std::optional<Series> ratio;
    std::string ratio_of;        // which jsonlw row the ratio compares ("" = the first row)
    std::vector<std::pair<std::string, double>> extra;  // shown as "name value" in the notes
    std::string note;            // shown first in the notes (e.g. whether it validates)
    std::string problem;         // a run's check failed (first failure)
    bool skipped = false;        // not run (e.g. spdlog not built in); `problem` says why
};

struct Section {
    std::string scenario;  // throughput, submit, overload, drain, serialization
    std::string title;
    std::vector<Row> rows;
    std::vector<std::string> notes;
    std::vector<std::pair<std::string, double>> params;  // for the JSON
};

struct Goal {
    std::string name;
    std::string comparison;  // ">=" or "<="
    double target = 0;
    std::optional<double> measured;
    std::string unit;
    std::optional<bool> met;  // empty: not measurable in this run (see note)
    std::string note;
};

// A goal, `met` decided when there is a measurement (measured `comparison` target).
Goal make_goal(std::string name, std::string comparison, double target,
               std::optional<double> measured, std::string unit, std::string note = {});

struct Report {
    std::vector<std::pair<std::string, std::string>> machine;  // name, value
    std::vector<std::pair<std::string, std::string>> settings;
    std::vector<Section> sections;
    std::vector<Goal> goals;
    double wall_seconds = 0;
};

// The row of a variant that was not run, `why` said in its notes.
Row skipped_row(std::string variant, std::string why);
// A scenario that was not built in (e.g. -Dtools=false): a section of one skipped row.
void report_skipped(Report& report, std::string scenario, std::string variant, std::string why);

// "1.23 M", "456 k", "78.9" — three significant digits.
std::string human(double v);

void print_table(const Report& r, std::FILE* out);
std::string to_json(const Report& r);

}  // namespace bench
