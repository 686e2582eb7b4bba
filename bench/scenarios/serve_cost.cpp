// serve-cost: what the three writers cost `jsonlw serve`, seen by its clients. The same
// server runs with --writers off and on (all three writers, per-token logprobs with top-5
// alternatives, whole first-token rows of every 10th request), a fresh one per run, the
// order alternating (off on, on off, ...). Cells: (a) Poisson arrivals at about half of the
// capacity measured first: TTFT and end-to-end p50/p99 as the client sees them; (b)
// saturation, closed loop: requests/s and tokens/s completed; (c) CPU per request in both,
// the loop thread's and every thread's. With --h2load, (b) again with h2load as the client, a process of its own
// (docs/benchmarks.md, "Serving"; the profile: docs/benchmarks-log.md).
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace bench {
#ifdef JSONLW_BENCH_SERVE
namespace {

namespace fs = std::filesystem;

// The output on tmpfs: what is measured is the loop's work, not a disk's.
fs::path run_dir(const Config& cfg)
{
    std::string tmpl = "/dev/shm/jsonlw-bench-serve-XXXXXX";
    if (fs::is_directory("/dev/shm") && ::mkdtemp(tmpl.data())) return tmpl;
    const fs::path d = cfg.dir / "serve-cost";
    fs::create_directories(d);
    return d;
}

struct Pairs {
    std::vector<ServeRunResult> off, on;
};

// Warm-up rounds, then cfg.pairs measured ones; writers off first in even rounds, on first
// in odd ones, so neither always runs second on a noisy machine.
Pairs alternate_writers(const Config& cfg, const std::string& cell,
                        const std::function<ServeRunResult(bool writers)>& run,
                        const std::function<std::string(const ServeRunResult&)>& brief)
{
    Pairs p;
    for (int round = 0; round < cfg.warmups + cfg.pairs; ++round) {
        const bool warm = round < cfg.warmups;
        for (int k = 0; k < 2; ++k) {
            const bool writers = (k == 1) == (round % 2 == 0);
            ServeRunResult r = run(writers);
            progress(fmt::format("serve-cost {} {} writers {}: {}{}", cell,
                                 warm ? std::string("warm-up") :
                                        fmt::format("pair {}/{}", round - cfg.warmups + 1, cfg.pairs),
                                 writers ? "on " : "off", brief(r),
                                 r.problem.empty() ? "" : "; " + r.problem));
            if (!warm) (writers ? p.on : p.off).push_back(std::move(r));
        }
    }
    return p;
}

// The off and on rows of one figure; the on row carries on / off, pair by pair.
std::vector<Row> off_on_rows(const std::string& what, const std::string& unit, bool higher,
                             const Pairs& p, const std::function<double(const ServeRunResult&)>& f)
{
    std::vector<Row> rows(2);
    for (int k = 0; k < 2; ++k) {
        const auto& runs = k ? p.on : p.off;
        Row& row = rows[std::size_t(k)];
        row.variant = fmt::format("{}, writers {}", what, k ? "on" : "off");
        row.unit = unit;
        row.higher_is_better = higher;
        for (const ServeRunResult& r : runs) row.values.v.push_back(f(r));
        row.problem = first_problem(runs);
    }
    rows[1].ratio = pair_ratios(rows[0].values, rows[1].values, false);  // on / off
    rows[1].ratio_of = "off";
    return rows;
}

double per_s(std::uint64_t n, double seconds) { return seconds > 0 ? double(n) / seconds : 0; }

// Every thread of the process over the client's run, the client's included.
double process_cpu_s(const ServeRunResult& r)
{
    return r.client_cpu_s + r.loop_thread_cpu_s + r.engine_cpu_s + r.writers_cpu_s + r.other_cpu_s;
}

}  // namespace

// Built with the tools only (main.cpp reports it skipped otherwise).
void serve_cost_scenario(const Config& cfg, Report& report)
{
    const ServeModel model;
    const double run_s = cfg.quick ? 1 : 6;  // seconds each run lasts, about
    const std::size_t sat_connections = model.concurrency;  // the engine's batch kept full
    const fs::path dir = run_dir(cfg);
    auto spec = [&](bool writers, std::uint64_t requests, double rate) {
        ServeRunSpec s;
        s.writers = writers;
        s.model = model;
        s.requests = std::max<std::uint64_t>(requests, 100);
        s.rate = rate;
        s.connections = rate > 0 ? 1024 : sat_connections;
        s.dir = dir;
        return s;
    };

    // Capacity: writers off, closed loop, as in cell (b); a second run sized by the first.
    double capacity = 0;
    if (cfg.serve_rate <= 0) {
        progress("serve-cost: measuring capacity (writers off, closed loop)");
        ServeRunResult c = serve_cost_run(spec(false, 2000, 0));
        c = serve_cost_run(spec(false, std::uint64_t(per_s(c.completed, c.seconds) * run_s / 2), 0));
        capacity = per_s(c.completed, c.seconds);
        progress(fmt::format("serve-cost: capacity {:.0f} requests/s{}", capacity,
                             c.problem.empty() ? "" : "; " + c.problem));
    }
    const double rate = cfg.serve_rate > 0 ? cfg.serve_rate : capacity / 2;
    if (rate <= 0) {
        Section sec;
        sec.scenario = "serve-cost";
        sec.title = "serve-cost: calibration failed";
        Row row;
        row.variant = "calibration";
        row.problem = "no request completed";
        sec.rows.push_back(row);
        report.sections.push_back(std::move(sec));
        fs::remove_all(dir);
        return;
    }
    const std::uint64_t fixed_n = std::uint64_t(rate * run_s);
    const std::uint64_t sat_n = std::uint64_t((capacity > 0 ? capacity : 2 * rate) * run_s);
    const std::string model_text = fmt::format(
        "model: --step-us {} --concurrency {} --tokens {}-{} --vocab {} --backend cpu, top-{} "
        "logprobs asked for and recorded; every request streamed (SSE)",
        model.step_us, model.concurrency, model.min_tokens, model.max_tokens, model.vocab,
        model.top_k);

    const Pairs fixed = alternate_writers(
        cfg, fmt::format("fixed rate {:.0f}/s", rate),
        [&](bool w) { return serve_cost_run(spec(w, fixed_n, rate)); },
        [](const ServeRunResult& r) {
            return fmt::format("TTFT p50 {:.2f} p99 {:.2f} ms, e2e p50 {:.1f} p99 {:.1f} ms, loop {:.0f} us/req",
                               r.ttft_p50_ms, r.ttft_p99_ms, r.e2e_p50_ms, r.e2e_p99_ms,
                               r.loop_us_per_request);
        });
    const Pairs sat = alternate_writers(
        cfg, fmt::format("saturation {} conns", sat_connections),
        [&](bool w) { return serve_cost_run(spec(w, sat_n, 0)); },
        [](const ServeRunResult& r) {
            return fmt::format("{:.0f} req/s, {:.0f} tokens/s, loop {:.0f} us/req",
                               per_s(r.completed, r.seconds), per_s(r.tokens, r.seconds),
                               r.loop_us_per_request);
        });

    const std::string where = fmt::format(
        "a fresh server per run, output on {}, removed after; the client runs in the same "
        "process, on its own thread, on the same {} cores as the server",
        dir.parent_path().string(), std::thread::hardware_concurrency());
    const std::string order = fmt::format(
        "writers on = all three writers (raw output with per-token logprobs and top-{} "
        "alternatives, first-token rows of every {}th request; request trace; perf metrics); off "
        "= none, and no first-token capture. {} warm-up pair(s), then {} pairs, order "
        "alternating (off on, on off, ...); ratio = writers on / off, pair by pair",
        model.top_k, model.first_gen_every, cfg.warmups, cfg.pairs);

    // (a) latency at a fixed rate.
    Section a;
    a.scenario = "serve-cost";
    a.title = fmt::format("serve-cost (a): {} streamed requests per run, Poisson at {:.0f}/s ({}), "
                          "client-side latency from the request's first byte; lower is better",
                          fixed_n, rate,
                          cfg.serve_rate > 0 ? "--rate" : fmt::format("half the {:.0f}/s capacity", capacity));
    a.params = {{"rate", rate}, {"capacity", capacity}, {"requests", double(fixed_n)}};
    const auto add = [](Section& s, std::vector<Row> rows) {
        for (Row& r : rows) s.rows.push_back(std::move(r));
    };
    add(a, off_on_rows("TTFT p50", "ms", false, fixed, [](auto& r) { return r.ttft_p50_ms; }));
    add(a, off_on_rows("TTFT p99", "ms", false, fixed, [](auto& r) { return r.ttft_p99_ms; }));
    add(a, off_on_rows("end-to-end p50", "ms", false, fixed, [](auto& r) { return r.e2e_p50_ms; }));
    add(a, off_on_rows("end-to-end p99", "ms", false, fixed, [](auto& r) { return r.e2e_p99_ms; }));
    a.notes = {model_text, order, where};
    const Series ttft99 = a.rows[3].ratio.value_or(Series{});
    report.sections.push_back(std::move(a));

    // (b) throughput at saturation.
    Section b;
    b.scenario = "serve-cost";
    b.title = fmt::format("serve-cost (b): saturation, closed loop, {} connections, {} streamed "
                          "requests per run; completed per second, higher is better",
                          sat_connections, sat_n);
    b.params = {{"connections", double(sat_connections)}, {"requests", double(sat_n)}};
    add(b, off_on_rows("requests/s", "req/s", true, sat, [](auto& r) { return per_s(r.completed, r.seconds); }));
    add(b, off_on_rows("tokens/s", "tokens/s", true, sat, [](auto& r) { return per_s(r.tokens, r.seconds); }));
    // What the cores allow whatever else runs on them: nproc / CPU seconds per request.
    const double cores = std::thread::hardware_concurrency();
    add(b, off_on_rows("CPU-bound ceiling", "req/s", true, sat, [cores](auto& r) {
            const double cpu = process_cpu_s(r);
            return cpu > 0 ? cores * double(r.server_requests) / cpu : 0;
        }));
    b.notes = {"tokens/s = tokens the client received / the client's seconds",
               fmt::format("CPU-bound ceiling = {:.0f} cores / the process's CPU seconds per request "
                           "(all threads, cell (c)): the rate if the run were alone on the machine; it "
                           "does not move with other processes' load as requests/s does",
                           cores)};
    const Series rps = b.rows[1].ratio.value_or(Series{});
    const Series tps = b.rows[3].ratio.value_or(Series{});
    report.sections.push_back(std::move(b));

    // (c) CPU per request: the loop thread's, and every thread's by role.
    Section c;
    c.scenario = "serve-cost";
    c.title = "serve-cost (c): CPU per request: the server's loop thread, and every thread of the "
              "process; lower is better";
    const auto loop_us = [](auto& r) { return r.loop_us_per_request; };
    const auto busy = [](const Pairs& p, bool on) {
        Series s;
        for (const ServeRunResult& r : on ? p.on : p.off)
            s.v.push_back(r.seconds > 0 ? r.loop_cpu_seconds / r.seconds : 0);
        return s.median();
    };
    // The process's CPU per request, by thread role, medians over the runs.
    const auto per_req = [](const Pairs& p, bool on, double ServeRunResult::*f) {
        Series s;
        for (const ServeRunResult& r : on ? p.on : p.off)
            s.v.push_back(r.server_requests ? r.*f * 1e6 / double(r.server_requests) : 0);
        return s.median();
    };
    const auto all_threads = [](const ServeRunResult& r) {
        return r.server_requests ? process_cpu_s(r) * 1e6 / double(r.server_requests) : 0;
    };
    const std::vector<std::pair<std::string, const Pairs*>> cells = {{"fixed rate", &fixed},
                                                                      {"saturation", &sat}};
    for (const auto& [name, p] : cells) {
        std::vector<Row> rows = off_on_rows("loop, " + name, "us/req", false, *p, loop_us);
        rows[0].extra = {{"loop busy", busy(*p, false)}};
        rows[1].extra = {{"loop busy", busy(*p, true)},
                         {"writers' cost us/req", rows[1].values.median() - rows[0].values.median()}};
        add(c, std::move(rows));
    }
    for (const auto& [name, p] : cells) {
        std::vector<Row> rows = off_on_rows("all threads, " + name, "us/req", false, *p, all_threads);
        for (int k = 0; k < 2; ++k)
            rows[std::size_t(k)].extra = {
                {"client", per_req(*p, k, &ServeRunResult::client_cpu_s)},
                {"loop", per_req(*p, k, &ServeRunResult::loop_thread_cpu_s)},
                {"engine+stage", per_req(*p, k, &ServeRunResult::engine_cpu_s)},
                {"writer threads", per_req(*p, k, &ServeRunResult::writers_cpu_s)},
                {"other", per_req(*p, k, &ServeRunResult::other_cpu_s)},
                {"run-queue wait", per_req(*p, k, &ServeRunResult::runqueue_s)}};
        add(c, std::move(rows));
    }
    c.notes = {"loop = getrusage of the loop thread (ServeOutcome::loop_cpu_seconds); loop busy = "
               "its CPU seconds / the run's seconds (1.0: the loop is the bottleneck); the "
               "writers' cost = on median - off median",
               "all threads = /proc/self/task schedstat over the client's run, per request: the "
               "client (same process), the loop, the engine with the snapshot stage's row "
               "workers (the GPU's work, here on the CPU), the writers' I/O threads; run-queue "
               "wait = time the threads were runnable but had no CPU"};
    report.sections.push_back(std::move(c));

    report.goals.push_back(make_goal("serve-cost fixed rate: TTFT p99, writers on / off", "<=", 1.02,
                                     ttft99.empty() ? std::nullopt : std::optional(ttft99.median()), "x"));
    report.goals.push_back(make_goal("serve-cost saturation: requests/s, writers on / off", ">=", 0.98,
                                     rps.empty() ? std::nullopt : std::optional(rps.median()), "x"));
    report.goals.push_back(make_goal("serve-cost saturation: tokens/s, writers on / off", ">=", 0.98,
                                     tps.empty() ? std::nullopt : std::optional(tps.median()), "x"));

    if (cfg.h2load) {
        Section h;
        h.scenario = "serve-cost";
        h.title = fmt::format("serve-cost (b'): saturation by h2load --h1 (a process of its own), {} "
                              "connections, {} identical streamed completions per run; higher is better",
                              sat_connections, sat_n);
        if (!have_h2load()) {
            h.rows.push_back(skipped_row("h2load", "h2load not found"));
        } else {
            const Pairs hp = alternate_writers(
                cfg, "h2load",
                [&](bool w) { return serve_cost_h2load_run(spec(w, sat_n, 0)); },
                [](const ServeRunResult& r) {
                    return fmt::format("{:.0f} req/s, loop {:.0f} us/req", per_s(r.completed, r.seconds),
                                       r.loop_us_per_request);
                });
            add(h, off_on_rows("requests/s", "req/s", true, hp, [](auto& r) { return per_s(r.completed, r.seconds); }));
            add(h, off_on_rows("loop CPU", "us/req", false, hp, loop_us));
            const Series hr = h.rows[1].ratio.value_or(Series{});
            report.goals.push_back(make_goal("serve-cost saturation (h2load): requests/s, on / off", ">=", 0.98,
                                             hr.empty() ? std::nullopt : std::optional(hr.median()), "x"));
        }
        report.sections.push_back(std::move(h));
    }
    fs::remove_all(dir);
}
#endif

}  // namespace bench
