// jsonlw demo's closing summary: the run, each writer's accounting, the snapshot stage, the
// files; and, with --envelope, <out>/writers.json.
#pragma once

#include "demo_kafka.hpp"
#include "demo_options.hpp"
#include "thread_stats.hpp"

#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace jsonlw::tools {

// What the summary reads once the writers are closed (the demo's loop thread). The reports
// and writer ids are in the order of demo_kinds: raw output, request trace, perf metrics.
struct DemoOutcome {
    double seconds = 0;
    std::uint64_t finished = 0;  // requests answered
    std::uint64_t steps = 0;     // decode steps
    snapshot::Backend backend{};
    snapshot::SnapshotStats stage{};
    RawOutputCounters raw{};
    std::uint64_t trace_metadata_captured = 0;  // RequestTraceWriter::metadata_captured()
    std::array<CloseReport, 3> reports{};
    std::array<std::string, 3> writer_ids{};
    std::vector<std::filesystem::path> perf_files;  // the perf-metrics writer's files
    std::array<FileSinkCounters, 3> sinks{};        // the writers' file sinks' counters
    std::vector<ThreadStat> thread_stats;           // with --thread-stats
};

// Prints the summary to stdout (and writes --summary-json, writers.json, and the Kafka
// check when asked for). Returns the exit status: 0 every record written and on disk (or
// deleted by retention); 3 every record accounted for, some dropped (or unknown) with a
// counted reason, or removed or moved away from disk by someone else (counted by the sink);
// 1 records unaccounted for — by the writers' counters, or on disk (demo_accounting.hpp) — a
// file that could not be written, or a Kafka topic short.
int summarize(const DemoOptions& o, const DemoOutcome& r, KafkaShip* kafka);

}  // namespace jsonlw::tools
