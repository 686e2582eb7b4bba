// The records of RequestTraceWriter: one request line (requests-<pid>.jsonl) and one response
// line (responses-<pid>.jsonl) per traced request, plus the helpers that shape their fields.
// A record holds what the caller saw, raw: redaction, session sanitizing, JSON validation,
// timestamp formatting and reading the traceparent header happen when it is serialized, on
// the writer's I/O thread.
#pragma once

#include <jsonlw/trace_context.hpp>
#include <jsonlw/utc_time.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace jsonlw {

// One HTTP header as received. Headers are kept as an ordered list, so repeats survive.
struct TraceHeader {
    std::string name;
    std::string value;
};

// One entry of a rejected request's validation errors (pydantic's shape).
struct TraceValidationError {
    std::vector<std::string> loc;  // path to the offending field, e.g. {"body", "messages"}
    std::string type;              // e.g. "missing"
    std::string msg;               // e.g. "Field required"
};

enum class RequestTraceStatus {
    accepted,      // "accepted": the request was handed to the engine
    rejected_400,  // "rejected_400": refused before the engine (validation_errors says why)
};

// A request line (requests-<pid>.jsonl, tensorrt_llm/serve/request_trace.py).
struct RequestTrace {
    // "tr_" + 32 lowercase hex (new_trace_id()); repeated on the response line. Empty: the
    // record is malformed (dropped, counted).
    std::string trace_id;
    // The raw session key; written sanitized (sanitize_session()).
    std::string session;
    // When the request was recorded (UTC). Left zero: stamped by record_request().
    WallClock::time_point recorded_at{};
    // Steady-clock seconds of the HTTP arrival (the join key to perf metrics); nullopt or a
    // non-finite value: written as null.
    std::optional<double> server_arrival_time{};
    std::string route;  // URL path, e.g. "/v1/chat/completions"
    RequestTraceStatus status = RequestTraceStatus::accepted;
    // Written as [[name, value], ...]; credential values become "[redacted]"
    // (is_credential_header()).
    std::vector<TraceHeader> headers;
    // The raw request body. Valid JSON is written parsed and minified; anything else is
    // written as a JSON string with body_parse_error.
    std::string body;
    // Written only when present (rejected requests).
    std::optional<std::vector<TraceValidationError>> validation_errors{};
    // The request's W3C trace context. Left empty, the writer reads it from `headers` when it
    // serializes the line (trace_context_of()): one valid `traceparent` header sets it; an
    // invalid or repeated one is ignored and counted (RequestTraceWriter::
    // invalid_traceparents()). Written as the line's last key, "traceparent"; none: no key.
    std::optional<TraceContext> trace_context{};
    // Set by a binding that could not convert its caller's request (the Python package): the
    // line is dropped as malformed at serialization, with this text in the log.
    std::optional<std::string> malformed{};
};

enum class ResponseTraceStatus {
    completed,            // the response (or stream) ended normally
    client_disconnected,  // the client went away (or the stream was never consumed)
    error,                // the handler failed
    unknown,              // the outcome could not be determined
};

enum class ResponseKind {
    sse_text,  // body: the whole event stream as text
    text,      // body: a non-JSON response as text
    json,      // body: a JSON response, written parsed when it is valid JSON
};

struct TraceResponseBody {
    ResponseKind kind = ResponseKind::json;
    std::string body;
};

// How a response ended, when it did not simply complete.
struct TraceTermination {
    std::string cause;                  // e.g. "not_started", "cancelled", "exception"
    std::optional<std::string> detail;  // free text; null when absent
};

// A response line (responses-<pid>.jsonl, tensorrt_llm/serve/request_trace.py).
struct ResponseTrace {
    std::string trace_id;  // as on the request line; empty: malformed
    std::string session;   // raw; written sanitized
    // When the response finished (UTC). Left zero: stamped by record_response().
    WallClock::time_point finished_at{};
    ResponseTraceStatus status = ResponseTraceStatus::completed;
    std::optional<std::int64_t> client_id{};          // engine id (aggregated); else null
    std::optional<std::int64_t> disagg_request_id{};  // null when unknown
    std::optional<std::int64_t> ctx_request_id{};     // null when unknown
    std::optional<int> http_status{};                 // omitted when absent
    std::optional<TraceTermination> termination{};    // omitted when absent
    TraceResponseBody response{};
    // Copied from a Responses-API terminal event or object; each omitted when absent.
    std::optional<std::string> response_status{};
    std::optional<std::string> incomplete_reason{};
    std::optional<std::string> error_code{};
    // The trace context of the request this answers: the writer keeps no state between a
    // request and its response, so the caller passes it (e.g. trace_context_of(headers).context
    // of the request). Written as the line's last key, "traceparent"; none: no key.
    std::optional<TraceContext> trace_context{};
    // As RequestTrace::malformed.
    std::optional<std::string> malformed{};
};

// What a RequestTraceWriter queues.
using RequestTraceRecord = std::variant<RequestTrace, ResponseTrace>;

// "tr_" + 32 lowercase hex digits from a per-thread generator seeded once from
// std::random_device: no system call per id. Thread-safe.
std::string new_trace_id();

// The session key as written: every character outside [A-Za-z0-9._-] (a multi-byte UTF-8
// character counts as one) becomes '_', after trimming surrounding whitespace; at most 128
// characters; empty or starting with '.' becomes "_no_session".
std::string sanitize_session(std::string_view raw);

// True for a header whose value is written as "[redacted]": authorization,
// proxy-authorization, cookie, set-cookie, or a name containing api-key, api_key, apikey,
// token, secret or password (case-insensitive).
bool is_credential_header(std::string_view name) noexcept;

// What a request's headers say about its W3C trace context (spec/20-http_request_header_format.md
// in github.com/w3c/trace-context): the `traceparent` header, its name in any case.
struct HeaderTraceContext {
    // Set when exactly one traceparent header was sent and TraceContext::parse_traceparent()
    // accepts its value.
    std::optional<TraceContext> context{};
    // Set when a traceparent was sent but cannot be used: the first rule its value broke
    // (to_string(TraceparentError), e.g. "bad_hex"), or "repeated" for more than one header
    // (the spec's test suite, test/test.py test_traceparent_duplicated, expects a new trace).
    std::string_view refused{};
};

// Reads the traceparent of `headers`. No allocation; any thread.
HeaderTraceContext trace_context_of(const std::vector<TraceHeader>& headers) noexcept;

std::string_view to_string(RequestTraceStatus s) noexcept;
std::string_view to_string(ResponseTraceStatus s) noexcept;
std::string_view to_string(ResponseKind k) noexcept;

}  // namespace jsonlw
