// OtlpLogsEncoder (see otlp_logs_encoder.hpp). The document shape is opentelemetry-proto's
// opentelemetry/proto/logs/v1/logs.proto (LogsData -> ResourceLogs -> ScopeLogs -> LogRecord),
// spelled by the OTLP specification's JSON rules (docs/otlp.md): lowerCamelCase field names,
// trace and span ids as lowercase hex, 64-bit integers as decimal strings, enums as numbers.
#include "otlp_logs_encoder.hpp"

#include "otlp_any_value.hpp"
#include "otlp_body_scanner.hpp"
#include "otlp_time.hpp"

#include <jsonlw/trace_context.hpp>
#include <jsonlw/version.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <errno.h>

namespace jsonlw::detail {

using namespace jsonlw::literals;

namespace {

// SeverityNumber SEVERITY_NUMBER_INFO (logs.proto): every record a writer keeps is an event at
// the informational level.
constexpr int severity_info = 9;

std::string default_service_name()
{
    if (const char* env = std::getenv("OTEL_SERVICE_NAME"); env && *env) return env;
    // The SDK rule for an unnamed service: "unknown_service:" + the executable's name.
    return std::string("unknown_service:") + program_invocation_short_name;
}

void string_attribute(JsonLine& out, std::string_view key, std::string_view value)
{
    out.begin_object().key("key"_key).string(key);
    out.key("value"_key).begin_object().key("stringValue"_key).string(value).end_object();
    out.end_object();
}

void nanos(JsonLine& out, JsonKey key, std::uint64_t ns)
{
    char digits[24];
    const auto end = fmt::format_to(digits, "{}", ns);
    out.key(key).string(std::string_view(digits, end - digits));
}

}  // namespace

OtlpLogsEncoder::OtlpLogsEncoder(OtlpOptions opts, std::string_view host, pid_t pid)
    : opts_(std::move(opts))
{
    if (opts_.service_name.empty()) opts_.service_name = default_service_name();
    LineBuffer buf;
    JsonLine out(buf);
    out.begin_object().key("resourceLogs"_key).begin_array().begin_object();
    out.key("resource"_key).begin_object().key("attributes"_key).begin_array();
    string_attribute(out, "service.name", opts_.service_name);
    string_attribute(out, "host.name", host);
    out.begin_object().key("key"_key).string("process.pid");
    out.key("value"_key).begin_object().key("intValue"_key).string(std::to_string(pid));
    out.end_object().end_object();
    out.end_array().end_object();
    out.key("scopeLogs"_key).begin_array().begin_object();
    out.key("scope"_key).begin_object().key("name"_key).string("jsonlw");
    out.key("version"_key).string(version_string).end_object();
    out.key("logRecords"_key).begin_array();
    prefix_.assign(buf.data(), buf.size());
    // The fast path's pointers: the time fields, the attributes, then the event-name field.
    std::vector<std::string> pointers;
    for (const OtlpTimeField& f : opts_.time_fields) pointers.push_back(f.pointer);
    for (const OtlpAttribute& a : opts_.attributes) {
        pointers.push_back(a.pointer);
        LineBuffer name;
        JsonLine(name).string(a.name);
        attribute_keys_.push_back("{\"key\":" + std::string(name.data(), name.size()) + ",\"value\":");
    }
    if (!opts_.event_name_field.empty()) pointers.push_back("/" + opts_.event_name_field);
    scanner_ = std::make_unique<OtlpBodyScanner>(pointers);
    // The constant part of eventName, escaped once.
    if (!opts_.event_name.empty()) {
        LineBuffer name;
        JsonLine(name).string(opts_.event_name);
        event_name_json_.assign(name.data(), name.size());
    }
}

OtlpLogsEncoder::~OtlpLogsEncoder() = default;

std::size_t OtlpLogsEncoder::encode(std::string_view lines, LineBuffer& out)
{
    const auto wall = std::chrono::system_clock::now();
    const auto steady = std::chrono::steady_clock::now();
    const auto observed_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count());
    // Steady seconds become Unix time with the offset of this moment (docs/otlp.md, "Times").
    const std::int64_t steady_to_unix_ns =
        static_cast<std::int64_t>(observed_ns) -
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady.time_since_epoch()).count();

    out.append(prefix_.data(), prefix_.data() + prefix_.size());
    std::size_t records = 0;
    while (!lines.empty()) {
        const std::size_t nl = lines.find('\n');
        const std::string_view one = lines.substr(0, nl);
        lines.remove_prefix(nl == std::string_view::npos ? lines.size() : nl + 1);
        if (records > 0) out.push_back(',');
        if (!fast_record(one, out, observed_ns, steady_to_unix_ns)) {
            JsonLine rec(out);
            record(one, rec, observed_ns, steady_to_unix_ns);
        }
        ++records;
    }
    static constexpr std::string_view suffix = "]}]}]}\n";
    out.append(suffix.data(), suffix.data() + suffix.size());
    return records;
}

bool OtlpLogsEncoder::fast_record(std::string_view text, LineBuffer& out, std::uint64_t observed_ns,
                                  std::int64_t steady_to_unix_ns)
{
    const auto put = [&out](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
    const auto decimal = [&put](std::uint64_t v) {
        char digits[24];
        const auto end = fmt::format_to(digits, "{}", v);
        put(std::string_view(digits, static_cast<std::size_t>(end - digits)));
    };
    // The body is scanned straight into `out` (no copy): the fields taken from it follow it.
    const std::size_t mark = out.size();
    put(R"({"observedTimeUnixNano":")");
    decimal(observed_ns);
    put(R"(","severityNumber":9,"severityText":"INFO","body":)");
    if (!scanner_->scan(text, out)) {
        out.resize(mark);
        return false;
    }
    std::size_t at = 0;
    std::uint64_t time_ns = 0;
    for (const OtlpTimeField& f : opts_.time_fields) {
        const std::string_view raw = scanner_->found(at++);
        if (time_ns == 0 && !raw.empty()) time_ns = raw_unix_nanos(raw, f.kind, steady_to_unix_ns);
    }
    if (time_ns) {
        put(R"(,"timeUnixNano":")");
        decimal(time_ns);
        out.push_back('"');
    }
    bool any_attribute = false;
    for (const std::string& key : attribute_keys_) {
        const std::string_view raw = scanner_->found(at++);
        if (raw.empty() || raw == "null") continue;
        put(any_attribute ? std::string_view(",") : std::string_view(R"(,"attributes":[)"));
        any_attribute = true;
        put(key);
        if (!scanner_->any_value(raw, out)) put("{}");
        out.push_back('}');
    }
    if (any_attribute) out.push_back(']');
    if (const auto& trace = scanner_->trace()) {
        char tp[TraceContext::traceparent_size];  // "00-<32 hex>-<16 hex>-<2 hex>"
        trace->format_traceparent(tp);
        put(R"(,"flags":)");
        decimal(trace->flags);
        put(R"(,"traceId":")");
        put(std::string_view(tp + 3, 32));
        put(R"(","spanId":")");
        put(std::string_view(tp + 36, 16));
        out.push_back('"');
    }
    if (!event_name_json_.empty()) {
        put(R"(,"eventName":)");
        const std::string_view field = opts_.event_name_field.empty() ? std::string_view{} : scanner_->found(at);
        if (field.size() >= 2 && field.front() == '"') {
            // The constant name without its closing quote, '.', the field's escaped text.
            put(std::string_view(event_name_json_).substr(0, event_name_json_.size() - 1));
            out.push_back('.');
            put(field.substr(1));
        } else {
            put(event_name_json_);
        }
    }
    out.push_back('}');
    return true;
}

void OtlpLogsEncoder::record(std::string_view text, JsonLine& out, std::uint64_t observed_ns,
                             std::int64_t steady_to_unix_ns)
{
    simdjson::dom::element rec;
    const bool parsed = !parser_.parse(text.data(), text.size()).get(rec) &&
                        rec.type() == simdjson::dom::element_type::OBJECT;
    out.begin_object();
    nanos(out, "observedTimeUnixNano"_key, observed_ns);
    out.key("severityNumber"_key).value(severity_info);
    out.key("severityText"_key).string("INFO");
    if (!parsed) {
        ++malformed_bodies_;
        out.key("body"_key).begin_object().key("stringValue"_key).string(text).end_object();
        out.end_object();
        return;
    }
    const simdjson::dom::object obj(rec);

    // The traceparent key becomes traceId, spanId and flags (and leaves the body).
    std::optional<TraceContext> trace;
    std::string_view traceparent;
    if (!obj["traceparent"].get(traceparent)) trace = TraceContext::parse_traceparent(traceparent);

    out.key("body"_key).begin_object().key("kvlistValue"_key).begin_object().key("values"_key);
    write_key_values(out, obj, trace ? std::string_view("traceparent") : std::string_view{});
    out.end_object().end_object();
    if (const std::uint64_t t = record_time(rec, steady_to_unix_ns)) nanos(out, "timeUnixNano"_key, t);

    bool any_attribute = false;
    for (const OtlpAttribute& a : opts_.attributes) {
        simdjson::dom::element v;
        if (rec.at_pointer(a.pointer).get(v) || v.is_null()) continue;
        if (!any_attribute) {
            out.key("attributes"_key).begin_array();
            any_attribute = true;
        }
        out.begin_object().key("key"_key).string(a.name).key("value"_key);
        write_any_value(out, v);
        out.end_object();
    }
    if (any_attribute) out.end_array();

    if (trace) {
        out.key("flags"_key).value(static_cast<unsigned>(trace->flags));
        char tp[TraceContext::traceparent_size];  // "00-<32 hex>-<16 hex>-<2 hex>"
        trace->format_traceparent(tp);
        out.key("traceId"_key).string(std::string_view(tp + 3, 32));
        out.key("spanId"_key).string(std::string_view(tp + 36, 16));
    }

    if (!event_name_json_.empty()) {
        out.key("eventName"_key);
        std::string_view suffix;
        if (!opts_.event_name_field.empty() && !obj[opts_.event_name_field].get(suffix)) {
            LineBuffer name;
            JsonLine(name).string(opts_.event_name + "." + std::string(suffix));
            out.raw(std::string_view(name.data(), name.size()));
        } else {
            out.raw(event_name_json_);
        }
    }
    out.end_object();
}

std::uint64_t OtlpLogsEncoder::record_time(simdjson::dom::element rec,
                                           std::int64_t steady_to_unix_ns) const
{
    for (const OtlpTimeField& f : opts_.time_fields) {
        simdjson::dom::element v;
        if (rec.at_pointer(f.pointer).get(v)) continue;
        if (const std::uint64_t ns = unix_nanos(v, f.kind, steady_to_unix_ns)) return ns;
    }
    return 0;
}

}  // namespace jsonlw::detail
