// The throughput scenario: every writer's cells (record size x producers), jsonlw's rows next
// to the write() limit, fprintf + mutex, the equal-work by-hand baselines and spdlog; and the
// throughput goals.
#include "line_pool.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"
#include "throughput_cell.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace bench {

void throughput_scenario(const Config& cfg, Report& report)
{
    // Same bytes per cell whatever the record size: N records of 250 B, or as many larger
    // ones as fill the same volume (the file stays in the page cache).
    auto records_for = [&](std::size_t line_bytes) {
        return std::max<std::size_t>(1000, cfg.records * 250 / line_bytes);
    };
    std::vector<int> producer_counts = {1, 2, 4};
    if (cfg.quick) producer_counts = {1, 4};

    // RawJsonWriter, validated and trusted, against every baseline.
    const std::string raw_full = "jsonlw RawJsonWriter";
    const std::string raw_trusted = "jsonlw RawJsonWriter, trusted";
    const std::string raw_trusted_view = "jsonlw RawJsonWriter, trusted, submit(string_view)";
    const std::string raw_full_view = "jsonlw RawJsonWriter, submit(string_view)";
    const std::string raw_full_2 = "jsonlw RawJsonWriter, 2 serializers, submit(string_view)";
    const std::string raw_handed_over = "jsonlw RawJsonWriter, owned string's buffer handed over";
    const std::string validated_row = "simdjson validate+minify, fprintf+mutex";
    for (std::size_t size : {std::size_t{250}, std::size_t{1024}, std::size_t{4096}}) {
        const LinePool pool = make_pool(size);
        for (int producers : producer_counts) {
            std::vector<CellVariant> cells = {
                {raw_full, [](const ThroughputSpec& s) { return jsonlw_raw_throughput(s, false); },
                 "validates: full simdjson parse of each batch, minified", true},
                {raw_trusted, [](const ThroughputSpec& s) { return jsonlw_raw_throughput(s, true); },
                 "no validation (RawJsonValidation::trusted): CR/LF -> space only", true},
                {raw_full_view,
                 [](ThroughputSpec s) {
                     s.submit_view = true;
                     return jsonlw_raw_throughput(s, false);
                 },
                 "as the first row; the producer passes the pooled line (no std::string built, "
                 "the bytes copied into the queue cell)", true},
                {raw_trusted_view,
                 [](ThroughputSpec s) {
                     s.submit_view = true;
                     return jsonlw_raw_throughput(s, true);
                 },
                 "as the trusted row; submit(string_view) of the pooled line", true},
                {raw_full_2,
                 [](ThroughputSpec s) {
                     s.submit_view = true;
                     s.serializers = 2;
                     return jsonlw_raw_throughput(s, false);
                 },
                 "validates, as the first row; serializer_threads = 2 (the I/O thread and one "
                 "helper validate)", true},
            };
            if (size == 250)
                cells.push_back(
                    {raw_handed_over,
                     [](ThroughputSpec s) {
                         s.hand_over = true;
                         return jsonlw_raw_throughput(s, false);
                     },
                     "as the first row, but each string's buffer handed over to the writer and "
                     "freed on its I/O thread (what submit(std::string&&) did before it copied "
                     "texts of up to 456 B into the queue cell)", true});
            for (CellVariant& c : plain_baselines(raw_trusted_view)) cells.push_back(std::move(c));
            if (size == 250)
                cells.push_back({fprintf_owned_row, fprintf_owned_throughput,
                                 "no validation: each producer builds a std::string per record, as "
                                 "the submit(std::string&&) rows do, and fprintf()s it",
                                 false, raw_trusted});
            cells.push_back({validated_row, fprintf_validated_throughput,
                             "validates: each producer parses (simdjson DOM) and minifies the "
                             "line, then fprintf()s it",
                             false, raw_full_view});
            const char* spdlog_note = "no validation: spdlog's own formatting of the line";
            cells.push_back({"spdlog async block",
                             [](const ThroughputSpec& s) { return spdlog_throughput(s, SpdlogMode::async_block); },
                             spdlog_note, false, raw_trusted_view, have_spdlog(), spdlog_missing()});
            cells.push_back({"spdlog async overrun_oldest",
                             [](const ThroughputSpec& s) { return spdlog_throughput(s, SpdlogMode::async_overrun_oldest); },
                             spdlog_note, false, raw_trusted_view, have_spdlog(), spdlog_missing()});
            cells.push_back({"spdlog sync basic_file_sink",
                             [](const ThroughputSpec& s) { return spdlog_throughput(s, SpdlogMode::sync); },
                             spdlog_note, false, raw_trusted_view, have_spdlog(), spdlog_missing()});
            Section sec = throughput_cell(cfg, "RawJsonWriter", pool, records_for(size), producers,
                                          cells);
            sec.notes.push_back(
                "RawJsonWriter: Overflow::block (block_timeout 1 h), queue 8192, batch 1024 (the "
                "default): nothing is dropped; full validation parses each batch as one simdjson "
                "document stream and minifies only records with whitespace outside strings "
                "(these have none)");
            sec.notes.push_back("each producer builds a std::string per record from a pool of "
                                "64 pre-serialized lines (the copy a caller makes is timed)");
            if (have_spdlog())
                sec.notes.push_back("spdlog: pattern \"%v\", thread pool queue 8192, 1 worker; "
                                    "flush and pool shutdown timed; overrun_oldest loses lines "
                                    "by design (its rate counts records submitted)");
            if (size == 250 && producers == 1) {
                report.goals.push_back(make_goal(
                    "trusted RawJsonWriter 250 B, 1 producer: records/s vs fprintf+mutex", ">=",
                    1.5, ratio_between(sec, raw_trusted_view, fprintf_row), "x"));
                Goal g = make_goal(
                    "trusted RawJsonWriter 250 B, 1 producer: records/s vs spdlog async block",
                    ">=", 3, ratio_between(sec, raw_trusted_view, "spdlog async block"), "x");
                if (!have_spdlog()) g.note = "skipped: " + spdlog_missing();
                report.goals.push_back(g);
            }
            // Validated lines: against fprintf+mutex, which validates nothing (the owned string,
            // the first row, and the view); against the equal-work baseline (the default of 1
            // serializer, and serializer_threads = 2).
            struct Validated {
                const std::string& row;
                const char* how;
                std::string baseline;
                const char* against;
                double target;
            };
            const char* const equal_work = "simdjson validate+minify, fprintf+mutex";
            if (size == 250 && (producers == 1 || producers == 4))
                for (const Validated& v :
                     {Validated{raw_full, ", submit(std::string&&)", fprintf_row,
                                "fprintf+mutex (no validation)", 1.0},
                      Validated{raw_full, ", submit(std::string&&)", fprintf_owned_row,
                                "fprintf+mutex of the same std::string (no validation)", 1.0},
                      Validated{raw_full_view, ", submit(std::string_view)", fprintf_row,
                                "fprintf+mutex (no validation)", 1.0},
                      Validated{raw_full_view, "", validated_row, equal_work, 1.2},
                      Validated{raw_full_2, ", serializer_threads 2", validated_row, equal_work,
                                1.2}})
                    report.goals.push_back(make_goal(
                        fmt::format("validated RawJsonWriter 250 B, {} producer{}{}: records/s vs {}",
                                    producers, producers > 1 ? "s" : "", v.how, v.against),
                        ">=", v.target, ratio_between(sec, v.row, v.baseline), "x"));
            if (size != 250) {
                std::optional<double> pct;
                if (auto m = ratio_between(sec, raw_trusted_view, limit_row)) pct = *m * 100;
                report.goals.push_back(make_goal(
                    fmt::format("trusted RawJsonWriter {}, {} producer{}: bytes/s vs write() "
                                "limit",
                                pool.label, producers, producers > 1 ? "s" : ""),
                    ">=", 60, pct, "%"));
            }
            report.sections.push_back(std::move(sec));
        }
    }

    // PerfMetricsWriter: the seed record (the 2 M records/s goal), then ~1 KiB and ~4 KiB.
    const std::string perf_row = "jsonlw PerfMetricsWriter";
    const std::string perf_fmt_row = "fmt::format_to + fprintf+mutex";
    const std::string perf_row_2 = "jsonlw PerfMetricsWriter, 2 serializers";
    for (std::size_t steps : {std::size_t{0}, std::size_t{1}, std::size_t{17}}) {
        const WriterWorkload wl = perf_metrics_workload(steps);
        // --quick: one producer only for the configured writers.
        const std::vector<int> counts =
            steps == 0 || cfg.quick ? std::vector<int>{1} : producer_counts;
        for (int producers : counts) {
            std::vector<CellVariant> cells = {
                {perf_row, [&](const ThroughputSpec& s) { return writer_throughput(wl, s); },
                 "no validation needed: serializes the typed record (JsonLine)", true},
            };
            if (steps == 0)
                cells.push_back({perf_row_2,
                                 [&](ThroughputSpec s) {
                                     s.serializers = 2;
                                     return writer_throughput(wl, s);
                                 },
                                 "as the first row; serializer_threads = 2", true});
            for (CellVariant& c : plain_baselines(perf_row)) cells.push_back(std::move(c));
            cells.push_back({perf_fmt_row,
                             [&](const ThroughputSpec& s) { return perf_fmt_throughput(wl, s); },
                             "no validation: each producer formats the same record into the "
                             "same bytes (fmt::format_to, Python-repr doubles), then fprintf()s it",
                             false, perf_row});
            Section sec = throughput_cell(cfg, wl.name, wl.lines, records_for(wl.lines.line_bytes),
                                          producers, cells);
            sec.notes.push_back(
                "PerfMetricsWriter runs with TensorRT-LLM's constants (queue 1024, batch 64, "
                "drop_newest); a refused record is retried by its producer (counted), so every "
                "record is written; each submit copies the record");
            sec.notes.push_back("the write() and fprintf baselines write the same lines, "
                                "pre-serialized; fmt::format_to builds them from the record");
            if (steps == 0) {
                std::optional<double> rate;
                if (!sec.rows[0].values.empty()) rate = sec.rows[0].values.median();
                report.goals.push_back(make_goal("PerfMetricsWriter seed worker record, 1 "
                                                 "producer: end to end",
                                                 ">=", 2e6, rate, "records/s"));
                report.goals.push_back(make_goal(
                    "PerfMetricsWriter seed worker record, 1 producer: records/s vs "
                    "fmt::format_to + fprintf+mutex",
                    ">=", 1.2, ratio_between(sec, perf_row, perf_fmt_row), "x"));
                std::optional<double> rate2;
                if (const std::size_t k = row_index(sec, perf_row_2);
                    k < sec.rows.size() && !sec.rows[k].values.empty())
                    rate2 = sec.rows[k].values.median();
                report.goals.push_back(make_goal("PerfMetricsWriter seed worker record, 1 "
                                                 "producer, serializer_threads 2: end to end",
                                                 ">=", 1.5e6, rate2, "records/s",
                                                 "set with serializer threads, 2026-12-01 (docs/benchmarks-log.md)"));
            } else {
                limit_goal(report, sec, wl.name, steps == 1 ? "~1 KiB" : "~4 KiB", producers);
            }
            report.sections.push_back(std::move(sec));
        }
    }

    // RawOutputWriter through its hook: 4 on_chunk() calls per output.
    for (std::size_t size : {std::size_t{1024}, std::size_t{4096}}) {
        const WriterWorkload wl = raw_output_workload(size, cfg.dir);
        if (!wl.problem.empty()) {
            Section sec;
            sec.scenario = "throughput";
            sec.title = fmt::format("throughput: RawOutputWriter, ~{} B outputs", size);
            Row row;
            row.variant = "jsonlw RawOutputWriter";
            row.problem = "calibration: " + wl.problem;
            sec.rows.push_back(row);
            report.sections.push_back(std::move(sec));
            continue;
        }
        for (int producers : cfg.quick ? std::vector<int>{1} : producer_counts) {
            std::vector<CellVariant> cells = {
                {"jsonlw " + wl.name,
                 [&](const ThroughputSpec& s) { return writer_throughput(wl, s); },
                 "no validation needed: serializes the typed output (JsonLine)", true},
            };
            for (CellVariant& c : plain_baselines("")) cells.push_back(std::move(c));
            cells.push_back({"fmt::format_to + fprintf+mutex",
                             [&](const ThroughputSpec& s) { return raw_output_fmt_throughput(wl, s); },
                             "no validation: each producer accumulates the 4 chunks, formats the "
                             "same fields (escaped text and frames, token ids, ISO 8601 stamps), "
                             "then fprintf()s it"});
            Section sec = throughput_cell(cfg, wl.name, wl.lines, records_for(wl.lines.line_bytes),
                                          producers, cells);
            sec.notes.push_back(
                "each output arrives as 4 on_chunk() calls (text in 4 frames, token ids); "
                "Overflow::block (block_timeout 1 h), queue 1024, batch 1024: nothing is dropped");
            sec.notes.push_back("the write() and fprintf baselines write the same lines, "
                                "pre-serialized; fmt::format_to builds them from the chunks");
            limit_goal(report, sec, wl.name, size == 1024 ? "~1 KiB" : "~4 KiB", producers);
            report.sections.push_back(std::move(sec));
        }
    }
}

}  // namespace bench
