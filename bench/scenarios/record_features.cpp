// The record-features scenario: the per-record features on vs off on the same record, side by
// side — a trace context on the perf-metrics and raw-output records, and capture = metadata
// (lengths and SHA-256 digests instead of text, frames and token ids) on the raw output. Thread
// CPU time of serialize() in batches of 64, alternated (docs/benchmarks.md, "Per-record
// features, the file check and the hash chain"). The hash chain and OTLP have scenarios of
// their own.
#include "encode_loop.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"
#include "writer_workloads.hpp"

#include <jsonlw/capture.hpp>
#include <jsonlw/perf_metrics_record.hpp>
#include <jsonlw/raw_output_record.hpp>
#include <jsonlw/trace_context.hpp>

#include <fmt/format.h>

#include <functional>

namespace bench {

void record_features_scenario(const Config& cfg, Report& report)
{
    const std::size_t n = cfg.quick ? 20000 : 200000;
    auto ns = [n](double seconds) { return seconds * 1e9 / static_cast<double>(n); };
    const auto tc =
        jsonlw::TraceContext::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");

    const WriterWorkload perf = perf_metrics_workload(0);
    const auto& perf_plain = *static_cast<const jsonlw::PerfMetricsRecord*>(perf.records.get());
    jsonlw::PerfMetricsRecord perf_traced = perf_plain;
    perf_traced.trace_context = tc;
    const WriterWorkload raw_out = raw_output_workload(1024, cfg.dir);
    jsonlw::RawOutputRecord raw_plain, raw_traced;
    if (raw_out.problem.empty()) {
        raw_plain = raw_output_record(*static_cast<const RawOutputShape*>(raw_out.records.get()));
        raw_traced = raw_plain;
        raw_traced.trace_context = tc;
    }

    struct Cell {
        std::string title, off, on;
        std::function<void(jsonlw::JsonLine&)> a, b;
    };
    std::vector<Cell> cells = {
        {"trace context: PerfMetricsWriter, the seed worker record", "no trace context",
         "with a trace context (\"traceparent\" key)",
         [&](jsonlw::JsonLine& l) { jsonlw::serialize_perf_metrics(perf_plain, l); },
         [&](jsonlw::JsonLine& l) { jsonlw::serialize_perf_metrics(perf_traced, l); }},
    };
    if (raw_out.problem.empty()) {
        cells.push_back({"trace context: RawOutputWriter, a ~1 KiB output", "no trace context",
                         "with a trace context (\"traceparent\" key)",
                         [&](jsonlw::JsonLine& l) { jsonlw::serialize_raw_output(raw_plain, l); },
                         [&](jsonlw::JsonLine& l) { jsonlw::serialize_raw_output(raw_traced, l); }});
        cells.push_back({"content capture: RawOutputWriter, a ~1 KiB output", "capture = full",
                         "capture = metadata (3 SHA-256 digests)",
                         [&](jsonlw::JsonLine& l) {
                             jsonlw::serialize_raw_output(raw_plain, l, jsonlw::Capture::full);
                         },
                         [&](jsonlw::JsonLine& l) {
                             jsonlw::serialize_raw_output(raw_plain, l, jsonlw::Capture::metadata);
                         }});
    }

    for (const Cell& c : cells) {
        std::vector<Variant<double>> variants = {
            {c.off, [&] { return ns(encode_seconds(c.a, n)); }},
            {c.on, [&] { return ns(encode_seconds(c.b, n)); }},
        };
        auto results = alternate_ns(cfg, c.title, variants);
        Section sec;
        sec.scenario = "record-features";
        sec.title = fmt::format("{}: serialize() off vs on, {} per run, batches of 64, thread CPU "
                                "time",
                                c.title, human(static_cast<double>(n)));
        sec.params = {{"iterations", static_cast<double>(n)}};
        sec.rows = ns_per_record_rows(variants, results);
        compare_with_first(sec.rows, false);
        sec.rows[1].note = "ratio: on / off";
        report.sections.push_back(std::move(sec));
    }
}

}  // namespace bench
