// The fault rules of the faults run (see conformance_rules.hpp): fault.append, fault.sync,
// fault.io. Each fault is counted as the engine's rules say, and the sink writes on after it:
// the last group is written whole.
#include "conformance_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jsonlw::testing::conformance {

void check_faults(ReportBuilder& report, const WriterRunSeen& seen,
                  const std::vector<Group>& groups)
{
    using K = Event::Kind;
    const auto& events = seen.events;
    const std::string& run = seen.run;
    const auto last = std::find_if(groups.rbegin(), groups.rend(),
                                   [](const Group& g) { return g.records > 0; });
    const bool recovered = last != groups.rend() && last->written == last->records;
    report.checked("fault.append");
    if (seen.fc.appends_failed != 2)
        report.fail("fault.append", run,
                    fmt::format("{} of the 2 failures armed in front of the sink happened",
                                seen.fc.appends_failed));
    else if (!recovered)
        report.fail("fault.append", run, "the last group after the faults was not written whole");
    if (seen.mode == Durability::fsync_batch) {
        report.checked("fault.sync");
        if (seen.fc.syncs_failed != 1)
            report.fail("fault.sync", run,
                        "the sync() failure armed in front of the sink never came");
        else if (!recovered)
            report.fail("fault.sync", run,
                        "the last group after a failed sync() was not written whole");
    }
    if (seen.io.faults_hit == 0) {
        report.skip("fault.io", "the sink made no writev through SinkContext::file_io to fail");
        return;
    }
    report.checked("fault.io");
    for (const Event& e : events) {
        if (e.kind != K::append || e.after.faults_hit == e.before.faults_hit) continue;
        if (e.result.records_written >= e.records && e.after.writevs == e.before.writevs)
            report.fail("fault.io", run,
                        fmt::format("a writev failed (EIO) and nothing else was written, yet "
                                    "the sink counted all {} records of its append written",
                                    e.records));
    }
    if (!recovered)
        report.fail("fault.io", run, "the last group after a failed writev was not written whole");
}

}  // namespace jsonlw::testing::conformance
