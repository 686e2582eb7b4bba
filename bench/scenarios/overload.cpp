// The overload scenario: producers at full speed into a small queue under each policy, each
// run in a forked child of its own so its peak RSS is its own; drops, exact counts and the
// documented RSS bound.
#include "line_pool.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <jsonlw/writer_options.hpp>

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace bench {

namespace {

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

// The documented bound of peak RSS under overload (docs/benchmarks.md): what the process held
// before the writer existed, plus the queue full of records, plus the batch buffers, plus a
// constant for threads, allocator arenas and the parser.
constexpr double overload_constant_mib = 8;

double rss_bound_mib(double start_kib, std::size_t capacity, std::size_t line_bytes)
{
    constexpr double per_record_overhead = 64;  // ring cell (seq + std::string) + malloc header
    const auto batch_records = static_cast<double>(jsonlw::WriterOptions{}.batch_records);
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
            sec.rows.push_back(skipped_row(row, variants[v]));
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
        "RSS bound = RSS before the writer + queue x (record + 64 B) + 3 batches of {} records "
        "+ {:.0f} MiB (threads' stacks, the allocator's per-thread arenas, simdjson's parser, "
        "Asio); peak RSS is ru_maxrss of the child",
        jsonlw::WriterOptions{}.batch_records, overload_constant_mib));
    sec.notes.push_back("spdlog: same queue size, 1 worker; it counts no drops, so lost = calls "
                        "- lines in the file");
    report.sections.push_back(std::move(sec));
}

}  // namespace bench
