// `jsonlw report DIR`: reads every *.jsonl under DIR (parts of files in parallel, each line
// parsed once with a reused simdjson DOM parser), tells record kinds apart by content, and
// gathers integrity, perf-metrics, raw-output and request-trace figures into one Report,
// which report_text / report_json / report_html print. build_report() is the library entry
// point (the demo and the bench call it); report_main() is the command.
#pragma once

#include "progress.hpp"
#include "report_perf.hpp"
#include "report_raw.hpp"
#include "report_read.hpp"
#include "report_stats.hpp"
#include "report_trace.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
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

    // Summaries of the samples above (filled by build_report; samples are sorted).
    std::array<std::array<Summary, span_count>, perf_source_count> perf_summary{};
    Summary frames_per_output, tokens_per_output, mean_logprob_per_output;

    std::uint64_t bytes = 0, lines = 0, valid = 0, malformed = 0, torn_tails = 0;
    unsigned threads = 0;
    double seconds = 0;  // reading and parsing, wall clock

    // Malformed lines, unreadable files or a sidecar that does not verify: exit status 1.
    bool has_integrity_problems() const noexcept;
};

// Never throws for bad data (it is counted); throws std::runtime_error if DIR is not a
// readable directory, and passes on std::bad_alloc.
Report build_report(const ReportOptions& options);

}  // namespace jsonlw::tools
