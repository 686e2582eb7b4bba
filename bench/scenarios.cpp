#include "scenarios.hpp"

#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"

#include <fmt/format.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>
#include <type_traits>

namespace bench {

namespace {

const SteadyClock::time_point g_start = SteadyClock::now();

constexpr double mib = 1024.0 * 1024.0;

// --- helpers shared by the scenarios ---

// A variant of a scenario: its row's name and how one run of it goes.
template <class Result>
struct Variant {
    Variant(std::string n, std::function<Result()> r, bool avail = true, std::string why = {})
        : name(std::move(n)), run(std::move(r)), available(avail), why_not(std::move(why))
    {
    }
    std::string name;
    std::function<Result()> run;
    bool available = true;
    std::string why_not;  // when unavailable
};

// Runs warm-up rounds, then `pairs` measured rounds; in each round every variant once, in
// order (jsonlw first): A B C ... A B C ... Returns the measured results per variant.
template <class Result>
std::vector<std::vector<Result>> alternate(const Config& cfg, const std::string& cell,
                                           std::vector<Variant<Result>>& variants,
                                           const std::function<std::string(const Result&)>& brief)
{
    std::vector<std::vector<Result>> out(variants.size());
    const int rounds = cfg.warmups + cfg.pairs;
    for (int round = 0; round < rounds; ++round) {
        const bool warm = round < cfg.warmups;
        for (std::size_t v = 0; v < variants.size(); ++v) {
            if (!variants[v].available) continue;
            Result r = variants[v].run();
            progress(fmt::format("{} {} {}: {}", cell,
                                 warm ? std::string("warm-up") :
                                        fmt::format("pair {}/{}", round - cfg.warmups + 1, cfg.pairs),
                                 variants[v].name, brief(r)));
            if (!warm) out[v].push_back(std::move(r));
        }
    }
    return out;
}

// Pair by pair: advantage of row `a` over row `b`, `higher` says which way is better.
Series pair_ratios(const Series& a, const Series& b, bool higher)
{
    Series s;
    for (std::size_t i = 0; i < std::min(a.v.size(), b.v.size()); ++i) {
        const double x = a.v[i], y = b.v[i];
        s.v.push_back(higher ? x / y : y / x);
    }
    return s;
}

template <class Result>
std::string first_problem(const std::vector<Result>& rs)
{
    for (const Result& r : rs)
        if (!r.problem.empty()) return r.problem;
    return {};
}

Goal make_goal(std::string name, std::string cmp, double target, std::optional<double> measured,
               std::string unit, std::string note = {})
{
    Goal g{std::move(name), std::move(cmp), target, measured, std::move(unit), std::nullopt,
           std::move(note)};
    if (measured) g.met = g.comparison == ">=" ? *measured >= target : *measured <= target;
    return g;
}

// Runs `f` in a forked child and returns what it returned: its ru_maxrss is then its own.
// The caller must be single-threaded (fork copies only the calling thread).
template <class R, class F>
R in_child(F f)
{
    static_assert(std::is_trivially_copyable_v<R>);
    R r{};
    int fds[2];
    if (::pipe(fds) != 0) {
        std::snprintf(r.problem, sizeof r.problem, "pipe: %s", std::strerror(errno));
        return r;
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        std::snprintf(r.problem, sizeof r.problem, "fork: %s", std::strerror(errno));
        ::close(fds[0]);
        ::close(fds[1]);
        return r;
    }
    if (pid == 0) {
        ::close(fds[0]);
        const R out = f();
        const char* p = reinterpret_cast<const char*>(&out);
        std::size_t left = sizeof out;
        while (left > 0) {
            const ssize_t w = ::write(fds[1], p, left);
            if (w <= 0) _exit(2);
            p += w;
            left -= static_cast<std::size_t>(w);
        }
        _exit(0);
    }
    ::close(fds[1]);
    char* p = reinterpret_cast<char*>(&r);
    std::size_t got = 0;
    while (got < sizeof r) {
        const ssize_t n = ::read(fds[0], p + got, sizeof r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (got != sizeof r) {
        r = R{};
        std::snprintf(r.problem, sizeof r.problem, "child died (status %d)", status);
    }
    return r;
}

std::string spdlog_missing() { return "spdlog not found by Meson at build time"; }

}  // namespace

void progress(const std::string& text)
{
    fmt::print(stderr, "[{:5.0f} s] {}\n", seconds_since(g_start), text);
}

// ------------------------------------------------------------------------------------------
// Throughput
// ------------------------------------------------------------------------------------------

namespace {

// A variant of a throughput cell. jsonlw rows come first; every other row's ratio is against
// the jsonlw row named by `against` (empty: the first row), the one doing the same work.
struct CellVariant {
    CellVariant(std::string n, std::function<ThroughputResult(const ThroughputSpec&)> r,
                std::string nt, bool j = false, std::string ag = {}, bool avail = true,
                std::string why = {})
        : name(std::move(n)), run(std::move(r)), note(std::move(nt)), jsonlw(j),
          against(std::move(ag)), available(avail), why_not(std::move(why))
    {
    }
    std::string name;
    std::function<ThroughputResult(const ThroughputSpec&)> run;
    std::string note;     // says whether it validates, and what else it does
    bool jsonlw = false;  // a jsonlw row: no ratio of its own
    std::string against;
    bool available = true;
    std::string why_not;
};

// One throughput cell: the variants alternated run by run. Returns the section; goals are
// the caller's.
Section throughput_cell(const Config& cfg, const std::string& writer, const LinePool& pool,
                        std::size_t records, int producers, const std::vector<CellVariant>& cells)
{
    const std::string prebuilt = prebuilt_bytes(pool, records);
    ThroughputSpec spec{&pool, records, producers, cfg.dir, &prebuilt};
    // Every thread's sleeps and wake-ups during a run: what a hand-off costs beyond CPU.
    const auto counted = [&spec](const std::function<ThroughputResult(const ThroughputSpec&)>& run) {
        return [run, &spec] {
            rusage before{}, after{};
            ::getrusage(RUSAGE_SELF, &before);
            ThroughputResult r = run(spec);
            ::getrusage(RUSAGE_SELF, &after);
            r.switches = static_cast<std::uint64_t>(after.ru_nvcsw - before.ru_nvcsw);
            return r;
        };
    };
    std::vector<Variant<ThroughputResult>> variants;
    for (const CellVariant& c : cells)
        variants.emplace_back(c.name, counted(c.run), c.available, c.why_not);
    const std::string cell = fmt::format("throughput {} {} x{}", writer, pool.label, producers);
    auto results = alternate<ThroughputResult>(
        cfg, cell, variants, [&](const ThroughputResult& r) {
            return fmt::format("{} rec/s{}{}", human(static_cast<double>(records) / r.seconds),
                               r.lost ? fmt::format(", lost/retried {}", r.lost) : "",
                               r.problem.empty() ? "" : " PROBLEM: " + r.problem);
        });

    Section sec;
    sec.scenario = "throughput";
    sec.title = fmt::format("throughput: {}, {} records, {} producer{} ({} records, {} MiB per "
                            "run; first submit until the file is closed)",
                            writer, pool.label, producers, producers > 1 ? "s" : "",
                            human(static_cast<double>(records)),
                            human(static_cast<double>(records * pool.line_bytes) / mib));
    sec.params = {{"record_bytes", static_cast<double>(pool.line_bytes)},
                  {"producers", producers},
                  {"records", static_cast<double>(records)}};
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.note = cells[v].note;
        row.unit = "records/s";
        row.unit2 = "MiB/s";
        row.scale2 = static_cast<double>(pool.line_bytes) / mib;
        if (!variants[v].available) {
            row.skipped = true;
            row.problem = variants[v].why_not;
            sec.rows.push_back(row);
            continue;
        }
        std::vector<double> lost, switches;
        for (const ThroughputResult& r : results[v]) {
            row.values.v.push_back(static_cast<double>(records) / r.seconds);
            lost.push_back(static_cast<double>(r.lost));
            switches.push_back(1000.0 * static_cast<double>(r.switches) / static_cast<double>(records));
        }
        row.problem = first_problem(results[v]);
        row.extra.emplace_back("ctx switches/1k rec", quantile(switches, 0.5));
        if (row.variant.find("overrun_oldest") != std::string::npos)
            row.extra.emplace_back("lines lost (median)", quantile(lost, 0.5));
        if (cells[v].jsonlw && quantile(lost, 0.5) > 0)
            row.extra.emplace_back("refusals retried (median)", quantile(lost, 0.5));
        sec.rows.push_back(row);
    }
    for (std::size_t v = 0; v < sec.rows.size(); ++v) {
        if (sec.rows[v].skipped || cells[v].jsonlw) continue;
        std::size_t base = 0;
        for (std::size_t k = 0; k < cells.size(); ++k)
            if (cells[k].jsonlw && cells[k].name == cells[v].against) base = k;
        if (sec.rows[base].skipped) continue;
        sec.rows[v].ratio = pair_ratios(sec.rows[base].values, sec.rows[v].values, true);
        if (base != 0) sec.rows[v].ratio_of = cells[base].name;
    }
    sec.notes.push_back("the line count and size of every file is checked after every run, "
                        "and jsonlw's counters: written == records");
    sec.notes.push_back("jsonlw advantage: pair by pair against the jsonlw row that does the "
                        "same work (the first row unless named); on the limit row, the "
                        "fraction of the limit that row reaches");
    return sec;
}

std::size_t row_index(const Section& sec, const std::string& name)
{
    for (std::size_t v = 0; v < sec.rows.size(); ++v)
        if (sec.rows[v].variant == name) return v;
    return sec.rows.size();
}

// Median of the pair-by-pair ratios of row `a` over row `b` (> 1: a is faster).
std::optional<double> ratio_between(const Section& sec, const std::string& a, const std::string& b)
{
    const std::size_t i = row_index(sec, a), j = row_index(sec, b);
    if (i >= sec.rows.size() || j >= sec.rows.size()) return std::nullopt;
    if (sec.rows[i].skipped || sec.rows[j].skipped || sec.rows[i].values.empty() ||
        sec.rows[j].values.empty())
        return std::nullopt;
    return pair_ratios(sec.rows[i].values, sec.rows[j].values, true).median();
}

std::optional<double> ratio_median(const Section& sec, std::size_t v)
{
    if (v >= sec.rows.size() || sec.rows[v].skipped || !sec.rows[v].ratio) return std::nullopt;
    return sec.rows[v].ratio->median();
}

const char* const limit_row = "write() 1 MiB chunks (limit)";
const char* const fprintf_row = "fprintf + std::mutex";

void limit_goal(Report& report, const Section& sec, const std::string& writer,
                const std::string& label, int producers)
{
    std::optional<double> pct;
    if (auto m = ratio_median(sec, row_index(sec, limit_row))) pct = *m * 100;
    report.goals.push_back(make_goal(fmt::format("{} {}, {} producer{}: bytes/s vs write() limit",
                                                 writer, label, producers,
                                                 producers > 1 ? "s" : ""),
                                     ">=", 30, pct, "%"));
}

// The rows every cell has: the write() limit and plain fprintf, neither validating.
std::vector<CellVariant> plain_baselines(const std::string& against)
{
    return {
        {limit_row, write_limit_throughput,
         "no validation: the pre-built bytes, one thread", false, against},
        {fprintf_row, fprintf_throughput,
         "no validation: each producer fprintf()s the pre-serialized line", false, against},
    };
}

}  // namespace

// WriterOptions::serializer_threads: the same cell with 1, 2, 4, 8 serializer threads (as
// many as the machine has cores for), each row's ratio against 1 serializer.
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
            for (CellVariant& c : plain_baselines(raw_trusted_view)) cells.push_back(std::move(c));
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
                "RawJsonWriter: Overflow::block (block_timeout 1 h), queue 8192, batch 64: "
                "nothing is dropped; full validation parses each batch of 64 as one simdjson "
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
            // The default (1 serializer), and serializer_threads = 2.
            for (const auto& [row, how] : {std::pair{raw_full_view, ""},
                                           std::pair{raw_full_2, ", serializer_threads 2"}})
                if (size == 250 && (producers == 1 || producers == 4))
                    report.goals.push_back(make_goal(
                        fmt::format("validated RawJsonWriter 250 B, {} producer{}{}: records/s "
                                    "vs simdjson validate+minify, fprintf+mutex",
                                    producers, producers > 1 ? "s" : "", how),
                        ">=", 1.2, ratio_between(sec, row, validated_row), "x"));
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
                                                 "issue 13's figure"));
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
                "Overflow::block (block_timeout 1 h), queue 1024, batch 64: nothing is dropped");
            sec.notes.push_back("the write() and fprintf baselines write the same lines, "
                                "pre-serialized; fmt::format_to builds them from the chunks");
            limit_goal(report, sec, wl.name, size == 1024 ? "~1 KiB" : "~4 KiB", producers);
            report.sections.push_back(std::move(sec));
        }
    }
}

// ------------------------------------------------------------------------------------------
// Submit cost
// ------------------------------------------------------------------------------------------

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
            row.skipped = true;
            row.problem = variants[v].why_not;
            sec.rows.push_back(row);
            continue;
        }
        std::vector<double> means, p99s, p999s, maxes, pooled;
        std::uint64_t calls = 0, allocations = 0, refused = 0, warm_allocations = 0;
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
    sec.notes.push_back("jsonlw: default options (queue 1024, batch 64, drop_newest, "
                        "flush_interval 0, idle_poll 1 ms). Between records the drain polls the "
                        "empty queue every idle_poll instead of parking, so a submit() at this "
                        "rate only pushes; it wakes the drain (a post to the io_context, from "
                        "memory the writer owns: no allocation, but the scheduler's mutex and "
                        "maybe a system call) only when 64 records wait before a poll, or after "
                        "50 ms without records. With flush_interval 5 ms the drain lingers "
                        "instead and a full batch wakes it; with idle_poll 5 ms a poll finds "
                        "more than 64 records at this rate, so one call in 64 wakes it; with "
                        "idle_poll 0 every call after the queue emptied does");
    sec.notes.push_back("submit() moves a std::string built before the call into the queue "
                        "(its buffer freed later on the I/O thread); submit(std::string_view) "
                        "copies the line's bytes once into its queue cell (RawJsonText, inline "
                        "up to 456 B: no allocation, nothing freed on another thread); "
                        "submit(std::string(line)) times the string's allocation as well");
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

// ------------------------------------------------------------------------------------------
// Overload
// ------------------------------------------------------------------------------------------

namespace {

// The documented bound of peak RSS under overload (docs/benchmarks.md): what the process held
// before the writer existed, plus the queue full of records, plus the batch buffers, plus a
// constant for threads, allocator arenas and the parser.
constexpr double overload_constant_mib = 8;

double rss_bound_mib(double start_kib, std::size_t capacity, std::size_t line_bytes)
{
    constexpr double per_record_overhead = 64;  // ring cell (seq + std::string) + malloc header
    constexpr double batch_records = 64;
    const double record = static_cast<double>(line_bytes) + per_record_overhead;
    const double queue = static_cast<double>(capacity) * record;
    // The staging batch, the line buffer and the minify buffer each hold at most one batch.
    const double batch = 3 * batch_records * record;
    return start_kib / 1024 + (queue + batch) / mib + overload_constant_mib;
}

}  // namespace

void overload_scenario(const Config& cfg, Report& report)
{
    const LinePool pool = make_pool(1024);
    OverloadSpec spec{&pool, 2, cfg.quick ? 1.0 : 5.0, 1024, cfg.dir};
    OverloadSpec warm_spec = spec;
    warm_spec.seconds = spec.seconds / 5;
    bool warming = true;
    auto child = [&](OverloadVariant v) {
        const OverloadSpec& s = warming ? warm_spec : spec;
        return in_child<OverloadResult>([&] { return run_overload(v, s); });
    };
    struct Item {
        OverloadVariant v;
        const char* name;
        bool spdlog;
    };
    const Item items[] = {
        {OverloadVariant::drop_newest, "jsonlw drop_newest", false},
        {OverloadVariant::drop_oldest, "jsonlw drop_oldest", false},
        {OverloadVariant::block, "jsonlw block (100 ms)", false},
        {OverloadVariant::spdlog_overrun_oldest, "spdlog async overrun_oldest", true},
        {OverloadVariant::spdlog_block, "spdlog async block", true},
    };
    std::vector<Variant<OverloadResult>> variants;
    for (const Item& it : items)
        variants.push_back({it.name, [&, v = it.v] { return child(v); },
                            !it.spdlog || have_spdlog(), spdlog_missing()});
    // Warm-up rounds are shorter: each run is a fresh process anyway.
    std::vector<std::vector<OverloadResult>> results(variants.size());
    for (int round = 0; round < cfg.warmups + cfg.pairs; ++round) {
        warming = round < cfg.warmups;
        for (std::size_t v = 0; v < variants.size(); ++v) {
            if (!variants[v].available) continue;
            OverloadResult r = variants[v].run();
            progress(fmt::format(
                "overload {} {}: written {}/s, calls {}/s, peak RSS {:.0f} MiB{}{}",
                warming ? std::string("warm-up") :
                          fmt::format("pair {}/{}", round - cfg.warmups + 1, cfg.pairs),
                variants[v].name, human(r.written / r.seconds), human(r.calls / r.seconds),
                r.rss_peak_kib / 1024.0, r.counts_exact ? "" : ", COUNTS NOT EXACT",
                r.problem[0] ? std::string(" PROBLEM: ") + r.problem : ""));
            if (!warming) results[v].push_back(r);
        }
    }

    Section sec;
    sec.scenario = "overload";
    sec.title = fmt::format("overload: {} producers at full speed, {} records, queue {}, {} s "
                            "per run (each run in a child process of its own)",
                            spec.producers, pool.label, spec.queue_capacity, spec.seconds);
    sec.params = {{"producers", spec.producers},
                  {"record_bytes", static_cast<double>(pool.line_bytes)},
                  {"queue_capacity", static_cast<double>(spec.queue_capacity)},
                  {"seconds", spec.seconds},
                  {"rss_constant_mib", overload_constant_mib}};
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.unit = "written/s";
        row.unit2 = "MiB/s";
        row.scale2 = static_cast<double>(pool.line_bytes) / mib;
        if (!variants[v].available) {
            row.skipped = true;
            row.problem = variants[v].why_not;
            sec.rows.push_back(row);
            continue;
        }
        auto med = [&](auto field) {
            std::vector<double> xs;
            for (const OverloadResult& r : results[v]) xs.push_back(static_cast<double>(field(r)));
            return quantile(xs, 0.5);
        };
        double peak = 0, growth = 0, bound = 0;
        bool exact = true;
        for (const OverloadResult& r : results[v]) {
            row.values.v.push_back(static_cast<double>(r.written) / r.seconds);
            peak = std::max(peak, r.rss_peak_kib / 1024.0);
            growth = std::max(growth, (r.rss_peak_kib - r.rss_start_kib) / 1024.0);
            bound = std::max(bound, rss_bound_mib(static_cast<double>(r.rss_start_kib),
                                                  spec.queue_capacity, pool.line_bytes));
            exact = exact && r.counts_exact;
            if (row.problem.empty() && r.problem[0]) row.problem = r.problem;
        }
        row.extra.emplace_back("calls/s", med([](const OverloadResult& r) { return r.calls / r.seconds; }));
        if (!items[v].spdlog) {
            row.extra.emplace_back("queue_full", med([](const OverloadResult& r) { return r.drop_queue_full; }));
            row.extra.emplace_back("oldest_evicted", med([](const OverloadResult& r) { return r.drop_oldest_evicted; }));
            const double other = med([](const OverloadResult& r) {
                return r.drop_malformed + r.drop_write_error + r.drop_shutdown +
                       r.drop_unexpected + r.drop_closed + r.unknown;
            });
            if (other != 0) row.extra.emplace_back("other drops+unknown", other);
            row.extra.emplace_back("counts exact", exact ? 1 : 0);
        } else {
            row.extra.emplace_back("lost", med([](const OverloadResult& r) { return r.lost; }));
        }
        row.extra.emplace_back("peak RSS MiB", peak);
        row.extra.emplace_back("RSS growth MiB", growth);
        if (!items[v].spdlog) {
            row.extra.emplace_back("bound MiB", bound);
            report.goals.push_back(make_goal(
                fmt::format("overload {}: peak RSS within bound, counts exact", row.variant), "<=",
                std::round(bound * 10) / 10, peak, "MiB",
                exact ? "submitted == written + dropped + unknown in every run"
                      : "COUNTS NOT EXACT: " + row.problem));
            if (!exact) report.goals.back().met = false;
        }
        sec.rows.push_back(row);
    }
    // spdlog overrun_oldest vs jsonlw drop_oldest; spdlog block vs jsonlw block.
    if (!sec.rows[3].skipped) {
        sec.rows[3].ratio = pair_ratios(sec.rows[1].values, sec.rows[3].values, true);
        sec.rows[3].ratio_of = "drop_oldest";
    }
    if (!sec.rows[4].skipped) {
        sec.rows[4].ratio = pair_ratios(sec.rows[2].values, sec.rows[4].values, true);
        sec.rows[4].ratio_of = "block";
    }
    sec.notes.push_back("written/s: records in the file per second from the first submit until "
                        "close completed; drops: medians over the runs");
    sec.notes.push_back(fmt::format(
        "RSS bound = RSS before the writer + queue x (record + 64 B) + 3 batches of 64 records "
        "+ {:.0f} MiB (threads' stacks, the allocator's per-thread arenas, simdjson's parser, "
        "Asio); peak RSS is ru_maxrss of the child",
        overload_constant_mib));
    sec.notes.push_back("spdlog: same queue size, 1 worker; it counts no drops, so lost = calls "
                        "- lines in the file");
    report.sections.push_back(std::move(sec));
}

// ------------------------------------------------------------------------------------------
// Drain at close
// ------------------------------------------------------------------------------------------

void drain_scenario(const Config& cfg, Report& report)
{
    const LinePool pool = make_pool(250);
    const std::size_t records = 100000;
    const std::string prebuilt = prebuilt_bytes(pool, records);
    ThroughputSpec limit_spec{&pool, records, 1, cfg.dir, &prebuilt};
    struct Timed {
        double seconds = 0;
        std::string problem;
    };
    std::vector<Variant<Timed>> variants = {
        {"jsonlw async_close() drain",
         [&] {
             const DrainResult d = jsonlw_raw_drain(pool, records, cfg.dir);
             return Timed{d.seconds, d.problem};
         }},
        {"write() 1 MiB chunks (limit)",
         [&] {
             const ThroughputResult t = write_limit_throughput(limit_spec);
             return Timed{t.seconds, t.problem};
         }},
    };
    auto results = alternate<Timed>(cfg, "drain 100k x 250 B", variants, [](const Timed& t) {
        return fmt::format("{:.1f} ms{}", t.seconds * 1e3,
                           t.problem.empty() ? "" : " PROBLEM: " + t.problem);
    });
    Section sec;
    sec.scenario = "drain";
    sec.title = fmt::format("drain at close: {} records of {} queued while the io_context was "
                            "not running; async_close() until it completes",
                            human(static_cast<double>(records)), pool.label);
    sec.params = {{"records", static_cast<double>(records)},
                  {"record_bytes", static_cast<double>(pool.line_bytes)}};
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.unit = "ms";
        row.higher_is_better = false;
        for (const Timed& t : results[v]) row.values.v.push_back(t.seconds * 1e3);
        row.problem = first_problem(results[v]);
        row.extra.emplace_back("records/s", records / (row.values.median() / 1e3));
        sec.rows.push_back(row);
    }
    sec.rows[1].ratio = pair_ratios(sec.rows[0].values, sec.rows[1].values, false);
    sec.notes.push_back("the drain validates every record with simdjson; queue capacity 100,000; "
                        "the limit appends the same bytes from one pre-built buffer");
    report.sections.push_back(std::move(sec));
}

// ------------------------------------------------------------------------------------------
// Serialization
// ------------------------------------------------------------------------------------------

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
        auto results = alternate<double>(cfg, "serialize " + pool.label, variants,
                                         [](double x) { return fmt::format("{:.0f} ns", x); });
        Section sec;
        sec.scenario = "serialization";
        sec.title = fmt::format("serialization: RawJsonWriter, {} records (full validation "
                                "with simdjson, and trusted), {} per run, thread CPU time",
                                pool.label, human(static_cast<double>(iterations)));
        sec.params = {{"record_bytes", static_cast<double>(pool.line_bytes)},
                      {"iterations", static_cast<double>(iterations)}};
        for (std::size_t v = 0; v < variants.size(); ++v) {
            Row row;
            row.variant = variants[v].name;
            row.unit = "ns/record";
            row.higher_is_better = false;
            row.values.v = results[v];
            row.extra.emplace_back("MiB/s", pool.line_bytes / (row.values.median() * 1e-9) / mib);
            sec.rows.push_back(row);
        }
        for (std::size_t v = 1; v < sec.rows.size(); ++v)
            sec.rows[v].ratio = pair_ratios(sec.rows[0].values, sec.rows[v].values, false);
        report.sections.push_back(std::move(sec));
    }

    // JsonLine: building the seed worker record from typed fields.
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
    auto results = alternate<double>(cfg, "serialize JsonLine seed", variants,
                                     [](double x) { return fmt::format("{:.0f} ns", x); });
    const std::string golden = seed_worker_pool().lines.front();
    const std::string built = jsonline_seed_line();
    const std::string written = perf.lines.lines.front();
    Section sec;
    sec.scenario = "serialization";
    sec.title = fmt::format("serialization: the seed's worker record ({} B) from typed fields, "
                            "{} per run, thread CPU time",
                            golden.size() + 1, human(static_cast<double>(iterations)));
    sec.params = {{"record_bytes", static_cast<double>(golden.size() + 1)},
                  {"iterations", static_cast<double>(iterations)}};
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.unit = "ns/record";
        row.higher_is_better = false;
        row.values.v = results[v];
        sec.rows.push_back(row);
    }
    for (std::size_t v = 1; v < sec.rows.size(); ++v)
        sec.rows[v].ratio = pair_ratios(sec.rows[0].values, sec.rows[v].values, false);
    const bool identical = written == golden;
    if (!identical) sec.rows[0].problem = "PerfMetricsWriter's line differs from the seed's";
    if (built != golden) sec.rows[1].problem = "the hand-built line differs from the seed's";
    sec.notes.push_back(identical ? "PerfMetricsWriter's line is byte-identical to the seed's "
                                    "golden line (Python repr doubles: 1000.0, 3.0)"
                                  : "PerfMetricsWriter's line DIFFERS from the seed's: " + written);
    sec.notes.push_back("hand-built: the same JsonLine calls written out by hand for this record "
                        "(no optionals to test); the fmt floor is one format call with every "
                        "value in place, not the seed's spelling (1000.0 prints as 1000)");
    Goal g = make_goal("PerfMetricsWriter serialize() per seed worker record", "<=", 450,
                       sec.rows[0].values.median(), "ns",
                       identical ? "byte-identical to the seed's line" : "NOT byte-identical");
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
        auto rr = alternate<double>(cfg, "serialize RawOutputWriter", rv,
                                    [](double x) { return fmt::format("{:.0f} ns", x); });
        Section rs;
        rs.scenario = "serialization";
        rs.title = fmt::format("serialization: RawOutputWriter, {} ({} per run, thread CPU time)",
                               raw_out.lines.label, human(static_cast<double>(n)));
        rs.params = {{"record_bytes", static_cast<double>(raw_out.lines.line_bytes)},
                     {"iterations", static_cast<double>(n)}};
        for (std::size_t v = 0; v < rv.size(); ++v) {
            Row row;
            row.variant = rv[v].name;
            row.unit = "ns/record";
            row.higher_is_better = false;
            row.values.v = rr[v];
            rs.rows.push_back(row);
        }
        rs.rows[1].ratio = pair_ratios(rs.rows[0].values, rs.rows[1].values, false);
        rs.notes.push_back("text (escaped, twice: text and frames), 4 frames, token ids, two "
                           "ISO 8601 timestamps");
        report.sections.push_back(std::move(rs));
    }
}

// ------------------------------------------------------------------------------------------

bool callgrind_serialize(const std::string& kind, std::size_t n)
{
    // raw-SIZE: batches of 64 (write_batch()'s path); -alone: a batch of one per record;
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
    const bool trusted = kind.ends_with("-trusted");
    const std::string base = trusted ? kind.substr(0, kind.size() - 8) : kind;
    if (base == "raw-250" || base == "raw-1k" || base == "raw-4k") {
        const std::size_t size = base == "raw-250" ? 250 : base == "raw-1k" ? 1024 : 4096;
        const LinePool pool = make_pool(size);
        const std::size_t records = std::max<std::size_t>(1000, cfg.records * 250 / size);
        ThroughputSpec spec{&pool, records, 1, cfg.dir, nullptr};
        const ThroughputResult r = jsonlw_raw_throughput(spec, trusted);
        report("RawJsonWriter " + pool.label, r.seconds, records, r.problem);
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

void snapshot_scenario(const Config& cfg, Report& report)
{
    using namespace jsonlw::snapshot;
    const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    SnapshotConfig sc;
    sc.k = 20;
    sc.max_rows = 256;
    sc.max_vocab = 152064;
    sc.ring_slots = 2;
    sc.cpu_threads = threads;
    auto stage = SnapshotStage::create(sc, Backend::Cpu, [](SnapshotBatch&&) {});
    std::vector<std::byte> copy_dst;

    const std::vector<int> batches = cfg.quick ? std::vector<int>{1, 64} : std::vector<int>{1, 64, 256};
    const std::vector<int> vocabs = cfg.quick ? std::vector<int>{32000} : std::vector<int>{32000, 152064};
    const std::vector<LogitDType> dtypes = {LogitDType::F32, LogitDType::F16, LogitDType::BF16};
    const double bytes_per_run = cfg.quick ? 16e6 : 128e6;

    Section sec;
    sec.scenario = "snapshot";
    sec.title = fmt::format("snapshot stage, CPU backend: capture() of a [rows, vocab] batch, k = 20, "
                            "{} thread{} (rows/s; GB/s of logits read), next to memcpy of the same "
                            "bytes on as many threads",
                            threads, threads > 1 ? "s" : "");
    for (const int vocab : vocabs) {
        for (const int rows : batches) {
            for (const LogitDType dt : dtypes) {
                const SnapshotInput in = make_snapshot_input(dt, rows, vocab, 7);
                const int reps = std::max(1, static_cast<int>(bytes_per_run / double(in.data.size())));
                std::vector<Variant<SnapshotRunResult>> variants = {
                    {"capture", [&] { return snapshot_cpu_run(*stage, in, reps); }},
                    {"memcpy", [&] { return copy_ceiling_run(in, copy_dst, reps, threads); }},
                };
                const std::string cell = fmt::format("{} x {} {}", rows, vocab, dtype_name(dt));
                auto results = alternate<SnapshotRunResult>(
                    cfg, "snapshot " + cell, variants, [](const SnapshotRunResult& r) {
                        return fmt::format("{:.2f} GB/s", r.bytes / r.seconds / 1e9);
                    });
                for (std::size_t v = 0; v < variants.size(); ++v) {
                    Row row;
                    row.variant = fmt::format("{:<8} {}", variants[v].name, cell);
                    row.unit = "rows/s";
                    for (const auto& r : results[v]) row.values.v.push_back(double(r.rows) / r.seconds);
                    row.unit2 = "GB/s";
                    row.scale2 = double(in.data.size()) / double(rows) / 1e9;
                    row.problem = first_problem(results[v]);
                    sec.rows.push_back(std::move(row));
                }
                // On the capture row: its share of the copy ceiling, pair by pair.
                Row& cap = sec.rows[sec.rows.size() - 2];
                cap.ratio = pair_ratios(cap.values, sec.rows.back().values, true);
                cap.ratio_of = "memcpy";
            }
        }
    }
    sec.notes.push_back("rows/s counts rows fully processed (top-k, rank, log-sum-exp in double, NaN "
                        "and inf counts) and delivered; the ratio on a capture row is its share of "
                        "memcpy's rate over the same bytes (memcpy also writes them: a generous ceiling "
                        "for a read-only pass)");
    report.sections.push_back(std::move(sec));
}

void report_scenario(const Config& cfg, Report& report)
{
    Section sec;
    sec.scenario = "report";
#ifndef JSONLW_BENCH_REPORT
    Row row;
    row.variant = "jsonlw report";
    row.skipped = true;
    row.problem = "built with -Dtools=false";
    sec.title = "report: skipped";
    sec.rows.push_back(row);
    report.sections.push_back(std::move(sec));
#else
    const std::uint64_t target = cfg.quick ? (std::uint64_t{64} << 20) : (std::uint64_t{1} << 30);
    const std::filesystem::path dir = cfg.dir / "report";
    progress(fmt::format("report: making {} of demo output", human(double(target)) + "B"));
    const ReportData data = make_report_data(dir, target);
    sec.title = fmt::format("report: `jsonlw report` over {:.0f} MB of demo output ({} files), next to "
                            "a bare simdjson iterate_many pass (1 thread, documents counted, not read) "
                            "over the same bytes; page cache warm",
                            double(data.bytes) / 1e6, data.files.size());
    if (!data.problem.empty()) {
        Row row;
        row.variant = "jsonlw report";
        row.problem = data.problem;
        sec.rows.push_back(row);
        report.sections.push_back(std::move(sec));
        std::filesystem::remove_all(dir);
        return;
    }
    std::vector<Variant<ReportRunResult>> variants = {
        {"jsonlw report (every hardware thread)", [&] { return report_run(data, 0); }},
        {"jsonlw report --jobs 1", [&] { return report_run(data, 1); }},
        {"iterate_many, 1 thread (baseline)", [&] { return iterate_many_run(data); }},
    };
    auto results = alternate<ReportRunResult>(cfg, "report", variants, [](const ReportRunResult& r) {
        return fmt::format("{:.0f} MB/s", double(r.bytes) / 1e6 / r.seconds);
    });
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Row row;
        row.variant = variants[v].name;
        row.unit = "MB/s";
        for (const auto& r : results[v]) row.values.v.push_back(double(r.bytes) / 1e6 / r.seconds);
        row.problem = first_problem(results[v]);
        sec.rows.push_back(std::move(row));
    }
    for (std::size_t v = 0; v < 2; ++v) {
        sec.rows[v].ratio = pair_ratios(sec.rows[v].values, sec.rows[2].values, true);
        sec.rows[v].ratio_of = "iterate_many";
    }
    sec.notes.push_back("the report validates every line (DOM parse) and computes every figure; the "
                        "baseline only walks the documents");
    report.goals.push_back(make_goal("jsonlw report vs a bare iterate_many pass, same bytes", ">=", 0.5,
                                     sec.rows[0].ratio ? std::optional<double>(sec.rows[0].ratio->median())
                                                       : std::nullopt,
                                     "x"));
    report.sections.push_back(std::move(sec));
    std::filesystem::remove_all(dir);
#endif
}

}  // namespace bench
