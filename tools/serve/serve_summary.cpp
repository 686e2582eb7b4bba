// What `jsonlw serve` prints when it stops (serve_summary.hpp).
#include "serve_summary.hpp"

#include "../demo/demo_accounting.hpp"

#include <jsonlw/snapshot/stage.hpp>

namespace jsonlw::serve {

int print_serve_summary(std::FILE* out, const ServeOptions& o, const ServeOutcome& r)
{
    const ServeCounters& c = r.counters;
    std::fprintf(out,
                 "jsonlw serve: %llu requests on %llu connections in %.2f s (%llu open at most, "
                 "%llu refused, %llu closed idle, %llu forced closed at shutdown)\n",
                 (unsigned long long)c.requests, (unsigned long long)c.connections_accepted,
                 r.seconds, (unsigned long long)c.connections_open_max,
                 (unsigned long long)c.connections_refused, (unsigned long long)c.idle_closed,
                 (unsigned long long)r.forced_closes);
    std::fprintf(out, "  responses by status:");
    for (const auto& [status, n] : c.by_status)
        std::fprintf(out, " %s %llu", status == 0 ? "none" : std::to_string(status).c_str(),
                     (unsigned long long)n);
    std::fprintf(out,
                 "\n  completions: %llu admitted (%llu streamed), %llu completed, %llu client "
                 "disconnected, %llu ended by shutdown; %llu tokens sent\n"
                 "  bad input: %llu malformed HTTP, %llu request timeouts, %llu incomplete "
                 "requests, %llu write timeouts\n",
                 (unsigned long long)c.generations, (unsigned long long)c.streams,
                 (unsigned long long)c.completed, (unsigned long long)c.client_disconnected,
                 (unsigned long long)c.shutdown_aborted, (unsigned long long)c.tokens_streamed,
                 (unsigned long long)c.malformed_http, (unsigned long long)c.header_timeouts,
                 (unsigned long long)c.incomplete, (unsigned long long)c.write_timeouts);
    std::fprintf(out, "  loop thread: %.3f s of CPU, %.1f us per request\n", r.loop_cpu_seconds,
                 c.requests ? r.loop_cpu_seconds * 1e6 / double(c.requests) : 0.0);
    const snapshot::SnapshotStats& st = r.stage;
    std::fprintf(out,
                 "  snapshot stage (%s): %llu steps, %llu captured (%llu rows), %llu dropped, "
                 "%llu first-gen rows\n",
                 snapshot::to_string(st.backend), (unsigned long long)r.steps,
                 (unsigned long long)st.captured_steps, (unsigned long long)st.captured_rows,
                 (unsigned long long)st.dropped_steps, (unsigned long long)st.first_gen_rows);
    if (!r.writers) {
        std::fprintf(out, "  writers: off\n");
        std::fflush(out);
        return 0;
    }
    const WritersOutcome& w = r.writers_outcome;
    const RawOutputCounters& rc = w.raw;
    // Every admitted generation: one raw output and one perf record; every request begun:
    // a request line and a response line.
    const tools::WriterAccount accounts[] = {
        {"raw output", c.generations, w.reports[0].stats, w.reports[0].drained,
         rc.hook_failures + rc.not_recorded + rc.released_empty},
        {"request trace", 2 * c.requests, w.reports[1].stats, w.reports[1].drained, 0},
        {"perf metrics", c.generations, w.reports[2].stats, w.reports[2].drained, 0},
    };
    std::fprintf(out, "\n");
    const tools::AccountingVerdict v = tools::print_accounting(out, accounts, r.seconds);
    bool lost = v.unaccounted != 0;
    tools::DiskCheck disk[3];
    for (std::size_t i = 0; i < 3; ++i) {
        disk[i].name = accounts[i].name;
        disk[i].dir = o.model.out / tools::demo_kinds[i];
        disk[i].written = w.reports[i].stats.written;
        disk[i].unknown = w.reports[i].stats.unknown;
        disk[i].sink = w.sinks[i];
    }
    tools::read_back(disk);
    if (tools::print_disk_check(out, disk) != 0) lost = true;
    std::fprintf(out,
                 "per-token data: %llu token positions written without it (steps the stage "
                 "dropped or never delivered), %llu aborted outputs released with no token\n",
                 (unsigned long long)rc.tokens_without_data, (unsigned long long)rc.released_empty);
    std::fflush(out);
    if (lost) return 1;
    return v.dropped != 0 || v.unknown != 0 || !v.drained ? 3 : 0;
}

}  // namespace jsonlw::serve
