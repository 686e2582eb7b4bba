// jsonlw demo's closing summary (demo_summary.hpp).
#include "demo_summary.hpp"

#include "demo_accounting.hpp"

#include <jsonlw/json_line.hpp>
#include <jsonlw/report/report.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string_view>

namespace jsonlw::tools {
namespace {

// With --envelope: <out>/writers.json, what each writer says it wrote and dropped, so
// that a loader of the collected files can check per writer that
// max(seq) + 1 - count(*) == seq_gaps (a gap: lines lost after the writer).
bool write_writers_json(const DemoOptions& o, const DemoOutcome& r)
{
    LineBuffer buf;
    JsonLine j(buf);
    j.begin_array();
    for (std::size_t i = 0; i < 3; ++i) {
        const WriterStats& s = r.reports[i].stats;
        j.begin_object()
            .field("kind", demo_kinds[i])
            .field("writer", r.writer_ids[i])
            .field("submitted", s.submitted)
            .field("written", s.written)
            .field("seq_gaps", s.dropped.seq_gaps())
            .field("unknown", s.unknown);
        // The single-file layout's files, relative to --out (the hour-folder writers
        // have no such list).
        if (std::string_view(demo_kinds[i]) == "perf_metrics") {
            j.key("files").begin_array();
            for (const auto& f : r.perf_files) j.string(f.lexically_relative(o.out).string());
            j.end_array();
        }
        j.end_object();
    }
    j.end_array();
    buf.push_back('\n');
    const auto path = o.out / "writers.json";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(buf.data(), std::streamsize(buf.size()));
    f.close();
    if (!f) {
        std::fprintf(stderr, "jsonlw demo: cannot write %s\n", path.c_str());
        return false;
    }
    return true;
}

}  // namespace

int summarize(const DemoOptions& o, const DemoOutcome& r, KafkaShip* kafka)
{
    std::printf("jsonlw demo: %llu requests, %llu decode steps in %.2f s "
                "(snapshot backend %s, %s logits, vocab %u, concurrency %zu, seed %llu)\n",
                (unsigned long long)r.finished, (unsigned long long)r.steps, r.seconds,
                snapshot::to_string(r.backend), snapshot::dtype_name(o.dtype), unsigned(o.vocab),
                o.concurrency,
                (unsigned long long)o.seed);
    const RawOutputCounters& rc = r.raw;
    const auto& reports = r.reports;
    const WriterAccount accounts[] = {
        {"raw output", o.requests, reports[0].stats, reports[0].drained,
         rc.hook_failures + rc.not_recorded + rc.released_empty},
        {"request trace", 2 * o.requests, reports[1].stats, reports[1].drained, 0},
        {"perf metrics", o.requests, reports[2].stats, reports[2].drained, 0},
    };
    const AccountingVerdict v = print_accounting(stdout, accounts, r.seconds);
    bool lost = v.unaccounted != 0;
    DiskCheck disk[3];
    std::uint64_t gone_by_others = 0;
    for (std::size_t i = 0; i < 3; ++i) {
        disk[i].name = accounts[i].name;
        disk[i].dir = o.out / demo_kinds[i];
        disk[i].written = reports[i].stats.written;
        disk[i].unknown = reports[i].stats.unknown;
        disk[i].sink = r.sinks[i];
        gone_by_others += r.sinks[i].records_removed + r.sinks[i].records_moved;
    }
    read_back(disk);
    if (print_disk_check(stdout, disk) != 0) lost = true;
    const snapshot::SnapshotStats& st = r.stage;
    std::printf("\nsnapshot stage (%s): %llu steps, %llu captured (%llu rows), %llu dropped "
                "(%.2f %%, %llu rows); %llu waited for a slot (%.1f ms in all, %llu still "
                "dropped); %llu first-gen rows (%llu dropped)\n",
                snapshot::to_string(st.backend), (unsigned long long)r.steps,
                (unsigned long long)st.captured_steps, (unsigned long long)st.captured_rows,
                (unsigned long long)st.dropped_steps,
                r.steps ? 100.0 * double(st.dropped_steps) / double(r.steps) : 0.0,
                (unsigned long long)st.dropped_rows, (unsigned long long)st.slot_waits,
                double(st.slot_wait_us) / 1e3, (unsigned long long)st.slot_wait_timeouts,
                (unsigned long long)st.first_gen_rows, (unsigned long long)st.first_gen_dropped);
    std::printf("per-token data: %llu token positions written without it (null, counted in "
                "logprobs_missing), %llu rows of results that found no output\n",
                (unsigned long long)rc.tokens_without_data,
                (unsigned long long)rc.token_data_orphaned);
    if (o.capture == Capture::metadata)
        std::printf("content capture: metadata: %llu raw-output records and %llu request-trace "
                    "lines written with lengths and SHA-256 digests in place of their content\n",
                    (unsigned long long)rc.metadata_captured,
                    (unsigned long long)r.trace_metadata_captured);
    if (!o.summary_json.empty()) {
        const StageAccount sa{r.steps, st.captured_steps, st.dropped_steps, st.dropped_rows,
                              st.slot_waits, st.slot_wait_timeouts, st.slot_wait_us,
                              rc.tokens_without_data, rc.token_data_orphaned};
        if (!write_summary_json(o.summary_json, r.seconds, r.finished, accounts, sa)) {
            std::fprintf(stderr, "jsonlw demo: cannot write %s\n", o.summary_json.c_str());
            lost = true;
        }
    }
    if (o.thread_stats) {
        std::printf("\nthreads (Linux /proc schedstat and status, when the engine stopped):\n");
        print_thread_stats(stdout, r.thread_stats);
    }
    if (kafka && !kafka->summarize(o.out)) lost = true;
    if (o.envelope && !write_writers_json(o, r)) lost = true;
    std::printf("\nfiles under %s:\n", o.out.c_str());
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(o.out))
        if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
        std::printf("  %s (%s)\n", f.lexically_relative(o.out).c_str(),
                    format_bytes(double(std::filesystem::file_size(f))).c_str());
    std::fflush(stdout);
    if (lost) return 1;
    return v.dropped != 0 || v.unknown != 0 || !v.drained || gone_by_others != 0 ? 3 : 0;
}

}  // namespace jsonlw::tools
