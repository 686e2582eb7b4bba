// The client's view of a load run (load_client.hpp) joined with what the server wrote about
// the same requests — its perf-metrics lines and request-trace lines under the output
// directory — on the traceparent each request carried: is every answered request on file,
// once, with a server span inside the client's span, and how do the two sides' latencies
// compare. Free functions over closed files (*.jsonl only, never *.jsonl.open): call them
// after the server's writers closed, from any thread.
#pragma once

#include "load_client.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace jsonlw::serve {

// Nearest-rank percentiles (the smallest value with at least p % of the values at or below
// it) of one set of latencies, in milliseconds. All 0 when count is 0.
struct LatencySummary {
    std::uint64_t count = 0;
    double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

// Builds a summary from seconds (reorders `seconds`).
LatencySummary summarize_seconds(std::vector<double>& seconds);

struct JoinReport {
    // The client's side, by outcome. `unanswered`: failed without an HTTP status line (the
    // server may never have seen them), so they are not looked for in its files.
    std::uint64_t sent = 0, completed = 0, disconnected = 0, failed = 0, unanswered = 0;
    std::uint64_t malformed_streams = 0;  // completed streams that were not well formed

    // The server's files: lines read per kind (OUT/perf_metrics: lines with "perf_metrics";
    // OUT/request_trace: "event" "request" / "response"), and what could not be joined.
    std::uint64_t perf_lines = 0, trace_request_lines = 0, trace_response_lines = 0;
    std::uint64_t unreadable_lines = 0;     // not JSON, or of no known kind
    std::uint64_t without_traceparent = 0;  // lines of a known kind without the key
    std::uint64_t unknown_traceparent = 0;  // lines whose traceparent the client never sent

    // Answered requests (an HTTP status was read) missing from a kind of record: perf
    // metrics are looked for when the status was 200 (a rejected request never ran), trace
    // lines for every answered request.
    std::uint64_t missing_in_perf = 0, missing_in_trace_requests = 0, missing_in_trace_responses = 0;
    // Per kind, the traceparents found on more than one line (one count per traceparent
    // and kind, however many copies); the first line is the one joined.
    std::uint64_t duplicated = 0;
    std::uint64_t joined = 0;  // answered requests with every record looked for found
    // Joined with a perf line whose server span is not inside the client's span:
    // server_arrival_time < sent, or (completed requests) server_first_token_time >
    // first_token or last_token_time > done. A null time is not checked (null_times).
    std::uint64_t span_violations = 0;
    std::uint64_t null_times = 0;  // perf lines of joined requests with a time missing/null
    std::uint64_t aborted_in_perf = 0;  // joined perf lines with "status": "aborted"
    // Joined requests whose two sides disagree on how they ended: the client disconnected
    // but the server completed it (it may finish before it notices), or the client got the
    // whole response but the server recorded an abort.
    std::uint64_t disconnected_but_complete = 0, completed_but_aborted = 0;
    // x-request-id differs from the perf line's request_id.
    std::uint64_t request_id_mismatches = 0;

    // Latencies. TTFT over completed streaming requests (a non-streaming reply's first
    // token is its whole body); e2e over every completed request. Client: from `sent`;
    // server: from server_arrival_time to server_first_token_time / last_token_time; diff:
    // client minus server, over joined requests having both.
    LatencySummary client_ttft, server_ttft, ttft_diff;
    LatencySummary client_e2e, server_e2e, e2e_diff;

    // Files that could not be read, and the first few problems, each naming the request
    // (index, traceparent) so one can be looked up in the files.
    std::vector<std::string> errors;
    std::vector<std::string> examples;
    static constexpr std::size_t max_examples = 8;
};

// Reads OUT/perf_metrics/**/*.jsonl and OUT/request_trace/**/*.jsonl and joins them with
// `results`. A missing directory reads as empty (its records count as missing).
JoinReport join_with_server(const std::filesystem::path& out, std::span<const ClientResult> results);

// Nothing missing, no duplicates, no span violations, every file read.
bool join_ok(const JoinReport& r) noexcept;

// A compact table for a person: counts, then the six latency rows.
void print_join(std::FILE* f, const JoinReport& r);

}  // namespace jsonlw::serve
