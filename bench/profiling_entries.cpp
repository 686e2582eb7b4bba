// The hidden entry points docs/benchmarks.md runs under callgrind and perf: one serialize loop
// (--callgrind-serialize) or one jsonlw run (--profile), nothing else timed.
#include "line_pool.hpp"
#include "report.hpp"
#include "runs.hpp"
#include "scenarios.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace bench {

bool callgrind_serialize(const std::string& kind, std::size_t n)
{
    // raw-SIZE: batches of 64 (the engine's batch path); -alone: a batch of one per record;
    // -padded: alone, spare capacity; -trusted: RawJsonValidation::trusted.
    static const std::vector<std::pair<std::string, RawPath>> paths = {
        {"", RawPath::batch}, {"-alone", RawPath::alone}, {"-padded", RawPath::alone_padded},
        {"-trusted", RawPath::trusted}};
    static const std::vector<std::pair<std::string, std::size_t>> sizes = {
        {"raw-250", 250}, {"raw-1k", 1024}, {"raw-4k", 4096}, {"raw-seed", 0}};
    for (const auto& [prefix, size] : sizes)
        for (const auto& [suffix, path] : paths)
            if (kind == prefix + suffix) {
                raw_serialize_seconds(size ? make_pool(size) : seed_worker_pool(), n, path);
                return true;
            }
    if (kind == "memcpy-250") memcpy_line_seconds(make_pool(250), n);
    else if (kind == "jsonline-seed") jsonline_seed_seconds(n);
    else if (kind == "fmt-seed") fmt_seed_seconds(n);
    else if (kind == "perf-seed") writer_serialize_seconds(perf_metrics_workload(0), n);
    else if (kind == "raw-output-1k") {
        const auto dir = make_work_dir();
        const WriterWorkload w = raw_output_workload(1024, dir);
        clean_work_dir(dir);
        writer_serialize_seconds(w, n);
    }
    else return false;
    return true;
}

bool profile_run(const std::string& kind, const Config& cfg)
{
    auto report = [](const std::string& what, double seconds, std::size_t n,
                     const std::string& problem) {
        progress(fmt::format("{}: {} records in {:.3f} s = {} records/s{}", what, n, seconds,
                             human(static_cast<double>(n) / seconds),
                             problem.empty() ? "" : " PROBLEM: " + problem));
    };
    // raw-SIZE[-xN][-view][-trusted]: N producers (default 1), submit(std::string_view)
    // instead of a std::string built per record.
    std::string base = kind;
    const auto strip = [&base](std::string_view suffix) {
        if (!base.ends_with(suffix)) return false;
        base.resize(base.size() - suffix.size());
        return true;
    };
    const bool trusted = strip("-trusted");
    const bool view = strip("-view");
    int producers = 1;
    for (int n = 2; n <= 8; ++n)
        if (strip(fmt::format("-x{}", n))) producers = n;
    if (base == "raw-250" || base == "raw-1k" || base == "raw-4k") {
        const std::size_t size = base == "raw-250" ? 250 : base == "raw-1k" ? 1024 : 4096;
        const LinePool pool = make_pool(size);
        const std::size_t records = std::max<std::size_t>(1000, cfg.records * 250 / size);
        ThroughputSpec spec{&pool, records, producers, cfg.dir, nullptr};
        spec.submit_view = view;
        const ThroughputResult r = jsonlw_raw_throughput(spec, trusted);
        report(fmt::format("RawJsonWriter {}, {} producer(s){}", pool.label, producers,
                           view ? ", submit(string_view)" : ""),
               r.seconds, records, r.problem);
    } else if (kind == "perf-seed") {
        const WriterWorkload wl = perf_metrics_workload(0);
        const std::size_t records = std::max<std::size_t>(1000, cfg.records * 250 / wl.lines.line_bytes);
        ThroughputSpec spec{&wl.lines, records, 1, cfg.dir, nullptr};
        const ThroughputResult r = writer_throughput(wl, spec);
        report("PerfMetricsWriter", r.seconds, records, r.problem);
    } else if (kind == "drain") {
        const LinePool pool = make_pool(250);
        const DrainResult d = jsonlw_raw_drain(pool, 100000, cfg.dir);
        report("drain", d.seconds, 100000, d.problem);
    } else if (kind == "submit" || kind == "submit-loop") {
        const LinePool pool = make_pool(250);
        SubmitCostSpec spec{&pool, 50000, 1.0, 64, cfg.dir};
        spec.from_loop = kind == "submit-loop";
        const SubmitCostResult r = jsonlw_raw_submit_cost(spec);
        progress(fmt::format("submit: {} calls, {} allocations, p50 {:.0f} ns, p99 {:.0f} ns{}",
                             r.calls, r.allocations, quantile(r.ns, 0.5), quantile(r.ns, 0.99),
                             r.problem.empty() ? "" : " PROBLEM: " + r.problem));
    } else {
        return false;
    }
    return true;
}

}  // namespace bench
