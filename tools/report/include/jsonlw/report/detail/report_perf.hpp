// The perf-metrics part of the report: the time-breakdown spans of TensorRT-LLM's
// tensorrt_llm/serve/scripts/time_breakdown/time_breakdown.py (the 12 disaggregated TTFT
// spans), the per-step and per-chunk spans of its perf-sanity aggregator
// (tests/integration/defs/perf/time_breakdown_metrics.py), and queue / TTFT / end-to-end / time
// per output token, all in milliseconds. A span whose start or end is missing (absent, null,
// not a number, <= 0) or inverted (end before start) is left out and counted, never
// reported as 0: a 0 would be indistinguishable from a measurement.
#pragma once

#include "report_stats.hpp"

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace jsonlw::tools {

// Which lines a figure comes from: the disaggregated server's lines and the workers' lines
// describe the same requests from two sides, so they are never mixed.
enum class PerfSource : std::uint8_t { disagg, worker };
inline constexpr std::size_t perf_source_count = 2;

// Every figure the perf part computes; see span_info() for each one's start and end.
enum class Span : std::uint8_t {
    disagg_preprocessing, ctx_preprocessing, ctx_queue, ctx_processing, ctx_postprocessing,
    disagg_relay, gen_preprocessing, gen_queue_wait, gen_kv_transfer, gen_post_transfer,
    gen_postprocessing, disagg_postprocessing,
    queue, ttft, e2e, tpot,
    chunk_forward, chunk_update, chunk_sample, chunk_postprocessing, chunk_gpu_forward,
    chunk_gpu_sample,
    step_forward, step_update, step_sample, step_postprocessing, step_gpu_forward,
    step_gpu_sample,
};
inline constexpr std::size_t span_count = 28;

struct SpanInfo {
    const char* name;
    const char* from;  // what the span starts at, as the docs name it
    const char* to;
    bool disagg;  // computed from disagg-server lines
    bool worker;  // computed from worker lines
};
const SpanInfo& span_info(Span s) noexcept;
// The 12 time_breakdown.py spans, in order (span k of the example in docs/writers.md,
// "Disagg-server line", lasts k ms).
inline constexpr std::size_t timeline_span_count = 12;

// One request's row in the HTML timeline: its spans relative to its own start.
struct TimelineRow {
    std::string label;  // the request id
    struct Segment {
        Span span;
        double start_ms, end_ms;
    };
    std::vector<Segment> segments;
};

class PerfAccumulator {
public:
    static constexpr std::size_t timeline_rows = 200;

    // One parsed line of kind perf_worker or perf_disagg. `order` ranks lines in file order
    // (for "the first 200 requests").
    void add_worker(simdjson::dom::object rec, std::uint64_t order);
    void add_disagg(simdjson::dom::object rec, std::uint64_t order);
    void merge(PerfAccumulator&& other);

    std::array<std::uint64_t, perf_source_count> records{};
    std::array<std::uint64_t, perf_source_count> gen_worker_lines{};  // workers only: with KV end
    std::array<std::array<SampleSet, span_count>, perf_source_count> spans{};
    std::map<std::string, std::uint64_t, std::less<>> status;  // "status" values (32 at most)
    std::uint64_t status_other = 0;                            // beyond those 32, or not a string

    // The first timeline_rows lines of each source, in `order`.
    std::array<std::vector<std::pair<std::uint64_t, TimelineRow>>, perf_source_count> timeline;

    // Sorts the timeline and trims it to timeline_rows.
    void finish();

private:
    void span(PerfSource src, Span s, double start_s, double end_s);
    void count_status(simdjson::dom::object rec);
    void steps(PerfSource src, simdjson::dom::object phase);
    void tpot(PerfSource src, simdjson::dom::object phase, double first_token, double last_token);
    // Keeps the row if it is among the first timeline_rows of its source (by order).
    void push_row(PerfSource src, std::uint64_t order, const simdjson::dom::element* id,
                  TimelineRow&& row);
};

}  // namespace jsonlw::tools
