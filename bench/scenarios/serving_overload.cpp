// serving-overload: the main job (`jsonlw demo`, the real binary) past its load. First the
// rate the machine sustains is measured: arrivals unbounded, the snapshot stage waiting for a
// slot instead of dropping, requests/s completed. Then the default demo (the stage drops
// when its ring is full) runs at 1x, 2x and 4x that arrival rate, the multipliers alternating
// within each round; per run: per-writer records expected / written / dropped, unaccounted,
// stage steps dropped, how long the engine stalled for a slot (the demo's --stage-wait-ms 5),
// wall time. A regression of issue 16 (the collapse) shows as drops,
// unaccounted records or a spread of wall times.
#include "scenarios.hpp"

#include <fmt/format.h>

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace bench {
namespace {

namespace fs = std::filesystem;

struct DemoRun {
    double seconds = 0;
    std::uint64_t requests = 0;
    std::uint64_t expected = 0, written = 0, dropped = 0, unaccounted = 0;  // all writers
    std::array<std::uint64_t, 3> writer_dropped{};  // raw output, request trace, perf metrics
    std::uint64_t steps = 0, dropped_steps = 0, slot_wait_us = 0;
    std::string problem;
    double steps_dropped_pct() const { return steps ? 100.0 * double(dropped_steps) / double(steps) : 0; }
};

#ifdef JSONLW_BENCH_REPORT
DemoRun run_demo(const fs::path& dir, std::uint64_t requests, double rate, const std::string& extra)
{
    DemoRun r;
    const fs::path summary = dir / "summary.json";
    std::error_code ec;
    fs::remove(summary, ec);
    const std::string cmd = fmt::format(
        "'{}' demo --in-process --requests {} --rate {:.0f} --step-us 0 --backend cpu --out '{}' "
        "--summary-json '{}' {} >/dev/null 2>&1",
        JSONLW_EXE, requests, rate, (dir / "out").string(), summary.string(), extra);
    const int status = std::system(cmd.c_str());
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc != 0 && rc != 3) r.problem = fmt::format("jsonlw demo exited {}", rc);  // 3: drops, counted
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.load(summary.string()).get(doc) != simdjson::SUCCESS) {
        if (r.problem.empty()) r.problem = "no --summary-json from jsonlw demo";
        return r;
    }
    bool complete = true;  // every field there: a summary from another version is a problem
    const auto read = [&complete](simdjson::simdjson_result<simdjson::dom::element> field, auto& out) {
        if (field.get(out) != simdjson::SUCCESS) complete = false;
    };
    read(doc["seconds"], r.seconds);
    read(doc["requests"], r.requests);
    simdjson::dom::array writers;
    read(doc["writers"], writers);
    std::size_t i = 0;
    for (simdjson::dom::element w : writers) {
        std::uint64_t e = 0, wr = 0, d = 0;
        std::int64_t un = 0;
        read(w["expected"], e);
        read(w["written"], wr);
        read(w["dropped"], d);
        read(w["unaccounted"], un);
        r.expected += e;
        r.written += wr;
        r.dropped += d;
        r.unaccounted += std::uint64_t(std::llabs(un));
        if (i < r.writer_dropped.size()) r.writer_dropped[i++] = d;
    }
    read(doc["stage"]["steps"], r.steps);
    read(doc["stage"]["dropped_steps"], r.dropped_steps);
    read(doc["stage"]["slot_wait_us"], r.slot_wait_us);
    if (!complete && r.problem.empty()) r.problem = "jsonlw demo's --summary-json lacks a field";
    if (r.unaccounted && r.problem.empty())
        r.problem = fmt::format("{} records unaccounted for", r.unaccounted);
    return r;
}
#endif

}  // namespace

// Built with the tools only (main.cpp reports it skipped otherwise).
#ifdef JSONLW_BENCH_REPORT
void serving_overload_scenario(const Config& cfg, Report& report)
{
    Section sec;
    sec.scenario = "serving-overload";
    const std::uint64_t requests = cfg.quick ? 2000 : 20000;
    const fs::path dir = cfg.dir / "serving-overload";
    fs::create_directories(dir);

    // The sustained rate: arrivals as fast as they come, the stage stalling the engine
    // (--stage-wait-ms) rather than dropping, so what is measured is completions without loss.
    progress("serving-overload: measuring the rate this machine sustains without drops");
    const DemoRun cal = run_demo(dir, requests, 1e7, "--stage-wait-ms 2000");
    if (!cal.problem.empty() || cal.seconds <= 0 || cal.dropped != 0) {
        Row row;
        row.variant = "calibration";
        row.problem = cal.problem.empty() ? "the calibration run dropped records" : cal.problem;
        sec.title = "serving-overload: calibration failed";
        sec.rows.push_back(row);
        report.sections.push_back(std::move(sec));
        fs::remove_all(dir);
        return;
    }
    const double sustained = double(cal.requests) / cal.seconds;
    const std::array<double, 3> mult = {1, 2, 4};
    std::array<std::vector<DemoRun>, 3> runs;
    for (int round = 0; round < cfg.warmups + cfg.pairs; ++round) {
        const bool warm = round < cfg.warmups;
        for (std::size_t m = 0; m < mult.size(); ++m) {
            // Rotate the order each round: no multiplier always runs first on a noisy machine.
            const std::size_t k = (m + std::size_t(round)) % mult.size();
            DemoRun r = run_demo(dir, requests, sustained * mult[k], "");
            progress(fmt::format("serving-overload {}{}x: {:.2f} s, {} of {} records dropped, {:.2f} % "
                                 "steps dropped{}",
                                 warm ? "(warm-up) " : "", mult[k], r.seconds, r.dropped, r.expected,
                                 r.steps_dropped_pct(), r.problem.empty() ? "" : ", " + r.problem));
            if (!warm) runs[k].push_back(std::move(r));
        }
    }
    sec.title = fmt::format(
        "serving-overload: jsonlw demo, {} requests, --step-us 0, CPU stage, arrivals at 1x/2x/4x of "
        "the {:.0f} requests/s this machine sustains without drops (measured first, with the stage "
        "waiting for slots); wall seconds, lower is better",
        requests, sustained);
    sec.params = {{"requests", double(requests)}, {"sustained_requests_per_s", sustained}};
    double worst_drop = 0, worst_steps = 0, worst_unaccounted = 0, spread4 = 0;
    for (std::size_t k = 0; k < mult.size(); ++k) {
        Row row;
        row.variant = fmt::format("{:.0f}x ({:.0f} req/s)", mult[k], sustained * mult[k]);
        row.unit = "s";
        row.higher_is_better = false;
        std::uint64_t dropped = 0, unaccounted = 0, expected = 0, written = 0;
        std::array<std::uint64_t, 3> per_writer{};
        double steps_pct = 0, stalled_ms = 0;
        for (const DemoRun& r : runs[k]) {
            stalled_ms = std::max(stalled_ms, double(r.slot_wait_us) / 1e3);
            row.values.v.push_back(r.seconds);
            dropped = std::max(dropped, r.dropped);
            unaccounted = std::max(unaccounted, r.unaccounted);
            expected = r.expected;
            written = std::min(written ? written : r.written, r.written);
            for (std::size_t w = 0; w < 3; ++w) per_writer[w] = std::max(per_writer[w], r.writer_dropped[w]);
            steps_pct = std::max(steps_pct, r.steps_dropped_pct());
            if (row.problem.empty()) row.problem = r.problem;
        }
        row.extra = {{"records expected", double(expected)},
                     {"written (min)", double(written)},
                     {"dropped (max): raw output", double(per_writer[0])},
                     {"request trace", double(per_writer[1])},
                     {"perf metrics", double(per_writer[2])},
                     {"unaccounted (max)", double(unaccounted)},
                     {"steps dropped % (max)", steps_pct},
                     {"engine stalled for a slot, ms (max)", stalled_ms}};
        worst_drop = std::max(worst_drop, double(dropped));
        worst_steps = std::max(worst_steps, steps_pct);
        worst_unaccounted = std::max(worst_unaccounted, double(unaccounted));
        if (k == 2 && row.values.min() > 0) spread4 = row.values.max() / row.values.min();
        sec.rows.push_back(std::move(row));
    }
    sec.notes.push_back("each run is the real jsonlw binary; its --summary-json gives the per-writer "
                        "accounting (expected = written + dropped + unknown)");
    report.goals.push_back(make_goal("serving-overload 1x-4x: records dropped by any writer (max over runs)",
                                "<=", 0, worst_drop, "records"));
    report.goals.push_back(make_goal("serving-overload 1x-4x: decode steps dropped by the stage (max)", "<=", 1,
                                worst_steps, "%"));
    report.goals.push_back(make_goal("serving-overload: records unaccounted for (max)", "<=", 0,
                                worst_unaccounted, "records"));
    report.goals.push_back(make_goal("serving-overload 4x: slowest / fastest wall time", "<=", 1.25,
                                spread4 > 0 ? std::optional<double>(spread4) : std::nullopt, "x"));
    report.sections.push_back(std::move(sec));
    fs::remove_all(dir);
}
#endif

}  // namespace bench
