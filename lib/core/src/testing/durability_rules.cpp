// The durability rules (see conformance_rules.hpp): durability.close, and where a batch's
// bytes are when its records count written (durability.sync_per_append,
// durability.fsynced_when_counted, durability.in_os_when_counted).
#include "conformance_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jsonlw::testing::conformance {

const char* name_of(Durability d) noexcept
{
    switch (d) {
    case Durability::none: return "none";
    case Durability::fsync_batch: return "fsync_batch";
    case Durability::fsync_interval: return "fsync_interval";
    }
    return "?";
}

void check_close(ReportBuilder& report, const WriterRunSeen& seen)
{
    using K = Event::Kind;
    const auto& events = seen.events;
    const std::string& run = seen.run;
    report.checked("durability.close");
    const auto closes = std::count_if(events.begin(), events.end(),
                                      [](const Event& e) { return e.kind == K::close; });
    if (!seen.closed) return;
    if (closes != 1) {
        report.fail("durability.close", run, fmt::format("close() came {} times", closes));
        return;
    }
    const Event& last = events.back();
    const bool durable = seen.mode != Durability::none;
    if (last.kind != K::close)
        report.fail("durability.close", run,
                    fmt::format("{} came after close()", name_of(last.kind)));
    else if (last.durable != durable)
        report.fail("durability.close", run,
                    fmt::format("close({}) under {}", last.durable, name_of(seen.mode)));
    else if (durable && (events.size() < 2 || events[events.size() - 2].kind != K::sync))
        report.fail("durability.close", run, "no sync() right before a durable close()");
    else if (durable && events[events.size() - 2].ec)
        report.fail("durability.close", run,
                    fmt::format("the sync() before close() failed: {}",
                                events[events.size() - 2].ec.message()));
}

void check_durable_when_counted(ReportBuilder& report, const WriterRunSeen& seen)
{
    using K = Event::Kind;
    const auto& events = seen.events;
    const std::string& run = seen.run;
    const bool batch_mode = seen.mode == Durability::fsync_batch;
    std::uint64_t counted = 0, writevs = 0, closed_dirty = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const Event& e = events[i];
        if (batch_mode && e.kind == K::append && !seen.faults) {
            report.checked("durability.sync_per_append");
            const bool wrote = std::min<std::uint64_t>(e.result.records_written, e.records) > 0;
            if (wrote && (i + 1 == events.size() || events[i + 1].kind != K::sync))
                report.fail("durability.sync_per_append", run,
                            fmt::format("an append that reported records written was followed "
                                        "by {}, not sync()",
                                        i + 1 == events.size() ? "nothing"
                                                               : name_of(events[i + 1].kind)));
            else if (wrote && events[i + 1].ec)
                report.fail("durability.sync_per_append", run,
                            fmt::format("sync() failed with nothing wrong: {}",
                                        events[i + 1].ec.message()));
            else if (wrote && events[i + 1].written != counted)
                report.fail("durability.sync_per_append", run,
                            "records were counted written before their sync() returned");
        }
        if (e.kind != K::after_batch) continue;
        const bool more = e.written > counted;
        if (more && !seen.faults && seen.io.used()) {
            if (batch_mode) {
                report.checked("durability.fsynced_when_counted");
                if (e.after.dirty > 0 || e.after.closed_dirty > closed_dirty)
                    report.fail(
                        "durability.fsynced_when_counted", run,
                        fmt::format("records were counted written while {} descriptor(s) "
                                    "written through SinkContext::file_io were not fsync'ed "
                                    "(and {} closed so): sync() must fsync what append() wrote",
                                    e.after.dirty, e.after.closed_dirty - closed_dirty));
            } else {
                report.checked("durability.in_os_when_counted");
                if (e.after.writevs == writevs)
                    report.fail("durability.in_os_when_counted", run,
                                "a batch's records were counted written, but the sink wrote "
                                "nothing through SinkContext::file_io since the batch before: "
                                "bytes held in the sink are not written");
            }
        }
        counted = e.written;
        writevs = e.after.writevs;
        closed_dirty = e.after.closed_dirty;
    }
    if (!seen.faults && !seen.io.used())
        report.skip(
            batch_mode ? "durability.fsynced_when_counted" : "durability.in_os_when_counted",
            "the sink wrote nothing through SinkContext::file_io, so where its bytes are is "
            "not observed (only its sync() calls are)");
}

}  // namespace jsonlw::testing::conformance
