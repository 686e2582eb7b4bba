// The table and the JSON document of a bench run, and the statistics their figures use.
#include "report.hpp"

#include <jsonlw/json_line.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>

namespace bench {

double Series::median() const { return quantile(v, 0.5); }
double Series::min() const { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
double Series::max() const { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

double quantile(std::vector<double> v, double q)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    if (q == 0.5 && v.size() % 2 == 0) return (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    const double rank = std::ceil(q * static_cast<double>(v.size()));
    const auto i = static_cast<std::size_t>(std::max(1.0, rank)) - 1;
    return v[std::min(i, v.size() - 1)];
}

double mean(const std::vector<double>& v)
{
    return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

Goal make_goal(std::string name, std::string comparison, double target,
               std::optional<double> measured, std::string unit, std::string note)
{
    Goal g{std::move(name), std::move(comparison), target, measured, std::move(unit),
           std::nullopt, std::move(note)};
    if (measured) g.met = g.comparison == ">=" ? *measured >= target : *measured <= target;
    return g;
}

Row skipped_row(std::string variant, std::string why)
{
    Row row;
    row.variant = std::move(variant);
    row.skipped = true;
    row.problem = std::move(why);
    return row;
}

void report_skipped(Report& report, std::string scenario, std::string variant, std::string why)
{
    Section sec;
    sec.title = scenario + ": skipped";
    sec.scenario = std::move(scenario);
    sec.rows.push_back(skipped_row(std::move(variant), std::move(why)));
    report.sections.push_back(std::move(sec));
}

std::string human(double v)
{
    const double a = std::fabs(v);
    auto sig3 = [](double x) {
        if (x >= 100) return fmt::format("{:.0f}", x);
        if (x >= 10) return fmt::format("{:.1f}", x);
        return fmt::format("{:.2f}", x);
    };
    if (a >= 1e9) return sig3(v / 1e9) + " G";
    if (a >= 1e6) return sig3(v / 1e6) + " M";
    if (a >= 1e4) return sig3(v / 1e3) + " k";
    if (a == 0) return "0";
    if (a < 0.01) return fmt::format("{:.2g}", v);
    return sig3(v);
}

namespace {

std::string ratio_text(const Series& s)
{
    return fmt::format("{:.2f}x ({:.2f}-{:.2f})", s.median(), s.min(), s.max());
}

std::string extra_text(const Row& row)
{
    std::string out = row.note;
    for (const auto& [name, value] : row.extra) {
        if (!out.empty()) out += out == row.note ? "; " : ", ";
        out += fmt::format("{} {}", name, human(value));
    }
    if (!row.problem.empty()) {
        if (!out.empty()) out += "; ";
        out += (row.skipped ? "SKIPPED: " : "CHECK FAILED: ") + row.problem;
    }
    return out;
}

}  // namespace

void print_table(const Report& r, std::FILE* out)
{
    fmt::print(out, "jsonlw-bench\n");
    for (const auto& [k, v] : r.machine) fmt::print(out, "  {:<14} {}\n", k + ":", v);
    for (const auto& [k, v] : r.settings) fmt::print(out, "  {:<14} {}\n", k + ":", v);
    const std::vector<std::string>* previous_notes = nullptr;
    for (const Section& s : r.sections) {
        fmt::print(out, "\n== {} ==\n", s.title);
        std::string unit = s.rows.empty() ? "" : s.rows.front().unit;
        std::string unit2 = s.rows.empty() ? "" : s.rows.front().unit2;
        fmt::print(out, "  {:<34} {:>10} {:>19} {:>9}  {:<24} {}\n", "variant", unit,
                   "(min-max)", unit2, "jsonlw advantage", "notes");
        for (const Row& row : s.rows) {
            if (row.skipped || row.values.empty()) {
                fmt::print(out, "  {:<34} {:>10} {:>19} {:>9}  {:<24} {}\n", row.variant, "-", "",
                           "", "", extra_text(row));
                continue;
            }
            const std::string range =
                fmt::format("{}-{}", human(row.values.min()), human(row.values.max()));
            const std::string col2 =
                row.scale2 != 0 ? human(row.values.median() * row.scale2) : std::string();
            std::string ratio = row.ratio ? ratio_text(*row.ratio) : std::string();
            if (row.ratio && !row.ratio_of.empty()) ratio += " vs " + row.ratio_of;
            fmt::print(out, "  {:<34} {:>10} {:>19} {:>9}  {:<24} {}\n", row.variant,
                       human(row.values.median()), range, col2, ratio, extra_text(row));
        }
        // Cells of one scenario share their notes: printed once, at the first.
        if (previous_notes && *previous_notes == s.notes && !s.notes.empty())
            fmt::print(out, "  - notes as above\n");
        else
            for (const std::string& n : s.notes) fmt::print(out, "  - {}\n", n);
        previous_notes = &s.notes;
    }
    fmt::print(out, "\n== goals ==\n");
    int missed = 0;
    for (const Goal& g : r.goals) {
        std::string measured = g.measured ? fmt::format("{:.4g}", *g.measured) : "-";
        std::string verdict = !g.met ? "n/a" : (*g.met ? "met" : "MISSED");
        if (g.met && !*g.met) ++missed;
        fmt::print(out, "  {:<6} {:<66} {:>2} {:<8} measured {:<9} {}{}\n", verdict, g.name,
                   g.comparison, fmt::format("{:g} {}", g.target, g.unit), measured + " " + g.unit,
                   g.note.empty() ? "" : "- ", g.note);
    }
    fmt::print(out, "\n{} goal(s) missed; wall time {:.0f} s\n", missed, r.wall_seconds);
}

namespace {

// A failed run can leave an infinite ratio: written as null rather than invalid JSON.
void num(jsonlw::JsonLine& j, std::string_view name, double x) { j.key(name).number_or_null(x); }

void series_json(jsonlw::JsonLine& j, const Series& s)
{
    j.begin_object();
    num(j, "median", s.median());
    num(j, "min", s.min());
    num(j, "max", s.max());
    j.key("samples").begin_array();
    for (double x : s.v) j.number_or_null(x);
    j.end_array().end_object();
}

}  // namespace

std::string to_json(const Report& r)
{
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine j(buf);
    j.begin_object();
    j.key("machine").begin_object();
    for (const auto& [k, v] : r.machine) j.field(k, v);
    j.end_object();
    j.key("settings").begin_object();
    for (const auto& [k, v] : r.settings) j.field(k, v);
    j.end_object();
    num(j, "wall_seconds", r.wall_seconds);
    j.key("sections").begin_array();
    for (const Section& s : r.sections) {
        j.begin_object().field("scenario", s.scenario).field("title", s.title);
        j.key("params").begin_object();
        for (const auto& [k, v] : s.params) num(j, k, v);
        j.end_object();
        j.key("rows").begin_array();
        for (const Row& row : s.rows) {
            j.begin_object().field("variant", row.variant).field("unit", row.unit);
            j.field("higher_is_better", row.higher_is_better);
            if (row.skipped) j.field("skipped", true);
            if (!row.values.empty()) {
                j.key("values");
                series_json(j, row.values);
            }
            if (row.scale2 != 0 && !row.values.empty())
                num(j, "median_" + row.unit2, row.values.median() * row.scale2);
            if (row.ratio) {
                j.key("jsonlw_advantage");
                series_json(j, *row.ratio);
                if (!row.ratio_of.empty()) j.field("advantage_of", row.ratio_of);
            }
            if (!row.note.empty()) j.field("note", row.note);
            if (!row.extra.empty()) {
                j.key("extra").begin_object();
                for (const auto& [k, v] : row.extra) num(j, k, v);
                j.end_object();
            }
            if (!row.problem.empty()) j.field("problem", row.problem);
            j.end_object();
        }
        j.end_array();
        j.key("notes").begin_array();
        for (const std::string& n : s.notes) j.value(n);
        j.end_array().end_object();
    }
    j.end_array();
    j.key("goals").begin_array();
    for (const Goal& g : r.goals) {
        j.begin_object().field("name", g.name);
        num(j, "target", g.target);
        j.key("measured");
        j.number_or_null(g.measured ? *g.measured : std::nan(""));
        j.field("unit", g.unit).field("comparison", g.comparison);
        j.key("met");
        if (g.met) j.value(*g.met);
        else j.null();
        if (!g.note.empty()) j.field("note", g.note);
        j.end_object();
    }
    j.end_array().end_object();
    std::string out(j.view());
    out += '\n';
    return out;
}

}  // namespace bench
