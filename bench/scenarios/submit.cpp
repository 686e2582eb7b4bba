// The submit-cost scenario: what one paced caller pays per submit() on the loop thread and on
// another thread (time, allocations), next to fprintf + mutex and spdlog's log call.
#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace bench {

void submit_scenario(const Config& cfg, Report& report)
{
    const LinePool pool = make_pool(250);
    SubmitCostSpec spec{&pool, 50000, cfg.quick ? 0.2 : 4.0, 64, cfg.dir};
    SubmitCostSpec on_loop = spec;
    on_loop.from_loop = true;
    SubmitCostSpec lingering = spec;
    lingering.flush_interval_ms = 5;
    SubmitCostSpec parking = spec;
    parking.idle_poll_us = 0;
    SubmitCostSpec slow_poll = spec;
    slow_poll.idle_poll_us = 5000;
    SubmitCostSpec by_view = spec;
    by_view.form = SubmitCostSpec::Form::view;
    SubmitCostSpec string_in_call = spec;
    string_in_call.form = SubmitCostSpec::Form::string_in_call;
    std::vector<Variant<SubmitCostResult>> variants = {
        {"jsonlw submit() on the loop thread", [&] { return jsonlw_raw_submit_cost(on_loop); }},
        {"jsonlw submit() on another thread", [&] { return jsonlw_raw_submit_cost(spec); }},
        {"  same, flush_interval 5 ms", [&] { return jsonlw_raw_submit_cost(lingering); }},
        {"  same, idle_poll 5 ms", [&] { return jsonlw_raw_submit_cost(slow_poll); }},
        {"  same, idle_poll 0 (wake-up per record)", [&] { return jsonlw_raw_submit_cost(parking); }},
        {"jsonlw submit(std::string_view), another thread",
         [&] { return jsonlw_raw_submit_cost(by_view); }},
        {"jsonlw submit(std::string(line)), another thread",
         [&] { return jsonlw_raw_submit_cost(string_in_call); }},
        {"fprintf + std::mutex", [&] { return fprintf_submit_cost(spec); }},
        {"spdlog async block (log call)",
         [&] { return spdlog_submit_cost(spec, SpdlogMode::async_block); }, have_spdlog(),
         spdlog_missing()},
        {"spdlog sync basic_file_sink (log call)",
         [&] { return spdlog_submit_cost(spec, SpdlogMode::sync); }, have_spdlog(),
         spdlog_missing()},
    };
    auto results = alternate<SubmitCostResult>(
        cfg, "submit 250 B", variants, [](const SubmitCostResult& r) {
            return fmt::format("p50 {:.0f} ns, p99 {:.0f} ns, {:.3f} allocs/call{}",
                               quantile(r.ns, 0.5), quantile(r.ns, 0.99),
                               r.calls ? static_cast<double>(r.allocations) / r.calls : 0.0,
                               r.problem.empty() ? "" : " PROBLEM: " + r.problem);
        });
    const TickClock& clk = TickClock::get();
    Section sec;
    sec.scenario = "submit";
    sec.title = fmt::format("submit cost on the caller's thread: 250 B records at {} calls/s for "
                            "{} s per run, one call in {} timed ({}), record built before the "
                            "call",
                            human(spec.rate_per_s), spec.seconds, spec.sample_every, clk.name());
    sec.params = {{"rate_per_s", spec.rate_per_s},
                  {"seconds", spec.seconds},
                  {"sample_every", static_cast<double>(spec.sample_every)},
                  {"clock_overhead_ns", clk.overhead_ns()}};
    std::optional<double> p50[3], p99[3], allocs[3];
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.unit = "p50 ns";
        row.higher_is_better = false;
        if (!variants[v].available) {
            sec.rows.push_back(skipped_row(row, variants[v]));
            continue;
        }
        std::vector<double> means, p99s, p999s, maxes, pooled;
        std::uint64_t calls = 0, allocations = 0, refused = 0, warm_allocations = 0, faults = 0;
        double rate = 0;
        for (const SubmitCostResult& r : results[v]) {
            row.values.v.push_back(quantile(r.ns, 0.5));
            means.push_back(mean(r.ns));
            p99s.push_back(quantile(r.ns, 0.99));
            p999s.push_back(quantile(r.ns, 0.999));
            maxes.push_back(r.ns.empty() ? 0 : *std::max_element(r.ns.begin(), r.ns.end()));
            pooled.insert(pooled.end(), r.ns.begin(), r.ns.end());
            calls += r.calls > spec.warmup_calls ? r.calls - spec.warmup_calls : 0;
            allocations += r.allocations;
            warm_allocations += r.warmup_allocations;
            refused += r.refused;
            faults += r.minor_faults;
            rate += r.achieved_rate / static_cast<double>(results[v].size());
        }
        const double per_call = calls ? static_cast<double>(allocations) / calls : 0;
        row.extra = {{"mean", quantile(means, 0.5)},
                     {"p99", quantile(p99s, 0.5)},
                     {"p99.9", quantile(p999s, 0.5)},
                     {"max", *std::max_element(maxes.begin(), maxes.end())},
                     {"pooled p99.9", quantile(pooled, 0.999)},
                     {"allocs/call", per_call},
                     {"calls/s", rate}};
        row.extra.emplace_back("warm-up allocs", static_cast<double>(warm_allocations));
        row.extra.emplace_back("faults/1k calls",
                               calls ? 1000.0 * static_cast<double>(faults) / calls : 0.0);
        if (refused) row.extra.emplace_back("refused", static_cast<double>(refused));
        row.problem = first_problem(results[v]);
        if (v < 2 || v == 5) {
            const std::size_t k = v == 5 ? 2 : v;
            p50[k] = row.values.median();
            p99[k] = quantile(p99s, 0.5);
            allocs[k] = per_call;
        }
        sec.rows.push_back(row);
    }
    for (std::size_t v = 7; v < sec.rows.size(); ++v)  // the baselines, against row 0
        if (!sec.rows[v].skipped)
            sec.rows[v].ratio = pair_ratios(sec.rows[0].values, sec.rows[v].values, false);
    sec.notes.push_back(fmt::format(
        "every timed figure includes the clock's own cost: {:.0f} ns (median empty start/stop)",
        clk.overhead_ns()));
    sec.notes.push_back(fmt::format("the first {} calls of each run warm up (not timed, their "
                                    "allocations shown apart); mean/p99/p99.9: median over the "
                                    "runs of each run's figure; max: over all runs; allocs/call: "
                                    "operator new calls on the caller's thread inside the call "
                                    "(the record's own construction excluded)",
                                    spec.warmup_calls));
    sec.notes.push_back("jsonlw: default options (queue 1024, batch 1024, drop_newest, "
                        "flush_interval 0, idle_poll 1 ms). The drain polls the empty queue "
                        "(every idle_poll, backing off to idle_poll_max) and is never woken "
                        "by a producer, so a submit() only pushes; with flush_interval 5 ms "
                        "it lingers, looking every idle_poll whether 256 records (a quarter "
                        "of the queue) wait. With idle_poll 0 the drain parks instead, and "
                        "every call after the queue emptied posts it a wake-up (a post to the "
                        "io_context, from memory the writer owns: no allocation, but the "
                        "scheduler's mutex and maybe a system call)");
    sec.notes.push_back("submit() of a std::string built before the call and "
                        "submit(std::string_view) both copy the line's bytes once into its "
                        "queue cell (RawJsonText, inline up to 456 B: no allocation, nothing "
                        "freed on another thread; the string's own buffer is freed by its "
                        "owner); submit(std::string(line)) times the string's allocation as "
                        "well");
    const char* where[3] = {"on the loop thread", "on another thread",
                            "submit(std::string_view), on another thread"};
    for (int k = 0; k < 3; ++k) {
        report.goals.push_back(
            make_goal(fmt::format("submit() p50, {}", where[k]), "<=", 50, p50[k], "ns"));
        report.goals.push_back(
            make_goal(fmt::format("submit() p99, {}", where[k]), "<=", 500, p99[k], "ns"));
        report.goals.push_back(make_goal(
            fmt::format("heap allocations inside submit() per call, {}", where[k]), "<=", 0,
            allocs[k], "allocs"));
    }
    report.sections.push_back(std::move(sec));
}

}  // namespace bench
