// The drain scenario: records queued while the io_context is not running, timed from
// async_close() until it completes, next to write() of the same bytes.
#include "line_pool.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <fmt/format.h>

namespace bench {

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
    sec.rows = lower_is_better_rows(variants, results, "ms",
                                    [](const Timed& t) { return t.seconds * 1e3; });
    for (Row& row : sec.rows)
        row.extra.emplace_back("records/s", records / (row.values.median() / 1e3));
    compare_with_first(sec.rows, false);
    sec.notes.push_back("the drain validates every record with simdjson; queue capacity 100,000; "
                        "the limit appends the same bytes from one pre-built buffer");
    report.sections.push_back(std::move(sec));
}

}  // namespace bench
