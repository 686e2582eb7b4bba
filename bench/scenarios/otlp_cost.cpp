// The otlp-cost scenario: what LineFormat::otlp costs per record next to JSON Lines — the
// same records serialized in batches of 64 (as serialize_batch() does): as JSON Lines; as OTLP
// log records (the writer's OtlpRecordForm) joined by an OtlpSink; and as JSON Lines that an
// OtlpSink converts (its path for lines it did not get as log records). The sink discards the
// OTLP line. Thread CPU time; the variants alternate (docs/benchmarks.md, "OTLP JSON Lines:
// what it costs per record").
#include "encode_loop.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"
#include "writer_workloads.hpp"

#include <jsonlw/perf_metrics_record.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_record.hpp>
#include <jsonlw/raw_output_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <jsonlw/sinks/otlp_sink.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <functional>

namespace bench {

namespace {

// Takes every line and drops it, counted written: the OTLP step alone, no I/O.
class DiscardSink final : public jsonlw::LineSink {
public:
    jsonlw::AppendResult append(std::string_view, const jsonlw::Lines& lines) noexcept override
    {
        jsonlw::AppendResult r;
        r.attempted = true;
        r.records_written = lines.records;
        r.landed = lines.bytes.size();
        bytes += lines.bytes.size();
        return r;
    }
    std::uint64_t bytes = 0;
};

}  // namespace

void otlp_cost_scenario(const Config& cfg, Report& report)
{
    const std::size_t n = cfg.quick ? 20000 : 200000;
    auto ns = [n](double seconds) { return seconds * 1e9 / static_cast<double>(n); };

    // Each writer's own OTLP options (event name, time fields, attributes), from an inert
    // writer (no directory).
    boost::asio::io_context io;
    const jsonlw::PerfMetricsWriter perf_writer(io.get_executor(), "", "server");
    const jsonlw::RawOutputWriter raw_writer(io.get_executor(), jsonlw::WriterOptions{});

    struct Case {
        std::string label;
        std::function<void(jsonlw::JsonLine&)> one;
        std::size_t line_bytes;
        jsonlw::OtlpOptions otlp;
    };
    std::vector<Case> cases;
    const WriterWorkload perf = perf_metrics_workload(0);
    const auto& perf_rec = *static_cast<const jsonlw::PerfMetricsRecord*>(perf.records.get());
    cases.push_back({"PerfMetricsWriter, the seed worker record",
                     [&perf_rec](jsonlw::JsonLine& l) { jsonlw::serialize_perf_metrics(perf_rec, l); },
                     perf.lines.line_bytes, perf_writer.options().otlp});
    const WriterWorkload raw_out = raw_output_workload(1024, cfg.dir);
    jsonlw::RawOutputRecord raw_rec;
    if (raw_out.problem.empty()) {
        raw_rec = raw_output_record(*static_cast<const RawOutputShape*>(raw_out.records.get()));
        cases.push_back({"RawOutputWriter, a ~1 KiB output",
                         [&raw_rec](jsonlw::JsonLine& l) { jsonlw::serialize_raw_output(raw_rec, l); },
                         raw_out.lines.line_bytes, raw_writer.options().otlp});
    }

    jsonlw::SinkContext ctx;
    ctx.host = "bench-host";
    ctx.pid = ::getpid();
    for (const Case& c : cases) {
        jsonlw::OtlpOptions opts = c.otlp;
        opts.service_name = "bench";
        jsonlw::OtlpSink otlp(std::make_shared<DiscardSink>(), opts);
        (void)otlp.start(ctx);
        jsonlw::detail::OtlpRecordForm form(opts);
        form.start(ctx.host, ctx.pid);
        const auto to_sink = [&](const jsonlw::Lines& l) { otlp.append("", l); };
        std::vector<Variant<double>> variants = {
            {"JSON Lines: serialize()", [&] { return ns(encode_seconds(c.one, n)); }},
            {"OTLP: serialize() as log records + OtlpSink",
             [&] { return ns(encode_seconds(c.one, n, to_sink, &form)); }},
            {"OTLP, converted: serialize() + OtlpSink scan",
             [&] { return ns(encode_seconds(c.one, n, to_sink)); }},
        };
        auto results = alternate_ns(cfg, "otlp " + c.label, variants);
        Section sec;
        sec.scenario = "otlp-cost";
        sec.title = fmt::format("OTLP JSON Lines vs JSON Lines: {} ({} B line), {} per run, "
                                "batches of 64, thread CPU time",
                                c.label, c.line_bytes, human(static_cast<double>(n)));
        sec.params = {{"record_bytes", static_cast<double>(c.line_bytes)},
                      {"iterations", static_cast<double>(n)}};
        sec.rows = ns_per_record_rows(variants, results);
        // OTLP's cost as a multiple of JSON Lines', pair by pair.
        const Series cost = pair_ratios(sec.rows[0].values, sec.rows[1].values, false);
        sec.rows[1].ratio = cost;
        sec.rows[1].note = "ratio: OTLP cost / JSON Lines cost (goal <= 2.0)";
        sec.rows[2].ratio = pair_ratios(sec.rows[0].values, sec.rows[2].values, false);
        sec.rows[2].note = "ratio: converted OTLP cost / JSON Lines cost";
        sec.notes.push_back("OTLP = what a writer with format = otlp does: serialize() writes each "
                            "record as a log record with a kvlistValue body (OtlpRecordForm) into "
                            "the batch's one LogsData line, which the OtlpSink passes on; the sink "
                            "discards it (no I/O). Converted = JSON Lines rescanned by the OtlpSink "
                            "(its path for lines under an envelope, or given to an OtlpSink by hand)");
        report.goals.push_back(make_goal("OTLP encoding cost / JSON Lines encoding cost, " + c.label,
                                         "<=", 2.0, cost.median(), "x", ""));
        report.sections.push_back(std::move(sec));
    }
}

}  // namespace bench
