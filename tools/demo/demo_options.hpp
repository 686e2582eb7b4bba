// jsonlw demo's command line (documented in `jsonlw --help`).
#pragma once

#include <jsonlw/capture.hpp>
#include <jsonlw/line_chain.hpp>
#include <jsonlw/otlp_options.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace jsonlw::tools {

struct DemoOptions {
    std::uint64_t requests = 2000;     // --requests N
    double rate = 500;                 // --rate R: Poisson arrivals per second
    std::size_t concurrency = 64;      // --concurrency C: requests decoding at once
    std::uint32_t vocab = 32000;       // --vocab V
    std::uint64_t seed = 1;            // --seed S: same seed, same tokens and lengths
    std::filesystem::path out = "jsonlw-out";  // --out DIR
    snapshot::Backend backend = snapshot::Backend::automatic;  // --backend auto|cpu|cuda
    std::uint32_t min_tokens = 8;      // --tokens MIN-MAX: output length, uniform
    std::uint32_t max_tokens = 64;
    int top_k = 5;                     // --top-k K: alternatives recorded per token
    snapshot::LogitDType dtype = snapshot::LogitDType::bf16;  // --dtype f32|f16|bf16
    std::uint32_t step_us = 1000;      // --step-us U: the model's forward pass per decode step
    std::uint32_t first_gen_every = 10;  // --first-gen-every N: whole first-token rows of every
                                         // Nth request (0: none)
    // Files for shippers (docs/shipping.md):
    // Content (docs/writers.md, "Content capture"):
    Capture capture = Capture::full;   // --capture full|metadata: the raw-output and
                                       // request-trace writers' capture level
    // Output format (docs/otlp.md): --format jsonl|otlp, all three writers.
    LineFormat format = LineFormat::jsonl;
    bool envelope = false;             // --envelope: {"seq","writer"} on every line of all three
                                       // writers, and <out>/writers.json after close
    ChainMode chain = ChainMode::none;  // --chain none|sha256|hmac-sha256: all three writers'
                                        // lines carry the hash chain (docs/chain.md)
    std::optional<ChainKey> chain_key{};  // --chain-key FILE: hmac-sha256's key, read at parse
    std::uint64_t rotate_bytes = 0;    // --rotate-bytes N: the perf-metrics file rotates past N
                                       // bytes (0: never)
    std::uint64_t rotate_interval_ms = 0;  // --rotate-interval-ms N: ... or after N ms (0: never)
    // Retention (docs/sinks.md), the same for all three writers' sinks: closed files only.
    std::uint64_t retain_files = 0;    // --retain-files N: keep at most N closed files (0: all)
    std::uint64_t retain_bytes = 0;    // --retain-bytes N: ... at most N bytes of them (0: all)
    std::uint64_t retain_age_ms = 0;   // --retain-age-ms N: delete closed files after N ms
    bool kafka = false;                // --kafka: also ship every line through a KafkaSink
                                       // to an in-process mock cluster, and read it back
    // Load and faults (docs/reliability.md, "The main job under overload"):
    int ring_slots = 16;               // --ring-slots N: the snapshot stage's result slots
    int stage_threads = 0;             // --stage-threads N: CPU backend threads computing rows,
                                       // the engine's included (0: the stage's default)
    int stage_nice = 10;               // --stage-nice N: added to the row workers' nice value
    std::uint32_t stage_wait_ms = 5;   // --stage-wait-ms W: capture() waits up to W ms for a
                                       // free slot before it drops the step (0: drop at once):
                                       // with --step-us 0 a step lasts ~0.2 ms, so the ring's
                                       // 16 slots are 3 ms of slack a scheduling hiccup eats
    std::size_t writer_queue = 0;      // --writer-queue N: queue capacity of the raw-output and
                                       // request-trace writers (0: the demo's defaults; perf
                                       // metrics keeps TensorRT-LLM's 1024)
    std::uint32_t slow_disk_us = 0;    // --slow-disk-us U: every append waits U us first
    std::uint32_t server_us = 0;       // --server-us U: the server spends U us of CPU per step
    std::filesystem::path summary_json{};  // --summary-json FILE: the accounting as JSON
                                           // (jsonlw-bench --scenario serving-overload)
    bool thread_stats = false;         // --thread-stats: per-thread CPU, run-queue wait and
                                       // context switches at the end (Linux /proc)
};

// The three writers' folders under --out, in the order of the summaries' rows (writers.json
// and the Kafka topics use them as the kind's name).
inline constexpr const char* demo_kinds[] = {"raw_output", "request_trace", "perf_metrics"};

// Parses the arguments after "demo". On an error returns false with a one-line reason.
bool parse_demo_options(std::span<char*> args, DemoOptions& o, std::string& error);

}  // namespace jsonlw::tools
