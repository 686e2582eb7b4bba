// A throughput cell: the variants alternated run by run, turned into one section of rows
// with each baseline's ratio against the jsonlw row that does the same work.
#include "throughput_cell.hpp"

#include "side_by_side.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

namespace bench {

// One throughput cell: the variants alternated run by run. Returns the section; goals are
// the caller's.
Section throughput_cell(const Config& cfg, const std::string& writer, const LinePool& pool,
                        std::size_t records, int producers, const std::vector<CellVariant>& cells)
{
    const std::string prebuilt = prebuilt_bytes(pool, records);
    ThroughputSpec spec{&pool, records, producers, cfg.dir, &prebuilt};
    // Every thread's sleeps and wake-ups during a run: what a hand-off costs beyond CPU.
    const auto counted = [&spec](const std::function<ThroughputResult(const ThroughputSpec&)>& run) {
        return [run, &spec] {
            rusage before{}, after{};
            ::getrusage(RUSAGE_SELF, &before);
            ThroughputResult r = run(spec);
            ::getrusage(RUSAGE_SELF, &after);
            r.switches = static_cast<std::uint64_t>(after.ru_nvcsw - before.ru_nvcsw);
            return r;
        };
    };
    const std::string cell = fmt::format("throughput {} {} x{}", writer, pool.label, producers);
    const bool chosen = cfg.cell_filter.empty() || cell.find(cfg.cell_filter) != std::string::npos;
    std::vector<Variant<ThroughputResult>> variants;
    for (const CellVariant& c : cells)
        variants.emplace_back(c.name, counted(c.run), c.available && chosen,
                              chosen ? c.why_not : "not chosen (--cell)");
    auto results = alternate<ThroughputResult>(
        cfg, cell, variants, [&](const ThroughputResult& r) {
            return fmt::format("{} rec/s{}{}", human(static_cast<double>(records) / r.seconds),
                               r.lost ? fmt::format(", lost/retried {}", r.lost) : "",
                               r.problem.empty() ? "" : " PROBLEM: " + r.problem);
        });

    Section sec;
    sec.scenario = "throughput";
    sec.title = fmt::format("throughput: {}, {} records, {} producer{} ({} records, {} MiB per "
                            "run; first submit until the file is closed)",
                            writer, pool.label, producers, producers > 1 ? "s" : "",
                            human(static_cast<double>(records)),
                            human(static_cast<double>(records * pool.line_bytes) / mib));
    sec.params = {{"record_bytes", static_cast<double>(pool.line_bytes)},
                  {"producers", producers},
                  {"records", static_cast<double>(records)}};
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.note = cells[v].note;
        row.unit = "records/s";
        row.unit2 = "MiB/s";
        row.scale2 = static_cast<double>(pool.line_bytes) / mib;
        if (!variants[v].available) {
            sec.rows.push_back(skipped_row(row, variants[v]));
            continue;
        }
        std::vector<double> lost, switches;
        for (const ThroughputResult& r : results[v]) {
            row.values.v.push_back(static_cast<double>(records) / r.seconds);
            lost.push_back(static_cast<double>(r.lost));
            switches.push_back(1000.0 * static_cast<double>(r.switches) / static_cast<double>(records));
        }
        row.problem = first_problem(results[v]);
        row.extra.emplace_back("ctx switches/1k rec", quantile(switches, 0.5));
        if (row.variant.find("overrun_oldest") != std::string::npos)
            row.extra.emplace_back("lines lost (median)", quantile(lost, 0.5));
        if (cells[v].jsonlw && quantile(lost, 0.5) > 0)
            row.extra.emplace_back("refusals retried (median)", quantile(lost, 0.5));
        sec.rows.push_back(row);
    }
    for (std::size_t v = 0; v < sec.rows.size(); ++v) {
        if (sec.rows[v].skipped || cells[v].jsonlw) continue;
        std::size_t base = 0;
        for (std::size_t k = 0; k < cells.size(); ++k)
            if (cells[k].jsonlw && cells[k].name == cells[v].against) base = k;
        if (sec.rows[base].skipped) continue;
        sec.rows[v].ratio = pair_ratios(sec.rows[base].values, sec.rows[v].values, true);
        if (base != 0) sec.rows[v].ratio_of = cells[base].name;
    }
    sec.notes.push_back("the line count and size of every file is checked after every run, "
                        "and jsonlw's counters: written == records");
    sec.notes.push_back("jsonlw advantage: pair by pair against the jsonlw row that does the "
                        "same work (the first row unless named); on the limit row, the "
                        "fraction of the limit that row reaches");
    return sec;
}

std::size_t row_index(const Section& sec, const std::string& name)
{
    for (std::size_t v = 0; v < sec.rows.size(); ++v)
        if (sec.rows[v].variant == name) return v;
    return sec.rows.size();
}

// Median of the pair-by-pair ratios of row `a` over row `b` (> 1: a is faster).
std::optional<double> ratio_between(const Section& sec, const std::string& a, const std::string& b)
{
    const std::size_t i = row_index(sec, a), j = row_index(sec, b);
    if (i >= sec.rows.size() || j >= sec.rows.size()) return std::nullopt;
    if (sec.rows[i].skipped || sec.rows[j].skipped || sec.rows[i].values.empty() ||
        sec.rows[j].values.empty())
        return std::nullopt;
    return pair_ratios(sec.rows[i].values, sec.rows[j].values, true).median();
}

namespace {

std::optional<double> ratio_median(const Section& sec, std::size_t v)
{
    if (v >= sec.rows.size() || sec.rows[v].skipped || !sec.rows[v].ratio) return std::nullopt;
    return sec.rows[v].ratio->median();
}

}  // namespace

void limit_goal(Report& report, const Section& sec, const std::string& writer,
                const std::string& label, int producers)
{
    std::optional<double> pct;
    if (auto m = ratio_median(sec, row_index(sec, limit_row))) pct = *m * 100;
    report.goals.push_back(make_goal(fmt::format("{} {}, {} producer{}: bytes/s vs write() limit",
                                                 writer, label, producers,
                                                 producers > 1 ? "s" : ""),
                                     ">=", 30, pct, "%"));
}

// The rows every cell has: the write() limit and plain fprintf, neither validating.
std::vector<CellVariant> plain_baselines(const std::string& against)
{
    return {
        {limit_row, write_limit_throughput,
         "no validation: the pre-built bytes, one thread", false, against},
        {fprintf_row, fprintf_throughput,
         "no validation: each producer fprintf()s the pre-serialized line", false, against},
    };
}

}  // namespace bench
