// jsonlw-bench: throughput, submit cost, overload, drain at close and serialization, each
// measured side by side with its baselines (docs/benchmarks.md).
#include "clock.hpp"
#include "core_share.hpp"
#include "line_pool.hpp"
#include "report.hpp"
#include "runs.hpp"
#include "scenarios.hpp"

#include <jsonlw/version.hpp>

#include <fmt/format.h>

#include <sys/statfs.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if __has_include(<spdlog/version.h>) && defined(JSONLW_BENCH_SPDLOG)
#include <spdlog/version.h>
#endif

namespace {

constexpr const char* usage_text = R"(usage: jsonlw-bench [--quick] [--json FILE] [--records N] [--scenario NAME...]
                    [--rate R] [--h2load]

  --quick          smoke run (under a minute): fewer records, shorter runs, same pairs
  --json FILE      also write every figure, and the goals, to FILE as JSON
  --records N      throughput: records per run of 250 B (default 2000000; --quick 20000);
                   larger records fill the same bytes
  --scenario NAME  run only these (repeatable, or several names): throughput, serializers,
                   submit, submit-tail, overload, drain, file-check, serialization, otlp-cost,
                   record-features, snapshot, snapshot-rows, report, serving-overload, chain,
                   serve-cost
  --pairs N        measured rounds after the warm-up (default 5)
  --rate R         serve-cost: requests/s of the fixed-rate cell (default: half the capacity
                   measured first)
  --h2load         serve-cost: also measure saturation with h2load as the client
  --cell TEXT      throughput: run only the cells whose name ("throughput <writer> <size>
                   x<producers>", as progress prints it) contains TEXT, e.g.
                   --cell "RawJsonWriter 250 B"; the others are printed as skipped.
                   submit-tail: only the cells whose name contains TEXT (e.g. --cell
                   floor, --cell "50.0 k/s"); "an idle writer" names its idle section,
                   "starting a writer" its start-up section

The table goes to stdout, progress to stderr. Exit status 1 when a run failed a check
(a line count, the counters); a missed goal is reported, not an error.
)";

const std::vector<std::string> all_scenarios = {"overload", "throughput", "serializers",
                                                "submit", "submit-tail", "drain", "file-check",
                                                "serialization", "otlp-cost", "record-features",
                                                "snapshot", "snapshot-rows", "report",
                                                "serving-overload", "chain",
                                                "serve-cost"};

std::string read_first(const char* path, const std::string& prefix)
{
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(prefix, 0) == 0) {
            auto pos = line.find(':');
            std::string v = pos == std::string::npos ? line : line.substr(pos + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        }
    return "?";
}

std::string load_average()
{
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a + " " + b + " " + c;
}

std::string fs_type(const std::filesystem::path& dir)
{
    struct statfs st {};
    if (::statfs(dir.c_str(), &st) != 0) return "?";
    switch (static_cast<unsigned long>(st.f_type)) {
    case 0x01021994UL: return "tmpfs";
    case 0xEF53UL: return "ext4";
    case 0x58465342UL: return "xfs";
    case 0x9123683EUL: return "btrfs";
    case 0x794c7630UL: return "overlayfs";
    default: return fmt::format("0x{:x}", static_cast<unsigned long>(st.f_type));
    }
}

std::string utc_now()
{
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace

int main(int argc, char** argv)
{
    bench::Config cfg;
    std::string json_path;
    std::set<std::string> chosen;
    bool records_given = false;
    std::string callgrind_kind;
    std::size_t callgrind_n = 0;
    std::string profile_kind;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto need = [&](const char* what) -> std::string {
            if (i + 1 >= argc) {
                fmt::print(stderr, "jsonlw-bench: {} needs {}\n{}", a, what, usage_text);
                std::exit(2);
            }
            return argv[++i];
        };
        try {
            if (a == "--quick") cfg.quick = true;
            else if (a == "--json") json_path = need("a file name");
            else if (a == "--records") {
                cfg.records = std::stoull(need("a count"));
                records_given = true;
            } else if (a == "--rate") cfg.serve_rate = std::stod(need("requests/s"));
            else if (a == "--h2load") cfg.h2load = true;
            else if (a == "--cell") cfg.cell_filter = need("a cell's name, or part of it");
            else if (a == "--pairs") cfg.pairs = std::max(1, std::stoi(need("a count")));
            else if (a == "--scenario") {
                need("a name");
                --i;
                while (i + 1 < argc && argv[i + 1][0] != '-') {
                    std::string names = argv[++i];
                    for (std::size_t p = 0; p <= names.size();) {
                        const std::size_t q = std::min(names.find(',', p), names.size());
                        if (q > p) chosen.insert(names.substr(p, q - p));
                        p = q + 1;
                    }
                }
            } else if (a == "--callgrind-serialize") {
                // Hidden: docs/benchmarks.md runs it under callgrind.
                callgrind_kind = need("a kind");
                callgrind_n = std::stoull(need("a count"));
            } else if (a == "--profile") {
                // Hidden: one jsonlw run, nothing else (for callgrind; docs/benchmarks.md).
                profile_kind = need("a kind");
            } else if (a == "--help" || a == "-h") {
                fmt::print("{}", usage_text);
                return 0;
            } else {
                fmt::print(stderr, "jsonlw-bench: unknown argument {}\n{}", a, usage_text);
                return 2;
            }
        } catch (const std::exception&) {
            fmt::print(stderr, "jsonlw-bench: bad value for {}\n{}", a, usage_text);
            return 2;
        }
    }
    for (const std::string& s : chosen)
        if (std::find(all_scenarios.begin(), all_scenarios.end(), s) == all_scenarios.end()) {
            fmt::print(stderr, "jsonlw-bench: unknown scenario {}\n{}", s, usage_text);
            return 2;
        }
    if (!callgrind_kind.empty()) {
        if (!bench::callgrind_serialize(callgrind_kind, callgrind_n)) {
            fmt::print(stderr, "jsonlw-bench: unknown kind {}\n", callgrind_kind);
            return 2;
        }
        return 0;
    }
    if (cfg.quick && !records_given) cfg.records = 20000;
    if (cfg.records == 0) cfg.records = 1;
    if (!profile_kind.empty()) {
        cfg.dir = bench::make_work_dir();
        const bool ok = bench::profile_run(profile_kind, cfg);
        bench::clean_work_dir(cfg.dir);
        if (!ok) fmt::print(stderr, "jsonlw-bench: unknown profile kind {}\n", profile_kind);
        return ok ? 0 : 2;
    }

    const auto t0 = bench::SteadyClock::now();
    cfg.dir = bench::make_work_dir();

    bench::Report report;
    report.machine = {
        {"date", utc_now()},
        {"nproc", std::to_string(std::thread::hardware_concurrency())},
        {"cpu", read_first("/proc/cpuinfo", "model name")},
        {"kernel", [] {
             utsname u{};
             ::uname(&u);
             return std::string(u.release);
         }()},
        {"load at start", load_average()},
        {"2 threads at start", fmt::format("{:.2f} of one alone each (1: two free cores; 0.5: one shared)",
                                           bench::two_thread_share())},
        {"work dir", fmt::format("{} ({})", cfg.dir.native(), fs_type(cfg.dir))},
        {"compiler", __VERSION__},
        {"jsonlw", fmt::format("{}.{}.{}", JSONLW_VERSION_MAJOR, JSONLW_VERSION_MINOR, JSONLW_VERSION_PATCH)},
#if defined(SPDLOG_VER_MAJOR)
        {"spdlog", fmt::format("{}.{}.{}", SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH)},
#else
        {"spdlog", "not built in (baselines skipped)"},
#endif
    };
    const auto& clk = bench::TickClock::get();
    report.settings = {
        {"mode", cfg.quick ? "quick" : "full"},
        {"pairs", fmt::format("{} after {} warm-up round(s)", cfg.pairs, cfg.warmups)},
        {"records", fmt::format("{} of 250 B per throughput run (larger records: same bytes)",
                                cfg.records)},
        {"clock", fmt::format("{} (empty start/stop: {:.0f} ns)", clk.name(), clk.overhead_ns())},
    };

    auto wanted = [&](const std::string& s) { return chosen.empty() || chosen.count(s) > 0; };
    // Fixed order; overload first: it forks, and this process has no thread yet.
    if (wanted("overload")) bench::overload_scenario(cfg, report);
    if (wanted("throughput")) bench::throughput_scenario(cfg, report);
    if (wanted("serializers")) bench::serializers_scenario(cfg, report);
    if (wanted("submit")) bench::submit_scenario(cfg, report);
    if (wanted("submit-tail")) bench::submit_tail_scenario(cfg, report);
    if (wanted("drain")) bench::drain_scenario(cfg, report);
    if (wanted("file-check")) bench::file_check_scenario(cfg, report);
    if (wanted("serialization")) bench::serialization_scenario(cfg, report);
    if (wanted("otlp-cost")) bench::otlp_cost_scenario(cfg, report);
    if (wanted("record-features")) bench::record_features_scenario(cfg, report);
    if (wanted("snapshot")) bench::snapshot_scenario(cfg, report);
    if (wanted("snapshot-rows")) bench::snapshot_rows_scenario(cfg, report);
    // The report engine, the demo and the server are built with the tools only.
    [[maybe_unused]] const std::string no_tools = "built with -Dtools=false";
#ifdef JSONLW_BENCH_REPORT
    if (wanted("report")) bench::report_scenario(cfg, report);
    if (wanted("serving-overload")) bench::serving_overload_scenario(cfg, report);
#else
    if (wanted("report")) bench::report_skipped(report, "report", "jsonlw report", no_tools);
    if (wanted("serving-overload"))
        bench::report_skipped(report, "serving-overload", "jsonlw demo", no_tools);
#endif
    if (wanted("chain")) bench::chain_scenario(cfg, report);
#ifdef JSONLW_BENCH_SERVE
    if (wanted("serve-cost")) bench::serve_cost_scenario(cfg, report);
#else
    if (wanted("serve-cost")) bench::report_skipped(report, "serve-cost", "jsonlw serve", no_tools);
#endif

    report.machine.emplace_back("load at end", load_average());
    report.machine.emplace_back("2 threads at end",
                                fmt::format("{:.2f} of one alone each", bench::two_thread_share()));
    report.wall_seconds = bench::seconds_since(t0);
    bench::clean_work_dir(cfg.dir);

    bench::print_table(report, stdout);
    std::fflush(stdout);
    if (!json_path.empty()) {
        std::FILE* f = std::fopen(json_path.c_str(), "w");
        if (!f) {
            fmt::print(stderr, "jsonlw-bench: cannot write {}\n", json_path);
            return 1;
        }
        const std::string doc = bench::to_json(report);
        std::fwrite(doc.data(), 1, doc.size(), f);
        std::fclose(f);
    }
    for (const auto& s : report.sections)
        for (const auto& r : s.rows)
            if (!r.skipped && !r.problem.empty()) return 1;
    return 0;
}
