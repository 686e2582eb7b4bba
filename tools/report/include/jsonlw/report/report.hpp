// The report engine's one public header (library jsonlw_report, tools/report/): `jsonlw
// report DIR` reads every *.jsonl under DIR (parts of files in parallel, each line parsed once
// with a reused simdjson DOM parser), tells record kinds apart by content, and gathers
// integrity, perf-metrics, raw-output and request-trace figures (and how the three writers'
// lines join by traceparent) into one Report, which
// report_text / report_json / report_html print. build_report() is the library entry point
// (bench/ and the tests call it); report_main() is the command. The types a Report is made of,
// the line reader (`jsonlw validate` uses it) and the progress display (`jsonlw demo` uses it)
// are in detail/, included here: include this header, never those.
#pragma once

#include "detail/progress.hpp"
#include "detail/report_join.hpp"
#include "detail/report_perf.hpp"
#include "detail/report_raw.hpp"
#include "detail/report_read.hpp"
#include "detail/report_stats.hpp"
#include "detail/report_trace.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace jsonlw::tools {

struct ReportOptions {
    std::filesystem::path dir;
    // Reader threads; 0: one per hardware thread. Never more than there are parts to read.
    unsigned jobs = 0;
    // Files larger than this are read as several parts in parallel (bytes).
    std::uint64_t part_bytes = std::uint64_t{32} << 20;
    // Decode every first_gen_logits item fully (base64 included); default: shape checks only.
    bool verify_logits = false;
    ProgressOptions progress{};
};

struct Report {
    std::filesystem::path dir;
    std::vector<FileIntegrity> files;
    std::vector<std::string> errors;  // directory entries that could not be read
    std::vector<SidecarCheck> sidecars;

    PerfAccumulator perf;
    RawOutputAccumulator raw;
    TraceAccumulator trace;
    TraceparentJoin join;  // the three writers' lines by traceparent

    // Summaries of the samples above (filled by build_report; samples are sorted).
    std::array<std::array<Summary, span_count>, perf_source_count> perf_summary{};
    Summary frames_per_output, tokens_per_output, mean_logprob_per_output;

    // valid counts records: a line of OTLP JSON Lines (otlp_lines) holds several.
    std::uint64_t bytes = 0, lines = 0, valid = 0, malformed = 0, torn_tails = 0, otlp_lines = 0;
    unsigned threads = 0;
    double seconds = 0;  // reading and parsing, wall clock

    // Malformed lines, unreadable files or a sidecar that does not verify: exit status 1.
    bool has_integrity_problems() const noexcept;
};

// Never throws for bad data (it is counted); throws std::runtime_error if DIR is not a
// readable directory, and passes on std::bad_alloc.
Report build_report(const ReportOptions& options);

// The three ways a Report is printed: a text summary (report_text.cpp), the same figures as
// one JSON object (report_json.cpp), and a self-contained HTML page with inline SVG figures
// (report_html.cpp). Pure functions of the Report.
std::string report_text(const Report& r);
std::string report_json(const Report& r);
// One page, no network: inline CSS and SVG. One <svg> per <figure>: a latency histogram per
// headline figure with samples, and the per-request timeline of the first 200 requests.
std::string report_html(const Report& r);

// Which spans the outputs show for a source: the applicable ones that saw any line.
bool span_shown(const Report& r, PerfSource src, Span s) noexcept;

// The throughput yardstick for `jsonlw report` (report_baseline.cpp): a bare simdjson
// iterate_many pass (on-demand, one thread, documents counted and not read) over the same
// files. bench/ calls it next to build_report() for the side-by-side figure; `jsonlw report
// --bench-baseline DIR` prints both.
struct BaselineResult {
    std::uint64_t bytes = 0;
    std::uint64_t documents = 0;
    std::uint64_t truncated_bytes = 0;  // torn tails, as iterate_many reports them
    double seconds = 0;                 // loading the files and the pass
    std::string error;                  // the first file iterate_many stopped on, if any

    double mb_per_s() const noexcept { return seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0; }
};

// Loads each file (padded_string::load) and runs ondemand::parser::iterate_many over it.
// Stops at a file's first malformed document (iterate_many cannot go past it).
BaselineResult iterate_many_baseline(const std::vector<std::filesystem::path>& files);

// `jsonlw report` (report_cli.cpp): takes the arguments after "report" and returns the exit
// status documented in `jsonlw --help` (tools/main.cpp dispatches to it).
int report_main(std::span<char*> args);

}  // namespace jsonlw::tools
