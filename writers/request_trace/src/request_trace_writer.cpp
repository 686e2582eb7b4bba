#include <jsonlw/request_trace_writer.hpp>
#include <jsonlw/detail/json_minifier.hpp>
#include <jsonlw/detail/log_marks.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>
#include <jsonlw/traceparent_field.hpp>

#include "content_digest.hpp"
#include "ledger_sink.hpp"

#include <stdexcept>
#include "trace_accounting.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw {
namespace detail {

// What the encoder counts (I/O thread) and the writer reads (any thread).
struct TraceCounters {
    std::atomic<std::uint64_t> metadata_captured{0};
    std::atomic<std::uint64_t> invalid_traceparents{0};
};

}  // namespace detail

namespace {

constexpr std::string_view redacted = "[redacted]";

enum class Kind : int { request = 0, response = 1 };

WallClock::time_point stamp_of(const RequestTraceRecord& rec) noexcept
{
    if (const auto* q = std::get_if<RequestTrace>(&rec)) return q->recorded_at;
    return std::get<ResponseTrace>(rec).finished_at;
}

// "-<pid>" unless the options name the suffix.
std::string writer_suffix_of(const RequestTraceOptions& o)
{
    return o.writer_suffix ? *o.writer_suffix : fmt::format("-{}", static_cast<long>(::getpid()));
}

// The durable mode's ledger (null otherwise, or without a directory).
std::shared_ptr<detail::TraceAccounting> ledger_for(const RequestTraceOptions& o)
{
    if (!o.durable || o.directory.empty()) return nullptr;
    return std::make_shared<detail::TraceAccounting>(o.directory, writer_suffix_of(o), o.log);
}

// `ledger`: in durable mode the sink is wrapped so that every group's result reaches it.
WriterOptions base_options(const RequestTraceOptions& o,
                           const std::shared_ptr<detail::TraceAccounting>& ledger)
{
    WriterOptions w = o;
    // TensorRT-LLM's request-trace wording where it differs from the engine's "<subject>
    // JSONL" messages (tensorrt_llm/serve/request_trace.py).
    w.messages.close_timed_out = "Timed out flushing request traces; dropping remaining records";
    w.messages.disabling = "Disabling request trace output: {1} ({2})";
    if (o.durable) w.messages.queue_full = "Dropped {1} {0} records: the writer queue is full";
    w.messages.started = "Recording request traces to {1}";
    w.stem = "request_trace";
    w.subject = "request trace";
    w.batch_records = RequestTraceWriter::batch_records;
    w.serializer_threads = 1;
    w.durability = o.durable ? Durability::fsync_batch : Durability::none;
    // The OTLP form (docs/otlp.md): eventName jsonlw.request_trace.request / .response.
    if (o.durable && o.format == LineFormat::otlp)
        throw std::invalid_argument(
            "request trace: durable mode needs format jsonl (its sidecar verifies record lines)");
    w.otlp = OtlpOptions::merged(
        std::move(w.otlp),
        {.event_name = "jsonlw.request_trace",
         .event_name_field = "event",
         .time_fields = {{"/recorded_at", OtlpTimeField::Kind::iso8601_utc},
                         {"/finished_at", OtlpTimeField::Kind::iso8601_utc}},
         .attributes = {{"gen_ai.request.model", "/body/model"},
                        {"http.route", "/route"},
                        {"http.response.status_code", "/http_status"}}});
    // The hour folders: each group's key is "<UTC hour>/<requests|responses><suffix>.jsonl".
    // No directory: the writer is inert, whatever the sink.
    if (w.directory.empty()) w.sink.reset();
    else if (!w.sink) w.sink = std::make_shared<PartitionedFileSink>();
    if (w.sink && ledger)
        w.sink = std::make_shared<detail::LedgerSink>(w.sink, ledger,
                                                      RequestTraceWriter::publish_interval);
    return w;
}

std::string file_name(Kind k, std::string_view suffix)
{
    return fmt::format("{}{}.jsonl", k == Kind::request ? "requests" : "responses", suffix);
}

// The writer's encoder: a request or response record as a line, keyed by (UTC hour, kind):
// the engine sends each key's group to the sink under "<hour>/<requests|responses><suffix>.jsonl"
// (in durable mode the LedgerSink in front of it mirrors what lands and publishes the sidecar).
// I/O thread only (serializer_threads is 1: the minifier, scratch and digest are shared).
class TraceEncoder final : public RecordEncoder<RequestTraceRecord> {
public:
    TraceEncoder(std::string suffix, LogSink log, Capture capture,
                 std::shared_ptr<detail::TraceCounters> counters)
        : suffix(std::move(suffix)), log(std::move(log)), capture(capture),
          counters(std::move(counters))
    {
    }

    void serialize(const RequestTraceRecord& rec, JsonLine& line) override
    {
        std::visit([&](const auto& r) { write(r, line); }, rec);
        if (capture == Capture::metadata)
            counters->metadata_captured.fetch_add(1, std::memory_order_relaxed);
    }
    // "<UTC hour>/<requests|responses><suffix>.jsonl": the hour folder's file of its kind.
    void key(const RequestTraceRecord& rec, std::string& key) override;
    std::size_t record_bytes(const RequestTraceRecord& rec) const noexcept override;

private:

    void timestamp(JsonLine& line, WallClock::time_point tp)
    {
        stamp.clear();
        stamp.push_back('"');
        append_utc_iso8601(stamp, tp);
        stamp.push_back('"');
        line.raw({stamp.data(), stamp.size()});
    }

    // Sets `json` to `text` parsed and minified (valid until the next call) when it is one
    // valid JSON document; otherwise returns why it is not JSON.
    std::optional<std::string> minify(const std::string& text, std::string_view& json)
    {
        if (text.empty()) return std::string("empty body");
        return minifier.parse_and_minify(text, json);
    }

    // The request's traceparent header, when exactly one valid one was sent; an unusable one
    // is counted and logged (first and every 1000th), and the line is written without it.
    std::optional<TraceContext> header_context(const std::vector<TraceHeader>& headers)
    {
        HeaderTraceContext h = trace_context_of(headers);
        if (h.refused.empty()) return h.context;
        const std::uint64_t n =
            counters->invalid_traceparents.fetch_add(1, std::memory_order_relaxed) + 1;
        if (detail::log_worthy(n)) {
            try {
                const std::string message = fmt::format(
                    "Ignored {} invalid traceparent header(s) of traced requests (this one: {})",
                    n, h.refused);
                if (log) log(LogLevel::warning, message);
                else log_to_stderr(LogLevel::warning, message);
            } catch (...) {
                // A failing log sink must not cost the line: the count still tells.
            }
        }
        return std::nullopt;
    }

    // The body as a full line has it — "body": minified when `as_json` and it is valid JSON,
    // else a JSON string — or with Capture::metadata "body_len" and "body_sha256" of those
    // same bytes, a string's as decoded (docs/writers.md, "Content capture"). Returns why a
    // body meant as JSON is not.
    std::optional<std::string> body(JsonLine& line, const std::string& text, bool as_json)
    {
        std::string_view json;
        std::optional<std::string> err;
        if (as_json) err = minify(text, json);
        const bool is_json = as_json && !err;
        if (capture == Capture::full) {
            line.key("body");
            if (is_json) line.raw(json);
            else line.string(text);
            return err;
        }
        digest.begin();
        if (is_json) digest.update(json);
        else if (digest.update_text(text)) line.mark_sanitized();
        line.field("body_len", digest.bytes());
        digest.field(line, "body_sha256");
        return err;
    }

    void capture_marker(JsonLine& line) const
    {
        if (capture == Capture::metadata) line.field("capture", to_string(capture));
    }

    void write(const RequestTrace& r, JsonLine& line)
    {
        if (r.malformed) throw MalformedRecord(*r.malformed);
        if (r.trace_id.empty()) throw MalformedRecord("request line without a trace_id");
        line.begin_object()
            .field("event", "request")
            .field("trace_id", r.trace_id)
            .field("session", sanitize_session(r.session));
        line.key("recorded_at");
        timestamp(line, r.recorded_at);
        line.key("server_arrival_time");
        if (r.server_arrival_time) line.number_or_null(*r.server_arrival_time);
        else line.null();
        line.field("route", r.route).field("status", to_string(r.status));
        line.key("headers").begin_array();
        for (const TraceHeader& h : r.headers) {
            line.begin_array().string(h.name);
            line.string(is_credential_header(h.name) ? redacted : std::string_view(h.value));
            line.end_array();
        }
        line.end_array();
        capture_marker(line);
        if (auto err = body(line, r.body, true)) line.field("body_parse_error", *err);
        if (r.validation_errors) {
            line.key("validation_errors").begin_array();
            for (const TraceValidationError& e : *r.validation_errors) {
                line.begin_object().key("loc").begin_array();
                for (const std::string& l : e.loc) line.string(l);
                line.end_array().field("type", e.type).field("msg", e.msg).end_object();
            }
            line.end_array();
        }
        write_traceparent(line, r.trace_context ? r.trace_context : header_context(r.headers));
        line.end_object();
    }

    static void int_or_null(JsonLine& line, std::string_view key,
                            const std::optional<std::int64_t>& v)
    {
        line.key(key);
        if (v) line.value(*v);
        else line.null();
    }

    void write(const ResponseTrace& r, JsonLine& line)
    {
        if (r.malformed) throw MalformedRecord(*r.malformed);
        if (r.trace_id.empty()) throw MalformedRecord("response line without a trace_id");
        line.begin_object()
            .field("event", "response")
            .field("trace_id", r.trace_id)
            .field("session", sanitize_session(r.session));
        line.key("finished_at");
        timestamp(line, r.finished_at);
        line.field("status", to_string(r.status));
        int_or_null(line, "client_id", r.client_id);
        int_or_null(line, "disagg_request_id", r.disagg_request_id);
        int_or_null(line, "ctx_request_id", r.ctx_request_id);
        if (r.http_status) line.field("http_status", *r.http_status);
        if (r.termination) {
            line.key("termination").begin_object().field("cause", r.termination->cause);
            line.key("detail");
            if (r.termination->detail) line.string(*r.termination->detail);
            else line.null();
            line.end_object();
        }
        capture_marker(line);
        line.key("response").begin_object().field("kind", to_string(r.response.kind));
        if (auto err = body(line, r.response.body, r.response.kind == ResponseKind::json))
            line.field("body_parse_error", *err);
        line.end_object();
        if (r.response_status) line.field("response_status", *r.response_status);
        if (r.incomplete_reason) line.field("incomplete_reason", *r.incomplete_reason);
        if (r.error_code) line.field("error_code", *r.error_code);
        write_traceparent(line, r.trace_context);
        line.end_object();
    }

    const std::string suffix;
    const LogSink log;
    const Capture capture;
    const std::shared_ptr<detail::TraceCounters> counters;

    // I/O thread only.
    detail::JsonMinifier minifier;
    LineBuffer stamp;
    detail::ContentDigest digest;  // Capture::metadata's
    // key()'s last (hour, kind) and its key: formatted once per hour and kind, not per record.
    std::chrono::sys_time<std::chrono::hours> last_hour{std::chrono::hours::min()};
    Kind last_kind = Kind::request;
    std::string last_key;
};

}  // namespace

RequestTraceWriter::RequestTraceWriter(boost::asio::any_io_executor ex, RequestTraceOptions opts)
    : RequestTraceWriter(std::move(ex), opts, ledger_for(opts),
                         std::make_shared<detail::TraceCounters>())
{
}

RequestTraceWriter::RequestTraceWriter(boost::asio::any_io_executor ex,
                                       const RequestTraceOptions& opts,
                                       std::shared_ptr<detail::TraceAccounting> ledger,
                                       std::shared_ptr<detail::TraceCounters> counters)
    : JsonlRecordWriter<RequestTraceRecord>(
          std::move(ex), base_options(opts, ledger),
          std::make_shared<TraceEncoder>(writer_suffix_of(opts), opts.log, opts.capture, counters)),
      directory_(opts.directory), suffix_(writer_suffix_of(opts)), accounting_(std::move(ledger)),
      counters_(std::move(counters))
{
}

std::uint64_t RequestTraceWriter::invalid_traceparents() const noexcept
{
    return counters_->invalid_traceparents.load(std::memory_order_relaxed);
}

std::uint64_t RequestTraceWriter::metadata_captured() const noexcept
{
    return counters_->metadata_captured.load(std::memory_order_relaxed);
}

RecordResult RequestTraceWriter::record_request(RequestTrace rec)
{
    if (rec.recorded_at == WallClock::time_point{}) rec.recorded_at = WallClock::now();
    return submit(RequestTraceRecord(std::in_place_index<0>, std::move(rec)));
}

RecordResult RequestTraceWriter::record_response(ResponseTrace rec)
{
    if (rec.finished_at == WallClock::time_point{}) rec.finished_at = WallClock::now();
    return submit(RequestTraceRecord(std::in_place_index<1>, std::move(rec)));
}

const std::string& RequestTraceWriter::generation() const noexcept
{
    static const std::string none;
    return accounting_ ? accounting_->generation() : none;
}

std::filesystem::path RequestTraceWriter::sidecar_path() const
{
    return accounting_ ? accounting_->sidecar_path() : std::filesystem::path{};
}

const std::string& RequestTraceWriter::writer_suffix() const noexcept { return suffix_; }

std::filesystem::path RequestTraceWriter::requests_file(WallClock::time_point t) const
{
    return directory_ / utc_hour(t) / file_name(Kind::request, suffix_);
}

std::filesystem::path RequestTraceWriter::responses_file(WallClock::time_point t) const
{
    return directory_ / utc_hour(t) / file_name(Kind::response, suffix_);
}

void TraceEncoder::key(const RequestTraceRecord& rec, std::string& key)
{
    const auto hour = std::chrono::floor<std::chrono::hours>(stamp_of(rec));
    const Kind kind = rec.index() == 0 ? Kind::request : Kind::response;
    if (last_key.empty() || hour != last_hour || kind != last_kind) {
        last_hour = hour;
        last_kind = kind;
        last_key = fmt::format("{}/{}", utc_hour(hour), file_name(kind, suffix));
    }
    key += last_key;
}

std::size_t TraceEncoder::record_bytes(const RequestTraceRecord& rec) const noexcept
{
    constexpr std::size_t overhead = 160;  // keys, stamps, ids
    if (const auto* q = std::get_if<RequestTrace>(&rec)) {
        std::size_t n = overhead + q->route.size() + q->session.size() + q->body.size();
        for (const TraceHeader& h : q->headers) n += h.name.size() + h.value.size() + 6;
        return n;
    }
    const auto& p = std::get<ResponseTrace>(rec);
    return overhead + p.session.size() + p.response.body.size();
}

}  // namespace jsonlw
