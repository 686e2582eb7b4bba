#include "demo_accounting.hpp"

#include <jsonlw/json_line.hpp>
#include <jsonlw/report/report.hpp>

#include <cstdlib>
#include <fstream>

namespace jsonlw::tools {

AccountingVerdict print_accounting(std::FILE* out, std::span<const WriterAccount> writers,
                                   double seconds)
{
    AccountingVerdict v;
    std::fprintf(out, "\n%-14s %9s %9s %9s %8s %12s %10s %8s\n", "writer", "expected", "written",
                 "dropped", "unknown", "unaccounted", "records/s", "MB");
    for (const WriterAccount& w : writers) {
        const WriterStats& s = w.stats;
        const std::int64_t missing = w.unaccounted();
        std::fprintf(out, "%-14s %9llu %9llu %9llu %8llu %12lld %10.0f %8.2f\n", w.name,
                     (unsigned long long)w.expected, (unsigned long long)s.written,
                     (unsigned long long)w.dropped(), (unsigned long long)s.unknown,
                     (long long)missing, seconds > 0 ? double(s.written) / seconds : 0.0,
                     double(s.bytes) / 1e6);
        if (w.dropped())
            std::fprintf(out,
                         "  dropped by reason: queue_full %llu, oldest_evicted %llu, malformed %llu, "
                         "write_error %llu, shutdown %llu, unexpected %llu, closed %llu, "
                         "at the hook %llu\n",
                         (unsigned long long)s.dropped.queue_full,
                         (unsigned long long)s.dropped.oldest_evicted,
                         (unsigned long long)s.dropped.malformed,
                         (unsigned long long)s.dropped.write_error,
                         (unsigned long long)s.dropped.shutdown,
                         (unsigned long long)s.dropped.unexpected,
                         (unsigned long long)s.dropped.closed, (unsigned long long)w.hook_lost);
        v.unaccounted += std::uint64_t(std::llabs(missing));
        v.dropped += w.dropped();
        v.unknown += s.unknown;
        v.drained = v.drained && w.drained;
    }
    std::fprintf(out, "accounting: %s\n",
                 v.unaccounted == 0
                     ? "every record written or dropped with a counted reason "
                       "(expected = written + dropped + unknown)"
                     : "RECORDS UNACCOUNTED FOR (expected != written + dropped + unknown)");
    return v;
}

bool write_summary_json(const std::filesystem::path& file, double seconds, std::uint64_t requests,
                        std::span<const WriterAccount> writers, const StageAccount& stage)
{
    LineBuffer buf;
    JsonLine j(buf);
    j.begin_object().field("seconds", seconds).field("requests", requests);
    j.key("writers").begin_array();
    for (const WriterAccount& w : writers) {
        const DropCounts& d = w.stats.dropped;
        j.begin_object()
            .field("name", std::string_view(w.name))
            .field("expected", w.expected)
            .field("written", w.stats.written)
            .field("dropped", w.dropped())
            .field("unknown", w.stats.unknown)
            .field("unaccounted", w.unaccounted())
            .field("drained", w.drained);
        j.key("dropped_by_reason")
            .begin_object()
            .field("queue_full", d.queue_full)
            .field("oldest_evicted", d.oldest_evicted)
            .field("malformed", d.malformed)
            .field("write_error", d.write_error)
            .field("shutdown", d.shutdown)
            .field("unexpected", d.unexpected)
            .field("closed", d.closed)
            .field("at_the_hook", w.hook_lost)
            .end_object();
        j.end_object();
    }
    j.end_array();
    j.key("stage")
        .begin_object()
        .field("steps", stage.steps)
        .field("captured", stage.captured)
        .field("dropped_steps", stage.dropped_steps)
        .field("dropped_rows", stage.dropped_rows)
        .field("slot_waits", stage.slot_waits)
        .field("slot_wait_timeouts", stage.slot_wait_timeouts)
        .field("slot_wait_us", stage.slot_wait_us)
        .field("tokens_without_data", stage.tokens_without_data)
        .field("token_data_orphaned", stage.token_data_orphaned)
        .end_object();
    j.end_object();
    buf.push_back('\n');
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f.write(buf.data(), std::streamsize(buf.size()));
    f.close();
    return bool(f);
}

void read_back(std::span<DiskCheck> writers)
{
    for (DiskCheck& w : writers) {
        std::error_code ec;
        if (!std::filesystem::is_directory(w.dir, ec)) continue;  // nothing on disk: found 0
        try {
            ReportOptions ro;
            ro.dir = w.dir;
            ro.progress.enabled = false;
            const Report r = build_report(ro);
            w.found = r.valid;
            w.malformed = r.malformed;
            w.torn_tails = r.torn_tails;
        } catch (const std::exception& e) {
            w.error = e.what();
        }
    }
}

std::uint64_t print_disk_check(std::FILE* out, std::span<const DiskCheck> writers)
{
    std::fprintf(out, "\non disk (read back as `jsonlw report` reads it):\n");
    std::fprintf(out, "  %-14s %10s %10s %10s %10s %10s %11s %11s %12s\n", "writer", "written",
                 "on disk", "deleted", "removed", "moved", "reappended", "rolled-back",
                 "unaccounted");
    std::uint64_t bad = 0;
    for (const DiskCheck& w : writers) {
        const FileSinkCounters& c = w.sink;
        std::fprintf(out, "  %-14s %10llu %10llu %10llu %10llu %10llu %11llu %11llu %12lld\n",
                     w.name, (unsigned long long)w.written, (unsigned long long)w.found,
                     (unsigned long long)c.records_deleted, (unsigned long long)c.records_removed,
                     (unsigned long long)c.records_moved,
                     (unsigned long long)c.records_reappended,
                     (unsigned long long)c.appends_rolled_back, (long long)w.unaccounted());
        if (c.files_deleted > 0)
            std::fprintf(out, "    retention deleted %llu closed files (%llu bytes)\n",
                         (unsigned long long)c.files_deleted, (unsigned long long)c.bytes_deleted);
        if (c.reopened_removed + c.reopened_moved > 0)
            std::fprintf(out, "    files found removed %llu times, moved away %llu times: "
                              "reopened at their paths\n",
                         (unsigned long long)c.reopened_removed,
                         (unsigned long long)c.reopened_moved);
        if (!w.error.empty()) {
            std::fprintf(out, "    cannot read %s: %s\n", w.dir.c_str(), w.error.c_str());
            bad += w.written;
            continue;
        }
        if (w.malformed + w.torn_tails > 0)
            std::fprintf(out, "    %llu malformed lines, %llu files ending in a torn line\n",
                         (unsigned long long)w.malformed, (unsigned long long)w.torn_tails);
        bad += static_cast<std::uint64_t>(std::llabs(w.unaccounted())) + w.malformed +
               w.torn_tails;
    }
    if (bad != 0)
        std::fprintf(out, "  unaccounted: %llu records counted written are not where a reader "
                          "finds them (or lines are there that nobody counted)\n",
                     (unsigned long long)bad);
    return bad;
}

}  // namespace jsonlw::tools
