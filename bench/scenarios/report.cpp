// The report scenario: `jsonlw report` over demo output, next to a bare simdjson iterate_many
// pass over the same bytes.
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace bench {

// Built with the tools only (main.cpp reports it skipped otherwise).
#ifdef JSONLW_BENCH_REPORT
void report_scenario(const Config& cfg, Report& report)
{
    Section sec;
    sec.scenario = "report";
    const std::uint64_t target = cfg.quick ? (std::uint64_t{64} << 20) : (std::uint64_t{1} << 30);
    const std::filesystem::path dir = cfg.dir / "report";
    progress(fmt::format("report: making {} of demo output", human(double(target)) + "B"));
    const ReportData data = make_report_data(dir, target);
    sec.title = fmt::format("report: `jsonlw report` over {:.0f} MB of demo output ({} files), next to "
                            "a bare simdjson iterate_many pass (1 thread, documents counted, not read) "
                            "over the same bytes; page cache warm",
                            double(data.bytes) / 1e6, data.files.size());
    if (!data.problem.empty()) {
        Row row;
        row.variant = "jsonlw report";
        row.problem = data.problem;
        sec.rows.push_back(row);
        report.sections.push_back(std::move(sec));
        std::filesystem::remove_all(dir);
        return;
    }
    std::vector<Variant<ReportRunResult>> variants = {
        {"jsonlw report (every hardware thread)", [&] { return report_run(data, 0); }},
        {"jsonlw report --jobs 1", [&] { return report_run(data, 1); }},
        {"iterate_many, 1 thread (baseline)", [&] { return iterate_many_run(data); }},
    };
    auto results = alternate<ReportRunResult>(cfg, "report", variants, [](const ReportRunResult& r) {
        return fmt::format("{:.0f} MB/s", double(r.bytes) / 1e6 / r.seconds);
    });
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.unit = "MB/s";
        for (const auto& r : results[v]) row.values.v.push_back(double(r.bytes) / 1e6 / r.seconds);
        row.problem = first_problem(results[v]);
        sec.rows.push_back(std::move(row));
    }
    for (std::size_t v = 0; v < 2; ++v) {
        sec.rows[v].ratio = pair_ratios(sec.rows[v].values, sec.rows[2].values, true);
        sec.rows[v].ratio_of = "iterate_many";
    }
    sec.notes.push_back("the report validates every line (DOM parse) and computes every figure; the "
                        "baseline only walks the documents");
    report.goals.push_back(make_goal("jsonlw report vs a bare iterate_many pass, same bytes", ">=", 0.5,
                                     sec.rows[0].ratio ? std::optional<double>(sec.rows[0].ratio->median())
                                                       : std::nullopt,
                                     "x"));
    report.sections.push_back(std::move(sec));
    std::filesystem::remove_all(dir);
}
#endif


}  // namespace bench
