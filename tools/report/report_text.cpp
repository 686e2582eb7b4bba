#include <jsonlw/report/report.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>

namespace jsonlw::tools {

namespace {

using Out = std::back_insert_iterator<std::string>;

std::string counts(const CountMap& m, std::uint64_t other = 0)
{
    std::string s;
    for (const auto& [k, v] : m) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k.empty() ? "\"\"" : k, v);
    if (other) s += fmt::format("{}other {}", s.empty() ? "" : ", ", other);
    return s.empty() ? "-" : s;
}

void summary_row(Out out, std::string_view name, const Summary& s, std::uint64_t missing,
                 std::uint64_t inverted, int digits = 3)
{
    if (s.count == 0)
        fmt::format_to(out, "    {:<24} {:>9} {:>11} {:>11} {:>11} {:>11}", name, 0, "-", "-", "-", "-");
    else
        fmt::format_to(out, "    {:<24} {:>9} {:>11.{}f} {:>11.{}f} {:>11.{}f} {:>11.{}f}", name,
                       s.count, s.mean, digits, s.median, digits, s.p75, digits, s.p99, digits);
    if (missing || inverted) fmt::format_to(out, "   excluded: {} missing, {} inverted", missing, inverted);
    fmt::format_to(out, "\n");
}

}  // namespace

bool span_shown(const Report& r, PerfSource src, Span s) noexcept
{
    const SpanInfo& info = span_info(s);
    const bool applies = src == PerfSource::disagg ? info.disagg : info.worker;
    const SampleSet& set = r.perf.spans[static_cast<std::size_t>(src)][static_cast<std::size_t>(s)];
    if (!applies || r.perf.records[static_cast<std::size_t>(src)] == 0) return false;
    // Step and chunk spans only where lines carry steps or chunks; a worker line shows the
    // ctx or gen spans of the roles present.
    if (s >= Span::chunk_forward) return set.values.size() > 0 || set.missing + set.inverted > 0;
    if (src == PerfSource::worker && s >= Span::ctx_preprocessing && s <= Span::gen_postprocessing)
        return set.seen() > 0;
    return true;
}

std::string report_text(const Report& r)
{
    std::string s;
    Out out(s);
    fmt::format_to(out, "jsonlw report {}: {} files, {} bytes, {} lines ({} valid, {} malformed), "
                        "{} torn tails; read in {:.2f} s by {} threads\n",
                   r.dir.string(), r.files.size(), r.bytes, r.lines, r.valid, r.malformed,
                   r.torn_tails, r.seconds, r.threads);
    if (r.otlp_lines > 0)
        fmt::format_to(out, "  {} lines are OTLP LogsData (docs/otlp.md): \"valid\" counts the records they hold\n",
                       r.otlp_lines);
    for (const auto& e : r.errors) fmt::format_to(out, "  error: {}\n", e);

    // The name column is as wide as the longest name (hour folders and host names make long
    // ones), so the figures stay in their columns.
    std::size_t name_width = std::string_view("file").size();
    for (const auto& f : r.files) name_width = std::max(name_width, f.name.size());
    fmt::format_to(out, "\nIntegrity\n    {:<{}} {:<20} {:>10} {:>10} {:>10} {:>10}\n", "file", name_width,
                   "kind", "lines", "valid", "malformed", "torn tail");
    for (const auto& f : r.files) {
        fmt::format_to(out, "    {:<{}} {:<20} {:>10} {:>10} {:>10} {:>10}\n", f.name, name_width, f.kind_label(),
                       f.lines, f.valid, f.malformed,
                       f.torn_tail_bytes ? fmt::format("{} B", f.torn_tail_bytes) : std::string("-"));
        if (!f.error.empty()) fmt::format_to(out, "      error: {}\n", f.error);
    }
    for (const auto& f : r.files) {
        for (const auto& m : f.malformed_lines)
            fmt::format_to(out, "    {}:{}: malformed: {}\n", f.name, m.line, m.error);
        if (f.malformed > f.malformed_lines.size())
            fmt::format_to(out, "    {}: ... {} more malformed lines\n", f.name, f.malformed - f.malformed_lines.size());
    }

    const auto& p = r.perf;
    if (p.records[0] + p.records[1] > 0) {
        fmt::format_to(out, "\nPerf metrics: {} disagg-server lines, {} worker lines ({} of them generation "
                            "workers); ms; percentiles by linear interpolation\n",
                       p.records[0], p.records[1], p.gen_worker_lines[1]);
        fmt::format_to(out, "    status: {}\n", counts(p.status, p.status_other));
        for (std::size_t src = 0; src < perf_source_count; ++src) {
            if (p.records[src] == 0) continue;
            fmt::format_to(out, "  {} lines\n    {:<24} {:>9} {:>11} {:>11} {:>11} {:>11}\n",
                           src == 0 ? "disagg-server" : "worker", "span", "count", "mean", "median", "p75", "p99");
            for (std::size_t k = 0; k < span_count; ++k) {
                const auto sp = static_cast<Span>(k);
                if (!span_shown(r, static_cast<PerfSource>(src), sp)) continue;
                const SampleSet& set = p.spans[src][k];
                summary_row(out, span_info(sp).name, r.perf_summary[src][k], set.missing, set.inverted);
            }
        }
    }

    const auto& raw = r.raw;
    if (raw.outputs > 0) {
        fmt::format_to(out, "\nRaw output: {} outputs, {} tokens\n", raw.outputs, raw.tokens);
        fmt::format_to(out, "    {:<24} {:>9} {:>11} {:>11} {:>11} {:>11}\n", "per output", "count", "mean",
                       "median", "p75", "p99");
        summary_row(out, "frames", r.frames_per_output, raw.frames_per_output.missing, 0, 2);
        summary_row(out, "tokens", r.tokens_per_output, raw.tokens_per_output.missing, 0, 2);
        fmt::format_to(out, "    frames_consistent false: {}; aborted: {}; streaming: {}\n",
                       raw.frames_inconsistent, raw.aborted, raw.streaming);
        fmt::format_to(out, "    partial: {} (by end_reason: {})\n", raw.partial,
                       counts(raw.end_reasons, raw.end_reason_other));
        if (raw.token_count_mismatch || raw.schema_errors)
            fmt::format_to(out, "    num_output_tokens != len(token_ids): {}; fields of the wrong type: {}\n",
                           raw.token_count_mismatch, raw.schema_errors);
        if (raw.with_logprobs > 0) {
            fmt::format_to(out, "    logprobs: {} outputs, {} values, {} null ({} non-finite positions, {} "
                                "without per-token data), {} outputs misaligned with token_ids; mean "
                                "{:.4f} per token\n",
                           raw.with_logprobs, raw.logprob_values, raw.logprob_nulls, raw.nonfinite_positions,
                           raw.missing_positions,
                           raw.logprob_misaligned,
                           raw.logprob_values ? raw.logprob_sum / static_cast<double>(raw.logprob_values) : 0.0);
            summary_row(out, "mean logprob", r.mean_logprob_per_output, raw.mean_logprob_per_output.missing, 0, 4);
            if (raw.with_ranks)
                fmt::format_to(out, "    ranks: {} outputs, {} tokens ranked, rank 1: {} ({:.1f} %)\n", raw.with_ranks,
                               raw.ranked_tokens, raw.rank1_tokens,
                               raw.ranked_tokens ? 100.0 * static_cast<double>(raw.rank1_tokens) /
                                                       static_cast<double>(raw.ranked_tokens)
                                                 : 0.0);
            if (raw.with_top)
                fmt::format_to(out, "    top_logprobs: {} outputs, {} positions, {:.2f} alternatives per position\n",
                               raw.with_top, raw.top_positions,
                               raw.top_positions ? static_cast<double>(raw.top_entries) /
                                                       static_cast<double>(raw.top_positions)
                                                 : 0.0);
        }
        if (raw.with_first_gen > 0) {
            CountMap dtypes(raw.first_gen_dtypes.begin(), raw.first_gen_dtypes.end());
            fmt::format_to(out, "    first_gen_logits: {} outputs, {} items ({} bad{}{}), dtypes: {}; "
                                "overflow_to_inf: {}\n",
                           raw.with_first_gen, raw.first_gen_items, raw.first_gen_bad,
                           raw.first_gen_first_error.empty() ? "" : ": ", raw.first_gen_first_error,
                           counts(dtypes), raw.first_gen_overflow_to_inf);
        }
    }

    const auto& t = r.trace;
    if (t.requests + t.responses > 0 || !r.sidecars.empty()) {
        fmt::format_to(out, "\nRequest traces: {} requests, {} responses\n", t.requests, t.responses);
        fmt::format_to(out, "    requests by status: {}\n", counts(t.request_status));
        fmt::format_to(out, "    routes: {}\n", counts(t.routes));
        fmt::format_to(out, "    body_parse_error: {}; validation_errors: {}; server_arrival_time unknown: {}\n",
                       t.body_parse_errors, t.validation_errors, t.arrival_unknown);
        fmt::format_to(out, "    responses by status: {}\n", counts(t.response_status));
        fmt::format_to(out, "    http_status: {}; response kinds: {}; termination: {}\n", counts(t.http_status),
                       counts(t.response_kinds), counts(t.termination_causes));
        fmt::format_to(out, "    unmatched: {} requests without a response, {} responses without a request; "
                            "repeated request trace_ids: {}\n",
                       t.requests_without_response, t.responses_without_request, t.duplicate_request_ids);
        fmt::format_to(out, "    headers: {}, redacted: {} in {} requests ({}); credential-like headers NOT "
                            "redacted: {}\n",
                       t.headers, t.redacted, t.requests_with_redaction, counts(t.redacted_by_name),
                       t.unredacted_credentials);
        for (const auto& c : r.sidecars)
            fmt::format_to(out, "    sidecar {}: {}{}; {} shards, {} records, {} bad lines; submitted {}, "
                                "persisted {}, dropped {}, unknown {}, pending {}{}{}\n",
                           c.name, c.consistent ? "consistent" : "NOT consistent",
                           c.counts_consistent ? "" : " (counts do not add up)", c.shards, c.records, c.bad,
                           c.submitted, c.persisted, c.dropped, c.unknown, c.pending, c.closed ? ", closed" : "",
                           c.error.empty() ? "" : "; error: " + c.error);
    }

    // Only when the writers were given trace contexts (docs/writers.md).
    const auto& j = r.join;
    if (j.lines_with + j.invalid > 0) {
        fmt::format_to(out, "\nTrace context: {} requests by traceparent, {} joined (a perf-metrics, a "
                            "raw-output and a request-trace line each), {} not joined\n",
                       j.requests, j.joined, j.not_joined());
        fmt::format_to(out, "    not joined, without: perf metrics {}, raw output {}, request trace {}; "
                            "lines without traceparent: {}, with an invalid one: {}\n",
                       j.missing_perf, j.missing_raw, j.missing_trace, j.lines_without, j.invalid);
    }
    return s;
}

}  // namespace jsonlw::tools
