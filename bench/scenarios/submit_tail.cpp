// The submit-tail scenario: what one paced caller pays per submit() at the tail, every call
// timed, across queue capacities (1,024, 2^16, 2^21 records: the ring's memory from 0.5 MiB
// to 1 GiB), two rates and both threads, next to a Quill-style frontend; with the caller's
// page faults and each queue's start-up cost (docs/benchmarks.md, "Submit cost").
#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <utility>

namespace bench {

namespace {

struct Cell {
    std::string name;
    SubmitCostSpec spec;
    bool quill_style = false;
    bool ring_floor = false;  // jsonlw's queue alone: no writer around the push
    bool appends = false;     // ring_floor: its consumer also writes what it pops to a file
};

std::string capacity_label(std::size_t c)
{
    if (c >= (1u << 16) && std::has_single_bit(c)) return fmt::format("2^{}", std::countr_zero(c));
    return fmt::format("{}", c);
}

}  // namespace

void submit_tail_scenario(const Config& cfg, Report& report)
{
    const LinePool pool = make_pool(250);
    SubmitCostSpec base{&pool, 50000, cfg.quick ? 0.2 : 2.0, 1, cfg.dir};
    base.form = SubmitCostSpec::Form::view;
    // As a high-rate user configures it: batches of 4,096 (at most a quarter of the queue),
    // Overflow::block (the caller waits rather than lose a record).
    base.block = true;
    std::vector<Cell> cells;
    for (double rate : {50000.0, 500000.0}) {
        // At 50,000/s also with idle_poll_max 1 ms: a third to a half of the drain's looks
        // cost the caller's next call a miss, and at a steady rate the drain looks once
        // per half batch, at least every idle_poll_max (docs/queue.md, "The tail"); the pair
        // shows, in the same run, what looking every idle_poll instead would cost.
        for (unsigned max_us : {0u, base.idle_poll_us}) {
            if (max_us != 0 && rate > 50000) continue;
            for (std::size_t cap : {std::size_t{1024}, std::size_t{1} << 16, std::size_t{1} << 21}) {
                for (bool loop : {false, true}) {
                    Cell c{fmt::format("jsonlw {}/s, queue {}, {}{}", human(rate),
                                       capacity_label(cap), loop ? "loop thread" : "other thread",
                                       max_us == 0 ? "" : ", idle_poll_max 1 ms"),
                           base};
                    c.spec.rate_per_s = rate;
                    c.spec.queue_capacity = cap;
                    c.spec.batch_records =
                        std::min<std::size_t>(4096, std::max<std::size_t>(cap / 4, 64));
                    c.spec.from_loop = loop;
                    c.spec.idle_poll_max_us = max_us;
                    // At 50,000/s also each call beside a bare push into a ring of the same
                    // capacity, interleaved: the writer's own cost over the floor, measured
                    // in the same moments (a spell slows both alike).
                    if (rate <= 50000 && max_us == 0) {
                        Cell b = c;
                        b.name += ", beside a bare push";
                        b.spec.beside_floor = true;
                        cells.push_back(std::move(c));
                        cells.push_back(std::move(b));
                        continue;
                    }
                    cells.push_back(std::move(c));
                }
            }
        }
        // The ring alone at the two capacities whose memory differs in kind (0.5 MiB stays
        // in the caches, 32 MiB does not), at 1,024 with its consumer writing too, and at
        // 2^16 called from handlers on an Asio loop thread, as the loop-thread cells are.
        struct Floor {
            std::size_t cap;
            bool appends, loop;
        };
        for (const Floor fl : {Floor{1024, false, false}, Floor{1024, true, false},
                               Floor{std::size_t{1} << 16, false, false},
                               Floor{std::size_t{1} << 16, false, true}}) {
            Cell f{fmt::format("floor: jsonlw's ring alone, queue {} {}/s, {}{}",
                               capacity_label(fl.cap), human(rate),
                               fl.loop ? "Asio loop thread" : "other thread",
                               fl.appends ? ", its consumer appending" : ""),
                   base};
            f.spec.rate_per_s = rate;
            f.spec.queue_capacity = fl.cap;
            f.spec.from_loop = fl.loop;
            f.ring_floor = true;
            f.appends = fl.appends;
            cells.push_back(std::move(f));
        }
        Cell q{fmt::format("Quill-style SPSC ring 128 KiB {}/s, other thread", human(rate)), base,
               true};
        q.spec.rate_per_s = rate;
        cells.push_back(std::move(q));
    }
    // --cell TEXT: only the cells whose name contains it.
    const auto chosen = [&cfg](const std::string& name) {
        return cfg.cell_filter.empty() || name.find(cfg.cell_filter) != std::string::npos;
    };
    std::erase_if(cells, [&](const Cell& c) { return !chosen(c.name); });
    std::vector<Variant<SubmitCostResult>> variants;
    for (const Cell& c : cells)
        variants.push_back({c.name, [&c] {
                                return c.quill_style  ? quill_style_submit_cost(c.spec)
                                       : c.ring_floor ? ring_floor_submit_cost(c.spec, c.appends)
                                                      : jsonlw_raw_submit_cost(c.spec);
                            }});
    auto results = alternate<SubmitCostResult>(
        cfg, "submit tail", variants, [](const SubmitCostResult& r) {
            return fmt::format("p99 {:.0f} ns, p99.9 {:.0f} ns, {} faults{}",
                               quantile(r.ns, 0.99), quantile(r.ns, 0.999), r.minor_faults,
                               r.problem.empty() ? "" : " PROBLEM: " + r.problem);
        });

    const TickClock& clk = TickClock::get();
    Section sec;
    sec.scenario = "submit-tail";
    sec.title = fmt::format("submit tail on the caller's thread: 250 B records, every call timed "
                            "({}), {} s per run; submit(std::string_view)",
                            clk.name(), base.seconds);
    sec.params = {{"seconds", base.seconds}, {"clock_overhead_ns", clk.overhead_ns()}};
    for (std::size_t v = 0; v < cells.size(); ++v) {
        Row row;
        row.variant = cells[v].name;
        row.unit = "p99.9 ns";
        row.higher_is_better = false;
        std::vector<double> p50s, p99s, maxes, starts, rss;
        std::uint64_t faults = 0, calls = 0, refused = 0;
        double rate = 0;
        for (const SubmitCostResult& r : results[v]) {
            row.values.v.push_back(quantile(r.ns, 0.999));
            p50s.push_back(quantile(r.ns, 0.5));
            p99s.push_back(quantile(r.ns, 0.99));
            maxes.push_back(r.ns.empty() ? 0 : *std::max_element(r.ns.begin(), r.ns.end()));
            starts.push_back(r.start_ms);
            rss.push_back(r.start_rss_mib);
            faults += r.minor_faults;
            calls += r.calls;
            refused += r.refused;
            rate += r.achieved_rate / static_cast<double>(results[v].size());
        }
        const double p99 = quantile(p99s, 0.5);
        row.extra = {{"p50", quantile(p50s, 0.5)},
                     {"p99", p99},
                     {"max", *std::max_element(maxes.begin(), maxes.end())},
                     {"faults/1k calls", calls ? 1000.0 * static_cast<double>(faults) / calls : 0},
                     {"calls/s", rate}};
        if (cells[v].spec.beside_floor) {
            // Run by run: the bare pushes' percentiles, and the calls' over them.
            std::vector<double> f99, f999, over99, over999;
            for (const SubmitCostResult& r : results[v]) {
                f99.push_back(quantile(r.floor_ns, 0.99));
                f999.push_back(quantile(r.floor_ns, 0.999));
                over99.push_back(quantile(r.ns, 0.99) - f99.back());
                over999.push_back(quantile(r.ns, 0.999) - f999.back());
            }
            row.extra.insert(row.extra.end(), {{"bare push p99", quantile(f99, 0.5)},
                                               {"bare push p99.9", quantile(f999, 0.5)},
                                               {"p99 over it", quantile(over99, 0.5)},
                                               {"p99.9 over it", quantile(over999, 0.5)}});
        }
        const bool writer = !cells[v].quill_style && !cells[v].ring_floor;
        if (writer)
            row.extra.insert(row.extra.end(), {{"start ms", quantile(starts, 0.5)},
                                               {"start MiB", quantile(rss, 0.5)}});
        if (refused) row.extra.emplace_back("refused", static_cast<double>(refused));
        row.problem = first_problem(results[v]);
        // The goals are the default options' (the idle_poll_max 1 ms rows are a comparison).
        if (writer && cells[v].spec.idle_poll_max_us == 0 && !cells[v].spec.beside_floor) {
            report.goals.push_back(make_goal(fmt::format("submit() p99.9, {}", cells[v].name),
                                             "<=", 1000, row.values.median(), "ns"));
            report.goals.push_back(make_goal(fmt::format("submit() p99, {}", cells[v].name),
                                             "<=", 300, p99, "ns"));
            report.goals.push_back(make_goal(
                fmt::format("page faults in submit()'s thread per 1,000 calls, {}", cells[v].name),
                "<=", 0, calls ? 1000.0 * static_cast<double>(faults) / calls : 0.0, "faults"));
        }
        sec.rows.push_back(row);
    }
    // Each cell against the Quill-style ring at its rate.
    for (std::size_t v = 0; v < cells.size(); ++v) {
        for (std::size_t q = 0; q < cells.size(); ++q) {
            if (v != q && cells[q].quill_style && !cells[v].quill_style &&
                cells[q].spec.rate_per_s == cells[v].spec.rate_per_s && !sec.rows[q].skipped &&
                !sec.rows[v].skipped)
                sec.rows[v].ratio = pair_ratios(sec.rows[v].values, sec.rows[q].values, false);
        }
    }
    sec.notes.push_back(fmt::format(
        "every figure includes the clock's own cost: {:.0f} ns (median empty start/stop); "
        "value: median over the runs of each run's p99.9; p50/p99 likewise; max over all runs",
        clk.overhead_ns()));
    sec.notes.push_back("jsonlw: RawJsonWriter, Overflow::block, batch_records min(4096, "
                        "queue/4), flush_interval 0, idle_poll 1 ms and idle_poll_max 8 ms (the "
                        "defaults: at a steady rate a look per half batch, at least every 8 ms) "
                        "unless the row says idle_poll_max 1 ms (a look every 1 ms); the record "
                        "is the pooled "
                        "line, copied into its queue cell (512 B a cell: 2^21 cells are 1 GiB)");
    sec.notes.push_back("beside a bare push: between two calls, at the same rate, the same "
                        "line pushed into a bare ring of the same capacity (the floor below, "
                        "bare_ring.hpp), each timed: the writer's cost over the floor in the same "
                        "moments, run by run (median over the runs); not a goal row");
    sec.notes.push_back("faults: minor + major page faults of the calling thread after the "
                        "warm-up (getrusage RUSAGE_THREAD, read between calls every 256 calls); "
                        "start: constructing and starting the writer, and the resident memory "
                        "that added");
    sec.notes.push_back("Quill-style: the line copied into a preallocated, pre-touched 128 KiB "
                        "single-producer byte ring that a backend thread polls (100 us sleep "
                        "when empty) and fwrite()s; it validates nothing and counts nothing "
                        "(bench/quill_style_runs.cpp); ratio on a jsonlw row: the Quill-style "
                        "p99.9 at the same rate over jsonlw's, pair by pair (above 1: jsonlw's "
                        "tail is shorter)");
    sec.notes.push_back("floor: RawJsonWriter's push of the line into its queue cell with no "
                        "writer around it (no state check, no doorbell, no burst check, no "
                        "validation), a thread popping every 1 ms that never reads the tail "
                        "(bench/floor_runs.cpp); \"Asio loop thread\": each push a handler "
                        "re-posting itself on an io_context with a timer pending (its scheduler "
                        "polls epoll between handlers); \"its consumer appending\": that thread also "
                        "copies the lines it popped into one buffer and write()s it to a file "
                        "(the I/O thread's work without validation, hop or accounting)");
    report.sections.push_back(std::move(sec));

    // What starting a writer costs per queue capacity, its queue in huge pages or not
    // (WriterOptions::huge_pages), alternated.
    if (chosen("starting a writer")) {
        Section start;
        start.scenario = "submit-tail";
        start.title = "starting a writer: RawJsonWriter's constructor and start(), per queue "
                      "capacity (512 B a cell)";
        for (std::size_t cap : {std::size_t{1024}, std::size_t{1} << 16, std::size_t{1} << 21}) {
            // [0]: huge_pages true, [1]: false; each run's time in the row, its MiB beside it.
            Row rows[2];
            std::vector<double> rss[2], huge_mib[2];
            for (int h = 0; h < 2; ++h) {
                rows[h].variant = fmt::format("queue {}, huge_pages {}", capacity_label(cap),
                                              h == 0 ? "true" : "false (the default)");
                rows[h].unit = "ms";
                rows[h].higher_is_better = false;
            }
            for (int i = 0; i < cfg.pairs; ++i) {
                for (const bool huge : {true, false}) {
                    const StartCostResult r = jsonlw_start_cost(cfg.dir, cap, huge);
                    progress(fmt::format("start, queue {}, huge_pages {}, {}/{}: {:.1f} ms, "
                                         "{:.1f} MiB resident, {:.0f} MiB in huge pages{}",
                                         capacity_label(cap), huge, i + 1, cfg.pairs, r.ms,
                                         r.rss_mib, r.huge_mib,
                                         r.problem.empty() ? "" : " PROBLEM: " + r.problem));
                    const int h = huge ? 0 : 1;
                    rows[h].values.v.push_back(r.ms);
                    rss[h].push_back(r.rss_mib);
                    huge_mib[h].push_back(r.huge_mib);
                    if (rows[h].problem.empty()) rows[h].problem = r.problem;
                }
            }
            for (int h = 0; h < 2; ++h) {
                rows[h].extra = {{"MiB resident", quantile(rss[h], 0.5)},
                                 {"MiB in huge pages", quantile(huge_mib[h], 0.5)}};
                start.rows.push_back(std::move(rows[h]));
            }
        }
        start.notes.push_back("huge_pages: a queue of 2 MiB or more mapped at a 2 MiB boundary, "
                              "MADV_HUGEPAGE, then MADV_POPULATE_WRITE; false: mmap(MAP_POPULATE) "
                              "in 4 KiB pages; below 2 MiB: operator new, the same either way. "
                              "Resident and huge-page MiB: /proc/self/status VmRSS and "
                              "smaps_rollup AnonHugePages, after start() - before");
        report.sections.push_back(std::move(start));
    }

    // What the writer costs when nothing is submitted, and how soon it wakes for a record.
    if (!chosen("an idle writer")) return;
    const double spell = cfg.quick ? 0.3 : 2.0;
    Section idle;
    idle.scenario = "submit-tail";
    idle.title = fmt::format("an idle writer (default options, {} s without records after one)",
                             spell);
    // The CPU over the spell and the record's wait after it, one row each, for a writer with
    // `flush_interval` (0: the defaults; it bounds the back-off too).
    std::uint64_t wakeups = 0;
    const auto idle_rows = [&](std::chrono::milliseconds flush, std::string cpu_label) {
        Row cpu{.variant = std::move(cpu_label), .unit = "% of a core"};
        Row wake{.variant = "  a record submitted after the spell: written after", .unit = "ms"};
        cpu.higher_is_better = wake.higher_is_better = false;
        for (int i = 0; i < cfg.pairs; ++i) {
            const IdleCostResult r = jsonlw_idle_cost(cfg.dir, spell, flush);
            progress(fmt::format("idle writer, flush_interval {} ms, {}/{}: {:.3f} % of a core, "
                                 "woken in {:.2f} ms{}",
                                 flush.count(), i + 1, cfg.pairs, r.cpu_share * 100, r.wake_ms,
                                 r.problem.empty() ? "" : " PROBLEM: " + r.problem));
            cpu.values.v.push_back(r.cpu_share * 100);
            wake.values.v.push_back(r.wake_ms);
            wakeups += r.wakeups;
            if (cpu.problem.empty()) cpu.problem = r.problem;
        }
        return std::pair{std::move(cpu), std::move(wake)};
    };
    auto [cpu, wake] = idle_rows({}, "jsonlw RawJsonWriter, idle: CPU of all its threads");
    report.goals.push_back(make_goal("idle writer: CPU of its threads", "<=", 1.0,
                                     cpu.values.median(), "% of a core"));
    std::vector<Row> bounded;
    for (const auto ms : {std::chrono::milliseconds(4), std::chrono::milliseconds(2)}) {
        auto [c, w] = idle_rows(
            ms, fmt::format("jsonlw RawJsonWriter, flush_interval {} ms, idle: CPU", ms.count()));
        bounded.push_back(std::move(c));
        bounded.push_back(std::move(w));
    }
    cpu.extra = {{"wake-ups producers posted, all runs", static_cast<double>(wakeups)}};
    // The floor: what looking at all costs here, whatever is looked at.
    Row timer1{.variant = "  floor: a bare Asio timer every 1 ms on a bare loop", .unit = "% of a core"};
    Row timer8{.variant = "  floor: the same every 8 ms (idle_poll_max)", .unit = "% of a core"};
    timer1.higher_is_better = timer8.higher_is_better = false;
    for (int i = 0; i < cfg.pairs; ++i) {
        timer1.values.v.push_back(100 * timer_floor_cpu_share(std::chrono::milliseconds(1), spell));
        timer8.values.v.push_back(100 * timer_floor_cpu_share(std::chrono::milliseconds(8), spell));
    }
    idle.rows = {std::move(cpu), std::move(wake)};
    for (Row& r : bounded) idle.rows.push_back(std::move(r));
    idle.rows.push_back(std::move(timer1));
    idle.rows.push_back(std::move(timer8));
    idle.notes.push_back("the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) over the spell, nothing "
                         "else running; written: stats().written polled every 50 us (included)");
    report.sections.push_back(std::move(idle));
}

}  // namespace bench
