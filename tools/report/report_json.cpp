#include <jsonlw/report/report.hpp>

#include <jsonlw/json_line.hpp>

#include <cmath>
#include <string>
#include <string_view>

namespace jsonlw::tools {

namespace {

// ms to the nanosecond: a span of exactly 1 ms between two steady-clock stamps near 1000 s
// computes as 1.0000000000331966; rounding shows what was measured.
double rounded(double v) noexcept { return std::round(v * 1e6) / 1e6; }

// An error message, null when there was none.
void error_or_null(JsonLine& j, std::string_view key, const std::string& error)
{
    j.key(key);
    if (error.empty()) j.null();
    else j.string(error);
}

void summary(JsonLine& j, const Summary& s)
{
    j.field("count", s.count);
    for (const auto& [name, v] : {std::pair<const char*, double>{"mean", s.mean}, {"median", s.median},
                                  {"p75", s.p75}, {"p99", s.p99}, {"min", s.min}, {"max", s.max}}) {
        j.key(name);
        if (s.count == 0) j.null();  // never 0 for "no samples"
        else j.number_or_null(rounded(v));
    }
}

void counts(JsonLine& j, std::string_view name, const CountMap& m)
{
    j.key(name).begin_object();
    for (const auto& [k, v] : m) j.field(k, v);
    j.end_object();
}

}  // namespace

std::string report_json(const Report& r)
{
    LineBuffer buf;
    JsonLine j(buf);
    j.begin_object();
    j.field("dir", std::string_view(r.dir.string()));
    j.field("bytes", r.bytes).field("lines", r.lines).field("valid", r.valid).field("malformed", r.malformed);
    j.field("otlp_lines", r.otlp_lines);
    j.field("torn_tails", r.torn_tails).field("seconds", rounded(r.seconds)).field("threads", r.threads);
    j.field("unit", "ms").field("percentiles", "linear interpolation (numpy default)");
    j.key("errors").begin_array();
    for (const auto& e : r.errors) j.string(e);
    j.end_array();

    j.key("files").begin_array();
    for (const auto& f : r.files) {
        j.begin_object();
        j.field("file", std::string_view(f.name)).field("kind", std::string_view(f.kind_label()));
        j.field("bytes", f.bytes).field("lines", f.lines).field("valid", f.valid).field("malformed", f.malformed);
        j.field("otlp_lines", f.otlp_lines);
        j.field("torn_tail_bytes", f.torn_tail_bytes);
        j.key("kinds").begin_object();
        for (std::size_t k = 0; k < record_kind_count; ++k)
            if (f.kinds[k]) j.field(record_kind_name(static_cast<RecordKind>(k)), f.kinds[k]);
        j.end_object();
        j.key("malformed_lines").begin_array();
        for (const auto& m : f.malformed_lines)
            j.begin_object().field("line", m.line).field("offset", m.offset).field("error", std::string_view(m.error)).end_object();
        j.end_array();
        error_or_null(j, "error", f.error);
        j.end_object();
    }
    j.end_array();

    const auto& p = r.perf;
    j.key("perf_metrics").begin_object();
    j.key("records").begin_object().field("disagg", p.records[0]).field("worker", p.records[1]).end_object();
    j.field("generation_worker_lines", p.gen_worker_lines[1]);
    counts(j, "status", p.status);
    for (std::size_t src = 0; src < perf_source_count; ++src) {
        j.key(src == 0 ? "disagg" : "worker").begin_object();
        for (std::size_t k = 0; k < span_count; ++k) {
            const auto sp = static_cast<Span>(k);
            const SpanInfo& info = span_info(sp);
            if (!(src == 0 ? info.disagg : info.worker)) continue;
            const SampleSet& set = p.spans[src][k];
            j.key(info.name).begin_object();
            summary(j, r.perf_summary[src][k]);
            j.field("missing", set.missing).field("inverted", set.inverted);
            j.end_object();
        }
        j.end_object();
    }
    j.end_object();

    const auto& raw = r.raw;
    j.key("raw_output").begin_object();
    j.field("outputs", raw.outputs).field("tokens", raw.tokens);
    j.key("frames_per_output").begin_object();
    summary(j, r.frames_per_output);
    j.end_object();
    j.key("tokens_per_output").begin_object();
    summary(j, r.tokens_per_output);
    j.end_object();
    j.field("frames_consistent_false", raw.frames_inconsistent).field("aborted", raw.aborted);
    j.field("streaming", raw.streaming).field("partial", raw.partial);
    counts(j, "end_reasons", raw.end_reasons);
    j.field("token_count_mismatch", raw.token_count_mismatch).field("schema_errors", raw.schema_errors);
    j.key("logprobs").begin_object();
    j.field("outputs", raw.with_logprobs).field("values", raw.logprob_values).field("nulls", raw.logprob_nulls);
    j.field("nonfinite_positions", raw.nonfinite_positions).field("misaligned_outputs", raw.logprob_misaligned);
    j.field("missing_positions", raw.missing_positions);
    j.key("mean_per_token");
    if (raw.logprob_values) j.number_or_null(raw.logprob_sum / static_cast<double>(raw.logprob_values));
    else j.null();
    j.key("mean_per_output").begin_object();
    summary(j, r.mean_logprob_per_output);
    j.end_object();
    j.field("ranked_outputs", raw.with_ranks).field("ranked_tokens", raw.ranked_tokens);
    j.field("rank1_tokens", raw.rank1_tokens).field("top_logprobs_outputs", raw.with_top);
    j.field("top_logprobs_positions", raw.top_positions).field("top_logprobs_entries", raw.top_entries);
    j.end_object();
    j.key("first_gen_logits").begin_object();
    j.field("outputs", raw.with_first_gen).field("items", raw.first_gen_items).field("bad", raw.first_gen_bad);
    counts(j, "dtypes", CountMap(raw.first_gen_dtypes.begin(), raw.first_gen_dtypes.end()));
    j.field("overflow_to_inf", raw.first_gen_overflow_to_inf);
    error_or_null(j, "first_error", raw.first_gen_first_error);
    j.end_object();
    j.end_object();

    const auto& t = r.trace;
    j.key("request_traces").begin_object();
    j.field("requests", t.requests).field("responses", t.responses);
    counts(j, "request_status", t.request_status);
    counts(j, "routes", t.routes);
    j.field("body_parse_errors", t.body_parse_errors).field("validation_errors", t.validation_errors);
    j.field("server_arrival_time_unknown", t.arrival_unknown);
    counts(j, "response_status", t.response_status);
    counts(j, "http_status", t.http_status);
    counts(j, "response_kinds", t.response_kinds);
    counts(j, "termination_causes", t.termination_causes);
    j.field("requests_without_response", t.requests_without_response);
    j.field("responses_without_request", t.responses_without_request);
    j.field("repeated_request_trace_ids", t.duplicate_request_ids);
    j.field("headers", t.headers).field("redacted", t.redacted).field("requests_with_redaction", t.requests_with_redaction);
    counts(j, "redacted_by_name", t.redacted_by_name);
    j.field("unredacted_credential_headers", t.unredacted_credentials);
    j.key("sidecars").begin_array();
    for (const auto& c : r.sidecars) {
        j.begin_object().field("file", std::string_view(c.name)).field("consistent", c.consistent);
        j.field("counts_consistent", c.counts_consistent).field("closed", c.closed).field("shards", c.shards);
        j.field("records", c.records).field("bad", c.bad).field("submitted", c.submitted);
        j.field("persisted", c.persisted).field("dropped", c.dropped).field("unknown", c.unknown);
        j.field("pending", c.pending);
        error_or_null(j, "error", c.error);
        j.end_object();
    }
    j.end_array();
    j.end_object();

    const auto& tj = r.join;
    j.key("trace_context").begin_object();
    j.field("requests", tj.requests).field("joined", tj.joined).field("not_joined", tj.not_joined());
    j.key("missing").begin_object().field("perf_metrics", tj.missing_perf);
    j.field("raw_output", tj.missing_raw).field("request_trace", tj.missing_trace).end_object();
    j.field("lines_with_traceparent", tj.lines_with).field("lines_without_traceparent", tj.lines_without);
    j.field("invalid_traceparents", tj.invalid);
    j.end_object();

    j.end_object();
    return std::string(buf.data(), buf.size()) + "\n";
}

}  // namespace jsonlw::tools
