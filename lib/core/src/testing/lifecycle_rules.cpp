// The lifecycle rules a writer run's calls show (see conformance_rules.hpp): lifecycle.thread
// and lifecycle.reopen. The direct run checks lifecycle.start and lifecycle.reopen as it goes,
// and closed_sink_rules.cpp lifecycle.close_twice.
#include "conformance_rules.hpp"

#include <fmt/format.h>

namespace jsonlw::testing::conformance {

void check_thread(ReportBuilder& report, const WriterRunSeen& seen)
{
    const auto& events = seen.events;
    report.checked("lifecycle.thread");
    if (seen.overlapped)
        report.fail("lifecycle.thread", seen.run, "two calls reached the sink at once");
    if (events.empty()) return;
    const std::thread::id io_thread = events.front().thread;
    if (io_thread == seen.caller || io_thread == seen.loop)
        report.fail("lifecycle.thread", seen.run,
                    "a call reached the sink on a thread not the I/O one");
    for (const Event& e : events)
        if (e.thread != io_thread) {
            report.fail("lifecycle.thread", seen.run,
                        fmt::format("{} came on another thread than the others",
                                    name_of(e.kind)));
            break;
        }
}

void check_reopen(ReportBuilder& report, const WriterRunSeen& seen)
{
    using K = Event::Kind;
    const auto& events = seen.events;
    if (seen.faults) return;
    for (std::size_t i = 0; i < events.size(); ++i) {
        if (events[i].kind != K::reopen) continue;
        if (events[i].ec)
            report.fail("lifecycle.reopen", seen.run,
                        fmt::format("reopen() failed: {}", events[i].ec.message()));
        // An interval's sync() or a tick() may come between; an append may not.
        std::size_t j = i;
        while (j > 0 && (events[j - 1].kind == K::sync || events[j - 1].kind == K::tick)) --j;
        if (j > 0 && events[j - 1].kind == K::append)
            report.fail("lifecycle.reopen", seen.run,
                        "reopen() came between an append() and the after_batch() of its batch");
    }
}

}  // namespace jsonlw::testing::conformance
