// The scenarios: each alternates jsonlw and its baselines (A B A B ..., a warm-up round first),
// then adds a section per measured cell, and its goals, to the report.
#pragma once

#include "report.hpp"

#include <cstddef>
#include <filesystem>
#include <string>

namespace bench {

struct Config {
    bool quick = false;
    std::size_t records = 2'000'000;  // throughput: records of 250 B; larger ones: same bytes
    int pairs = 5;                    // measured rounds after the warm-up
    int warmups = 1;
    std::filesystem::path dir;        // an empty work directory under $TMPDIR
    double serve_rate = 0;            // serve-cost: arrivals/s of the fixed-rate cell (0: half
                                      // the capacity measured first)
    bool h2load = false;              // serve-cost: also saturation measured by h2load
    std::string cell_filter;          // throughput: only cells "throughput <writer> <size> x<n>"
                                      // containing it (the others' rows: skipped)
};

// Overload runs each variant in a forked child, so it must run while this process has no
// other thread (main runs it first).
void overload_scenario(const Config& cfg, Report& report);
void throughput_scenario(const Config& cfg, Report& report);
// WriterOptions::serializer_threads 1, 2, 4, 8 (up to the cores there are), same cells.
void serializers_scenario(const Config& cfg, Report& report);
void submit_scenario(const Config& cfg, Report& report);
// submit()'s tail: p50/p99/p99.9/max and the caller's page faults at 50,000 and 500,000
// calls/s, queues of 1,024, 2^16 and 2^21 records, off and on the loop thread, every call
// timed; a Quill-style frontend (preallocated SPSC ring, polling backend) beside it; and what
// starting each queue costs.
void submit_tail_scenario(const Config& cfg, Report& report);
void drain_scenario(const Config& cfg, Report& report);
// What FileSink's check for a removed or moved file (fstat + stat) costs a batch.
void file_check_scenario(const Config& cfg, Report& report);
void serialization_scenario(const Config& cfg, Report& report);
// LineFormat::otlp next to JSON Lines: serialize() alone vs serialize() + OtlpSink, per record.
void otlp_cost_scenario(const Config& cfg, Report& report);
// A trace context on the perf-metrics and raw-output records, capture = metadata on the raw
// output: serialize() off vs on, per record.
void record_features_scenario(const Config& cfg, Report& report);
// The snapshot stage's CPU backend: rows/s and GB/s of logits read, next to memcpy.
void snapshot_scenario(const Config& cfg, Report& report);
// The CPU backend's row kernel on one thread: reference_row, fast_row per SIMD path, a read
// pass and an exp floor over the same rows; then 64 rows through the backend on every core.
void snapshot_rows_scenario(const Config& cfg, Report& report);
// jsonlw report over demo output (1 GB; --quick 64 MB) next to a bare iterate_many pass.
void report_scenario(const Config& cfg, Report& report);
// The main job past its load: jsonlw demo at 1x, 2x, 4x the rate it sustains without drops.
void serving_overload_scenario(const Config& cfg, Report& report);

// What the three writers cost `jsonlw serve` (writers off vs on, alternating): client-side
// TTFT and end-to-end latency at a fixed rate, requests/s and tokens/s at saturation, and
// the loop thread's CPU per request.
void serve_cost_scenario(const Config& cfg, Report& report);

// The hash chain (docs/chain.md): LineChain::seal per 1 KiB line, and RawJsonWriter with
// chain none vs sha256 on the same records.
void chain_scenario(const Config& cfg, Report& report);

// Progress on stderr: "[  12 s] text".
void progress(const std::string& text);

// The callgrind entry: `iterations` records of one serialize kind, nothing else timed.
// Kinds: raw-250, raw-250-padded, raw-1k, raw-4k, raw-seed, memcpy-250, jsonline-seed, fmt-seed.
bool callgrind_serialize(const std::string& kind, std::size_t iterations);

// The profiling entry: one jsonlw run of a scenario, with its result on stderr. Kinds:
// raw-250, raw-1k, raw-4k (throughput, 1 producer, cfg.records of 250 B worth), perf-seed,
// drain, submit (from another thread), submit-loop (on the loop thread).
bool profile_run(const std::string& kind, const Config& cfg);

}  // namespace bench
