// The counts rules (see conformance_rules.hpp): counts.add_up, counts.exact, counts.found.
#include "conformance_lines.hpp"
#include "conformance_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace jsonlw::testing::conformance {

void check_adds_up(ReportBuilder& report, const AppendResult& r, std::uint64_t records,
                   const std::string& run)
{
    report.checked("counts.add_up");
    if (r.records_written + r.records_failed + r.records_unknown != records)
        report.fail("counts.add_up", run,
                    fmt::format("an append of {} records reported {} written, {} failed, {} "
                                "unknown",
                                records, r.records_written, r.records_failed,
                                r.records_unknown));
}

std::vector<Group> count_groups(ReportBuilder& report, const WriterRunSeen& seen)
{
    using K = Event::Kind;
    const auto& events = seen.events;
    const bool batch_mode = seen.mode == Durability::fsync_batch;
    std::vector<Group> groups;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const Event& e = events[i];
        if (e.kind != K::append) continue;
        check_adds_up(report, e.result, e.records, seen.run);
        Group g;
        g.ids = e.ids;
        g.records = e.records;
        g.written = std::min<std::uint64_t>(e.result.records_written, e.records);
        g.failed = std::min<std::uint64_t>(e.result.records_failed, e.records - g.written);
        g.unknown = e.records - g.written - g.failed;
        if (batch_mode && g.written > 0 && i + 1 < events.size() &&
            events[i + 1].kind == K::sync && events[i + 1].ec) {
            g.unknown += g.written;
            g.written = 0;
        }
        groups.push_back(std::move(g));
    }
    return groups;
}

void check_exact(ReportBuilder& report, const WriterRunSeen& seen,
                 const std::vector<Group>& groups)
{
    std::uint64_t written = 0, failed = 0, unknown = 0;
    for (const Group& g : groups) {
        written += g.written;
        failed += g.failed;
        unknown += g.unknown;
    }
    report.checked("counts.exact");
    if (!seen.closed) return;
    const WriterStats& s = seen.closed->stats;
    if (s.written != written || s.dropped.write_error != failed || s.unknown != unknown)
        report.fail("counts.exact", seen.run,
                    fmt::format("the writer counted {} written, {} write_error, {} unknown; "
                                "the sink reported {}, {}, {}",
                                s.written, s.dropped.write_error, s.unknown, written, failed,
                                unknown));
    else if (!seen.faults &&
             (s.written != seen.submitted || s.dropped.total() != 0 || s.unknown != 0))
        report.fail("counts.exact", seen.run,
                    fmt::format("{} records submitted, nothing wrong: {} written, {} dropped, "
                                "{} unknown",
                                seen.submitted, s.written, s.dropped.total(), s.unknown));
}

void check_found(ReportBuilder& report, const std::vector<Group>& groups,
                 const std::vector<std::string>& lines, const std::string& run)
{
    report.checked("counts.found");
    std::map<std::uint64_t, std::size_t> seen;
    for (const auto& l : lines) {
        const auto id = id_of(l);
        if (!id) {
            report.fail("counts.found", run,
                        fmt::format("a line read back is no record a writer wrote: '{}'",
                                    l.substr(0, 80)));
            return;
        }
        ++seen[*id];
    }
    std::set<std::uint64_t> appended;
    for (const Group& g : groups) {
        std::size_t found = 0;
        for (const std::uint64_t id : g.ids) {
            appended.insert(id);
            const auto it = seen.find(id);
            const std::size_t n = it == seen.end() ? 0 : it->second;
            if (n > 1) {
                report.fail("counts.found", run,
                            fmt::format("record {} is read back {} times", id, n));
                return;
            }
            found += n;
        }
        const std::uint64_t n = g.ids.size();
        if (g.records != n) continue;  // not one line per record: counts only
        if (found < g.written || found > g.written + g.unknown) {
            report.fail("counts.found", run,
                        fmt::format("a group of {} records counted {} written, {} unknown, {} "
                                    "failed: {} of them are read back",
                                    g.records, g.written, g.unknown, g.failed, found));
            return;
        }
    }
    for (const auto& [id, n] : seen)
        if (!appended.count(id)) {
            report.fail("counts.found", run,
                        fmt::format("record {} is read back but was never appended", id));
            return;
        }
}

}  // namespace jsonlw::testing::conformance
