// The report's trace-context join: the lines of the three writers that carry a "traceparent"
// key (docs/writers.md, "Trace context on records"), grouped by the request it names (trace
// id and parent id), and for each request whether a perf-metrics, a raw-output and a
// request-trace line carry it — the requests whose three records join, and what the others
// lack.
#pragma once

#include "report_read.hpp"

#include <simdjson.h>

#include <cstdint>
#include <vector>

namespace jsonlw::tools {

class TraceparentJoin {
public:
    // A parsed line of a writer's kind (RecordKind::other is ignored).
    void add(simdjson::dom::object rec, RecordKind kind);
    void merge(TraceparentJoin&& other);
    // Groups the lines by request (after every merge).
    void finish();

    std::uint64_t lines_with = 0;     // lines with a valid traceparent
    std::uint64_t lines_without = 0;  // lines of the three writers without the key
    std::uint64_t invalid = 0;        // a "traceparent" that is not a valid one (or not a string)
    // From finish(): distinct (trace id, parent id) pairs; those with a line of each writer
    // (request trace: its request or response line); and, of the others, how many lack a
    // line of each writer.
    std::uint64_t requests = 0, joined = 0;
    std::uint64_t missing_perf = 0, missing_raw = 0, missing_trace = 0;

    std::uint64_t not_joined() const noexcept { return requests - joined; }

private:
    struct Entry {
        std::uint64_t trace_hi = 0, trace_lo = 0, span = 0;
        std::uint8_t writers = 0;  // bits: 1 perf metrics, 2 raw output, 4 request trace
    };
    std::vector<Entry> entries_;
};

}  // namespace jsonlw::tools
