// The serializers scenario: the validated RawJsonWriter cells and the PerfMetricsWriter seed
// cell with WriterOptions::serializer_threads 1, 2, 4, 8 (as many as the machine has cores
// for), each row's ratio against 1 serializer.
#include "line_pool.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "throughput_cell.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace bench {

void serializers_scenario(const Config& cfg, Report& report)
{
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::size_t> counts;
    for (std::size_t n : {1, 2, 4, 8})
        if (n == 1 || n <= cores) counts.push_back(n);
    const std::vector<int> producer_counts =
        cores >= 8 ? std::vector<int>{1, 4} : std::vector<int>{1};
    const auto row_name = [](const std::string& writer, std::size_t n) {
        return fmt::format("jsonlw {}, {} serializer{}", writer, n, n > 1 ? "s" : "");
    };
    const auto cell_of = [&](const std::string& writer, const LinePool& pool, std::size_t records,
                             int producers, const std::string& note,
                             std::function<ThroughputResult(const ThroughputSpec&)> run) {
        std::vector<CellVariant> cells;
        for (std::size_t n : counts)
            cells.push_back({row_name(writer, n),
                             [run, n](const ThroughputSpec& s) {
                                 ThroughputSpec t = s;
                                 t.serializers = n;
                                 return run(t);
                             },
                             note, true});
        Section sec = throughput_cell(cfg, writer, pool, records, producers, cells);
        sec.scenario = "serializers";
        sec.notes.push_back(fmt::format(
            "serializer_threads 1, 2, 4, 8 (those up to the machine's {} cores); \"vs 1 "
            "serializer\": median of the pair-by-pair ratios; one I/O thread appends in batch "
            "order",
            cores));
        for (std::size_t k = 1; k < counts.size(); ++k) {
            const auto r = ratio_between(sec, row_name(writer, counts[k]), row_name(writer, 1));
            if (r) sec.rows[k].extra.emplace_back("vs 1 serializer", *r);
            // 2 on any machine: not slower; more: each doubling adds at least a quarter.
            report.goals.push_back(make_goal(
                fmt::format("{} {}, {} producer{}: {} serializers vs 1", writer, pool.label,
                            producers, producers > 1 ? "s" : "", counts[k]),
                ">=", counts[k] == 2 ? 1.0 : counts[k] == 4 ? 1.25 : 1.5, r, "x"));
        }
        report.sections.push_back(std::move(sec));
    };
    for (std::size_t size : {std::size_t{250}, std::size_t{1024}}) {
        const LinePool pool = make_pool(size);
        const std::size_t records = std::max<std::size_t>(1000, cfg.records * 250 / size);
        for (int producers : producer_counts)
            cell_of("RawJsonWriter", pool, records, producers,
                    "validates: full simdjson parse of each chunk, minified",
                    [](const ThroughputSpec& s) { return jsonlw_raw_throughput(s, false); });
    }
    const WriterWorkload wl = perf_metrics_workload(0);
    for (int producers : producer_counts)
        cell_of(wl.name, wl.lines, cfg.records, producers,
                "serializes the typed seed record (JsonLine); queue 1024, retried refusals",
                [&wl](const ThroughputSpec& s) { return writer_throughput(wl, s); });
}

}  // namespace bench
