// The serialization scenario: serialize() alone, thread CPU time per record, for RawJsonWriter
// (batched, alone, padded, trusted), PerfMetricsWriter on the seed record and RawOutputWriter,
// each next to its floor (memcpy, one compiled fmt call).
#include "line_pool.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <fmt/format.h>

namespace bench {

void serialization_scenario(const Config& cfg, Report& report)
{
    // Iterations: about the same bytes per run whatever the record size.
    const double budget = cfg.quick ? 4e6 : 40e6;
    std::vector<LinePool> pools;
    pools.push_back(make_pool(250));
    pools.push_back(seed_worker_pool());
    pools.push_back(make_pool(1024));
    pools.push_back(make_pool(4096));
    for (const LinePool& pool : pools) {
        const auto iterations = static_cast<std::size_t>(budget / static_cast<double>(pool.line_bytes));
        auto ns = [iterations](double seconds) { return seconds * 1e9 / iterations; };
        std::vector<Variant<double>> variants = {
            {"RawJsonWriter, batches of 64",
             [&] { return ns(raw_serialize_seconds(pool, iterations, RawPath::batch)); }},
            {"  same, each record alone",
             [&] { return ns(raw_serialize_seconds(pool, iterations, RawPath::alone)); }},
            {"  alone, with padding capacity",
             [&] { return ns(raw_serialize_seconds(pool, iterations, RawPath::alone_padded)); }},
            {"  trusted (no validation)",
             [&] { return ns(raw_serialize_seconds(pool, iterations, RawPath::trusted)); }},
            {"memcpy of the line (floor)", [&] { return ns(memcpy_line_seconds(pool, iterations)); }},
        };
        auto results = alternate_ns(cfg, "serialize " + pool.label, variants);
        Section sec;
        sec.scenario = "serialization";
        sec.title = fmt::format("serialization: RawJsonWriter, {} records (full validation "
                                "with simdjson, and trusted), {} per run, thread CPU time",
                                pool.label, human(static_cast<double>(iterations)));
        sec.params = {{"record_bytes", static_cast<double>(pool.line_bytes)},
                      {"iterations", static_cast<double>(iterations)}};
        sec.rows = ns_per_record_rows(variants, results);
        for (Row& row : sec.rows)
            row.extra.emplace_back("MiB/s", pool.line_bytes / (row.values.median() * 1e-9) / mib);
        compare_with_first(sec.rows, false);
        report.sections.push_back(std::move(sec));
    }

    // JsonLine: building the seed record (the aggregated worker example) from typed fields.
    const std::size_t iterations = cfg.quick ? 20000 : 200000;
    auto ns = [iterations](double seconds) { return seconds * 1e9 / iterations; };
    const WriterWorkload perf = perf_metrics_workload(0);
    std::vector<Variant<double>> variants = {
        {"PerfMetricsWriter serialize()",
         [&] { return ns(writer_serialize_seconds(perf, iterations)); }},
        {"JsonLine, hand-built (same fields)",
         [&] { return ns(jsonline_seed_seconds(iterations)); }},
        {"one compiled fmt::format_to (floor)", [&] { return ns(fmt_seed_seconds(iterations)); }},
    };
    auto results = alternate_ns(cfg, "serialize JsonLine seed", variants);
    const std::string golden = seed_worker_pool().lines.front();
    const std::string built = jsonline_seed_line();
    const std::string written = perf.lines.lines.front();
    Section sec;
    sec.scenario = "serialization";
    sec.title = fmt::format("serialization: the seed worker record ({} B) from typed fields, "
                            "{} per run, thread CPU time",
                            golden.size() + 1, human(static_cast<double>(iterations)));
    sec.params = {{"record_bytes", static_cast<double>(golden.size() + 1)},
                  {"iterations", static_cast<double>(iterations)}};
    sec.rows = ns_per_record_rows(variants, results);
    compare_with_first(sec.rows, false);
    const bool identical = written == golden;
    if (!identical) sec.rows[0].problem = "PerfMetricsWriter's line differs from TensorRT-LLM's";
    if (built != golden) sec.rows[1].problem = "the hand-built line differs from TensorRT-LLM's";
    sec.notes.push_back(identical ? "PerfMetricsWriter's line is byte-identical to TensorRT-LLM's "
                                    "(Python repr doubles: 1000.0, 3.0)"
                                  : "PerfMetricsWriter's line DIFFERS from TensorRT-LLM's: " +
                                        written);
    sec.notes.push_back("hand-built: the same JsonLine calls written out by hand for this record "
                        "(no optionals to test); the fmt floor is one format call with every "
                        "value in place, not Python's spelling (1000.0 prints as 1000)");
    Goal g = make_goal("PerfMetricsWriter serialize() per seed worker record", "<=", 450,
                       sec.rows[0].values.median(), "ns",
                       identical ? "byte-identical to TensorRT-LLM's line" : "NOT byte-identical");
    if (!identical) g.met = false;
    report.goals.push_back(g);
    report.sections.push_back(std::move(sec));

    // RawOutputWriter::serialize of a ~1 KiB output.
    const WriterWorkload raw_out = raw_output_workload(1024, cfg.dir);
    if (raw_out.problem.empty()) {
        const std::size_t n = cfg.quick ? 4000 : 40000;
        auto per = [n](double seconds) { return seconds * 1e9 / n; };
        std::vector<Variant<double>> rv = {
            {"RawOutputWriter serialize()",
             [&] { return per(writer_serialize_seconds(raw_out, n)); }},
            {"memcpy of the line (floor)", [&] { return per(memcpy_line_seconds(raw_out.lines, n)); }},
        };
        auto rr = alternate_ns(cfg, "serialize RawOutputWriter", rv);
        Section rs;
        rs.scenario = "serialization";
        rs.title = fmt::format("serialization: RawOutputWriter, {} ({} per run, thread CPU time)",
                               raw_out.lines.label, human(static_cast<double>(n)));
        rs.params = {{"record_bytes", static_cast<double>(raw_out.lines.line_bytes)},
                     {"iterations", static_cast<double>(n)}};
        rs.rows = ns_per_record_rows(rv, rr);
        compare_with_first(rs.rows, false);
        rs.notes.push_back("text (escaped, twice: text and frames), 4 frames, token ids, two "
                           "ISO 8601 timestamps");
        report.sections.push_back(std::move(rs));
    }
}

}  // namespace bench
