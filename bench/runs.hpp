// One measured run of one variant — jsonlw or a baseline — for each scenario. Each run starts
// and ends in an empty directory, checks what reached the file, and reports a problem (never
// throws) when the file or the counters are not what they must be.
#pragma once

#include "line_pool.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// --- Throughput: N records from P producers, timed from the first submit until every byte is
// in the file (closed). ---
struct ThroughputSpec {
    const LinePool* pool = nullptr;
    std::size_t records = 0;
    int producers = 1;
    std::filesystem::path dir;
    const std::string* prebuilt = nullptr;  // the write() limit's buffer (records lines)
    std::size_t serializers = 1;            // jsonlw: WriterOptions::serializer_threads
    bool submit_view = false;  // RawJsonWriter: submit(std::string_view), no string built
    // RawJsonWriter, not submit_view: the string's buffer handed over whatever its length
    // (RawJsonText::take_buffer_t), freed on the I/O thread — submit(std::string&&) before it
    // copied short texts into the cell.
    bool hand_over = false;
};

struct ThroughputResult {
    double seconds = 0;
    std::uint64_t lines = 0;  // in the file afterwards
    std::uint64_t bytes = 0;
    std::uint64_t lost = 0;   // lines the variant did not write (spdlog overrun_oldest)
    std::string problem;      // empty: the file holds what it must
    std::uint64_t switches = 0;  // voluntary context switches of the process during the run
};

// trusted: RawJsonValidation::trusted (default: full validation).
ThroughputResult jsonlw_raw_throughput(const ThroughputSpec& s, bool trusted = false);

// The configured writers, fed typed records. `lines` holds exactly the lines the writer writes
// for them (taken from a calibration run), so the baselines append the same bytes.
struct WriterWorkload {
    enum class Kind { perf_metrics, raw_output } kind = Kind::perf_metrics;
    std::string name;                       // "PerfMetricsWriter", ...
    LinePool lines;
    std::shared_ptr<const void> records;    // the typed records (writer_workloads.cpp)
    std::size_t calls_per_record = 1;       // raw_output: on_chunk() calls per record
    std::string problem;                    // the calibration failed
};
// The seed record (the aggregated worker example of support/perf_metrics_reference.hpp) plus
// `extra_steps` more step_metrics entries (about 190 B each).
WriterWorkload perf_metrics_workload(std::size_t extra_steps);
// Outputs of about `line_bytes` (text, 4 frames, token ids), each fed as 4 on_chunk() calls.
WriterWorkload raw_output_workload(std::size_t line_bytes, const std::filesystem::path& dir);
// submit()/on_chunk() from the producers; the writer's own overflow policy (see the notes).
ThroughputResult writer_throughput(const WriterWorkload& w, const ThroughputSpec& s);
// PerfMetricsWriter's equal-work baseline: each producer fmt::format_to()s the same record
// into the same bytes (checked against the writer's line), then fprintf()s it under a mutex.
ThroughputResult perf_fmt_throughput(const WriterWorkload& w, const ThroughputSpec& s);
// RawOutputWriter's: each producer accumulates the output's 4 chunks and fmt::format_to()s
// a line with the same fields (checked against the writer's, timestamps aside), then
// fprintf()s it under a mutex.
ThroughputResult raw_output_fmt_throughput(const WriterWorkload& w, const ThroughputSpec& s);
// serialize() of the workload's first record, CPU seconds for `iterations` records.
double writer_serialize_seconds(const WriterWorkload& w, std::size_t iterations);
ThroughputResult write_limit_throughput(const ThroughputSpec& s);
ThroughputResult fprintf_throughput(const ThroughputSpec& s);
// fprintf_throughput, but each producer builds a std::string per record first (malloc, copy,
// free: the work jsonlw's submit(std::string&&) rows have their producers do).
ThroughputResult fprintf_owned_throughput(const ThroughputSpec& s);
// The same guarantee as RawJsonWriter's full validation, by hand: each producer parses the
// line with simdjson (DOM: the whole line, UTF-8 included; an object), minifies it, then
// fprintf()s it under a std::mutex. A line that fails is counted and not written.
ThroughputResult fprintf_validated_throughput(const ThroughputSpec& s);
enum class SpdlogMode { async_block, async_overrun_oldest, sync };
ThroughputResult spdlog_throughput(const ThroughputSpec& s, SpdlogMode mode);

// --- Submit cost: one producer (the calling thread) at a steady rate below saturation; one
// call in `sample_every` timed, the record built before the timed call. ---
struct SubmitCostSpec {
    const LinePool* pool = nullptr;
    double rate_per_s = 50000;
    double seconds = 1;
    std::size_t sample_every = 64;
    std::filesystem::path dir;
    unsigned flush_interval_ms = 0;  // jsonlw only: WriterOptions::flush_interval
    unsigned idle_poll_us = 1000;    // jsonlw only: WriterOptions::idle_poll
    unsigned idle_poll_max_us = 0;   // jsonlw only: WriterOptions::idle_poll_max (0: the default)
    bool from_loop = false;          // jsonlw only: call submit() from the io_context's thread
    // jsonlw only: between two calls, at the same rate, a push of the same line into a bare
    // ring of the same capacity (bare_ring.hpp), timed into `floor_ns`: the floor measured in
    // the same moments as the calls, on the same thread.
    bool beside_floor = false;
    // jsonlw only, how the caller hands the line over: a std::string built before the timed
    // call and moved in; submit(std::string(line)) (the string's allocation timed); or
    // submit(std::string_view) (the writer copies the bytes into its queue cell).
    enum class Form { moved_string, string_in_call, view } form = Form::moved_string;
    // The first calls warm caches (Asio's per-thread handler cache, page faults): neither
    // timed nor counted in `allocations` (they go to warmup_allocations).
    std::size_t warmup_calls = 1000;
    // jsonlw only: WriterOptions::queue_capacity, batch_records; Overflow::block (else the
    // default drop_newest). The Quill-style baseline: its ring's bytes.
    std::size_t queue_capacity = 1024;
    std::size_t batch_records = 64;
    bool block = false;
    std::size_t ring_bytes = 128 * 1024;
};

struct SubmitCostResult {
    std::vector<double> ns;      // the timed calls
    std::vector<double> floor_ns;  // beside_floor: the bare pushes between them
    std::uint64_t calls = 0;     // all calls (timed or not)
    std::uint64_t allocations = 0;  // operator new calls inside the calls, on the caller's thread
    std::uint64_t warmup_allocations = 0;  // the same during the warm-up calls
    std::uint64_t refused = 0;   // calls that did not accept the record (should be 0)
    double achieved_rate = 0;    // calls per second actually made
    std::uint64_t minor_faults = 0;  // page faults the calling thread took after the warm-up
    double start_ms = 0;         // jsonlw: constructing and starting the writer
    double start_rss_mib = 0;    // jsonlw: resident memory that added (VmRSS after - before)
    std::string problem;
};

SubmitCostResult jsonlw_raw_submit_cost(const SubmitCostSpec& s);
// A writer with the default options (but `flush_interval`) left idle for `seconds` after one
// record (its drain polling every idle_poll, backing off to idle_poll_max or flush_interval):
// the process's CPU time over that spell (nothing else runs), and how long a record submitted
// then took to be written (stats().written, polled every 50 us).
struct IdleCostResult {
    double cpu_share = 0;       // CPU seconds / wall seconds (1 = one core)
    double wake_ms = 0;         // submit() after the spell until the record is written
    std::uint64_t wakeups = 0;  // wake-ups producers posted to the drain (drain_wakeups())
    std::string problem;
};
IdleCostResult jsonlw_idle_cost(const std::filesystem::path& dir, double seconds,
                                std::chrono::milliseconds flush_interval = {});

// Constructing and starting a RawJsonWriter of `capacity` records (default options otherwise;
// WriterOptions::huge_pages as given), then closing it unused: the time the constructor and
// start() took, the resident memory they added, and how much of it sits in transparent huge
// pages (AnonHugePages after - before).
struct StartCostResult {
    double ms = 0;
    double rss_mib = 0;
    double huge_mib = 0;
    std::string problem;
};
StartCostResult jsonlw_start_cost(const std::filesystem::path& dir, std::size_t capacity,
                                  bool huge_pages);

// A Quill-style frontend: the caller copies the line into a preallocated single-producer
// ring of s.ring_bytes (touched before the first call) that a thread of its own polls,
// sleeping 100 us when it finds it empty, and fwrite()s. No validation (bench/quill_style_runs.cpp).
SubmitCostResult quill_style_submit_cost(const SubmitCostSpec& s);
// The floor under jsonlw's submit(): the same push of the line into the same queue
// (BoundedRing<RawJsonText> of s.queue_capacity), no writer around it, a consumer thread
// popping every s.idle_poll_us and never reading the tail (bench/floor_runs.cpp); with
// `appends`, it also writes the lines it popped to a file, one write() a look.
SubmitCostResult ring_floor_submit_cost(const SubmitCostSpec& s, bool appends);
// The least a drain polling every `every` costs an idle process: a bare Asio timer set again
// from its handler on a bare io_context, for `seconds`; CPU seconds / wall seconds.
double timer_floor_cpu_share(std::chrono::microseconds every, double seconds);
SubmitCostResult fprintf_submit_cost(const SubmitCostSpec& s);
SubmitCostResult spdlog_submit_cost(const SubmitCostSpec& s, SpdlogMode mode);

// --- Overload: producers at full speed into a small queue for a fixed time. Run in a child
// process of its own (see in_child) so its peak RSS is its own. Plain data only. ---
enum class OverloadVariant { drop_newest, drop_oldest, block, spdlog_overrun_oldest, spdlog_block };

struct OverloadSpec {
    const LinePool* pool = nullptr;
    int producers = 2;
    double seconds = 5;
    std::size_t queue_capacity = 1024;
    std::filesystem::path dir;
};

struct OverloadResult {
    double seconds = 0;             // first submit until close completed
    std::uint64_t calls = 0;        // submit()/log() calls the producers made
    std::uint64_t accepted = 0;     // calls that returned accepted (jsonlw)
    std::uint64_t refused = 0;      // calls that returned dropped_queue_full (jsonlw)
    std::uint64_t submitted = 0;    // stats().submitted
    std::uint64_t written = 0;      // stats().written (jsonlw) or lines in the file (spdlog)
    std::uint64_t drop_queue_full = 0, drop_oldest_evicted = 0, drop_malformed = 0;
    std::uint64_t drop_write_error = 0, drop_shutdown = 0, drop_unexpected = 0, drop_closed = 0;
    std::uint64_t dropped_total = 0, unknown = 0, pending = 0;
    std::uint64_t lines = 0;        // in the file afterwards
    std::uint64_t lost = 0;         // spdlog: calls - lines
    long rss_start_kib = 0;         // ru_maxrss before the writer existed
    long rss_peak_kib = 0;          // ru_maxrss after close
    bool counts_exact = false;      // submitted == written + dropped + unknown, and all agree
    char problem[240] = {};
};

OverloadResult run_overload(OverloadVariant v, const OverloadSpec& s);
OverloadResult spdlog_overload(const OverloadSpec& s, bool block);  // queue = s.queue_capacity

// --- Drain at close: `records` queued while the io_context is not running yet; timed from
// async_close() until it completes. ---
struct DrainResult {
    double seconds = 0;
    std::uint64_t lines = 0;
    std::string problem;
};
DrainResult jsonlw_raw_drain(const LinePool& pool, std::size_t records,
                             const std::filesystem::path& dir);

// --- Serialization: ns per record of serialize() alone (no queue, no I/O). ---
// Each returns the CPU seconds (of the calling thread) `iterations` records took. The loops
// are also the callgrind entry points (bench::serialize_loop_*), see docs/benchmarks.md.
// alone: serialize() per record (a batch of one); alone_padded: the same with spare capacity
// for simdjson's padding; batch: batches of 64 validated as one stream (the engine's batch path);
// trusted: RawJsonValidation::trusted.
enum class RawPath { alone, alone_padded, batch, trusted };
double raw_serialize_seconds(const LinePool& pool, std::size_t iterations, RawPath path);
double memcpy_line_seconds(const LinePool& pool, std::size_t iterations);
double jsonline_seed_seconds(std::size_t iterations);
double fmt_seed_seconds(std::size_t iterations);
// The seed record's line as JsonLine builds it (to compare with TensorRT-LLM's golden line).
std::string jsonline_seed_line();

bool have_spdlog() noexcept;

// --- Snapshot stage, CPU backend: capture() of a [rows, vocab] batch, and the copy ceiling. ---
struct SnapshotInput {
    jsonlw::snapshot::LogitDType dtype = jsonlw::snapshot::LogitDType::f32;
    int rows = 0, vocab = 0;
    std::vector<std::byte> data;  // rows * vocab elements, normal(0, 3) logits
    std::vector<std::int32_t> sampled;
    std::vector<jsonlw::snapshot::RowMeta> meta;
};
SnapshotInput make_snapshot_input(jsonlw::snapshot::LogitDType dtype, int rows, int vocab,
                                  std::uint64_t seed);
struct SnapshotRunResult {
    double seconds = 0;
    std::uint64_t rows = 0;   // rows processed over all repetitions
    std::uint64_t bytes = 0;  // logits bytes read
    std::string problem;
};
// `reps` captures, timed together (the sink drops each batch at once).
SnapshotRunResult snapshot_cpu_run(jsonlw::snapshot::SnapshotStage& stage, const SnapshotInput& in,
                                   int reps);
// memcpy of the same bytes `reps` times, split over `threads` threads.
SnapshotRunResult copy_ceiling_run(const SnapshotInput& in, std::vector<std::byte>& dst, int reps,
                                   int threads);

// --- jsonlw report vs a bare iterate_many pass, over demo output (built with the tools). ---
struct ReportData {
    std::filesystem::path dir;   // work directory (removed by the caller)
    std::filesystem::path data;  // what is read: copies of one demo's output
    std::vector<std::filesystem::path> files;
    std::uint64_t bytes = 0;
    std::string problem;
};
// Runs `jsonlw demo` once into `dir`, then copies its output until target_bytes.
ReportData make_report_data(const std::filesystem::path& dir, std::uint64_t target_bytes);
struct ReportRunResult {
    double seconds = 0;
    std::uint64_t bytes = 0, lines = 0;
    std::string problem;
};
ReportRunResult report_run(const ReportData& d, unsigned jobs);  // jobs 0: every hardware thread
ReportRunResult iterate_many_run(const ReportData& d);

// --- serve-cost: one fresh `jsonlw serve` (writers on or off) per run under `dir`, removed
// afterwards; the client streams every request (built with the tools: serve_cost_runs.cpp). ---
struct ServeModel {
    std::uint32_t vocab = 32000, concurrency = 256, step_us = 1000;
    std::uint32_t min_tokens = 16, max_tokens = 64;
    int top_k = 5;                      // alternatives per token, asked for and recorded
    std::uint32_t first_gen_every = 10;  // whole first-token rows (writers on only)
};
struct ServeRunSpec {
    bool writers = false;
    ServeModel model;
    std::uint64_t requests = 0;
    double rate = 0;              // Poisson arrivals per second; 0: closed loop
    std::size_t connections = 64;
    std::filesystem::path dir;
};
struct ServeRunResult {
    double seconds = 0;  // the client's: first request to the last one's end
    std::uint64_t completed = 0, failed = 0, tokens = 0;  // tokens: received by the client
    double ttft_p50_ms = 0, ttft_p99_ms = 0, e2e_p50_ms = 0, e2e_p99_ms = 0;  // sent -> ...
    std::uint64_t server_requests = 0, server_tokens = 0;
    double loop_cpu_seconds = 0, loop_us_per_request = 0;
    // CPU seconds of the process's threads over the client's run (/proc/self/task): the
    // client (the calling thread), the loop, the engine with the stage's row workers, the
    // writers' I/O threads, the rest; and the time they sat runnable without a CPU.
    double client_cpu_s = 0, loop_thread_cpu_s = 0, engine_cpu_s = 0, writers_cpu_s = 0;
    double other_cpu_s = 0, runqueue_s = 0;
    std::uint64_t records_written = 0, records_dropped = 0;  // all three writers
    std::string problem;
};
// The built-in client (load_client.hpp) on the calling thread.
ServeRunResult serve_cost_run(const ServeRunSpec& s);
// h2load --h1 as a child process: `requests` identical streamed completions of the mean
// length over `connections` connections (closed loop; `rate` ignored).
ServeRunResult serve_cost_h2load_run(const ServeRunSpec& s);
bool have_h2load();

}  // namespace bench
