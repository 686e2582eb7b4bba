// OtlpLogRecordEncoder (see otlp_log_record.hpp). The record's shape is opentelemetry-proto's
// opentelemetry/proto/logs/v1/logs.proto LogRecord, spelled by the OTLP specification's JSON
// rules (docs/otlp.md): lowerCamelCase field names, trace and span ids as lowercase hex,
// 64-bit integers as decimal strings, enums as numbers.
#include "otlp_log_record.hpp"

#include "otlp_any_value.hpp"
#include "otlp_body_scanner.hpp"
#include "otlp_time.hpp"

#include <fmt/format.h>

#include <chrono>
#include <iterator>

namespace jsonlw::detail {

using namespace jsonlw::literals;

namespace {

void put(LineBuffer& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }

void decimal(LineBuffer& out, std::uint64_t v)
{
    char digits[24];
    const auto end = fmt::format_to(digits, "{}", v);
    put(out, std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

}  // namespace

OtlpClock OtlpClock::now() noexcept
{
    const auto wall = std::chrono::system_clock::now();
    const auto steady = std::chrono::steady_clock::now();
    OtlpClock c;
    c.observed_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count());
    c.steady_to_unix_ns =
        static_cast<std::int64_t>(c.observed_ns) -
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady.time_since_epoch()).count();
    return c;
}

OtlpLogRecordEncoder::OtlpLogRecordEncoder(const OtlpOptions& opts) : opts_(opts)
{
    for (const OtlpTimeField& f : opts_.time_fields) pointers_.push_back(f.pointer);
    for (const OtlpAttribute& a : opts_.attributes) {
        pointers_.push_back(a.pointer);
        LineBuffer name;
        JsonLine(name).string(a.name);
        attribute_keys_.push_back("{\"key\":" + std::string(name.data(), name.size()) + ",\"value\":");
    }
    if (!opts_.event_name_field.empty()) pointers_.push_back("/" + opts_.event_name_field);
    scanner_ = std::make_unique<OtlpBodyScanner>(pointers_);
    found_.resize(pointers_.size());
    if (!opts_.event_name.empty()) {
        LineBuffer name;
        JsonLine(name).string(opts_.event_name);
        event_name_json_.assign(name.data(), name.size());
    }
}

OtlpLogRecordEncoder::~OtlpLogRecordEncoder() = default;

void OtlpLogRecordEncoder::head(const OtlpClock& clock, std::string& out)
{
    // SeverityNumber SEVERITY_NUMBER_INFO (logs.proto): every record a writer keeps is an
    // event at the informational level.
    out.clear();
    fmt::format_to(std::back_inserter(out),
                   R"({{"observedTimeUnixNano":"{}","severityNumber":9,"severityText":"INFO","body":)",
                   clock.observed_ns);
}

void OtlpLogRecordEncoder::record(std::string_view line, std::string_view head,
                                  const OtlpClock& clock, LineBuffer& out)
{
    if (!fast_record(line, head, clock, out)) dom_record(line, head, clock, out);
}

bool OtlpLogRecordEncoder::fast_record(std::string_view line, std::string_view head,
                                       const OtlpClock& clock, LineBuffer& out)
{
    // The body is scanned straight into `out` (no copy): the fields taken from it follow it.
    const std::size_t mark = out.size();
    put(out, head);
    if (!scanner_->scan(line, out)) {
        out.resize(mark);
        return false;
    }
    for (std::size_t i = 0; i < found_.size(); ++i) found_[i] = OtlpFound{scanner_->found(i)};
    tail(found_, scanner_->trace(), clock, out);
    return true;
}

void OtlpLogRecordEncoder::dom_record(std::string_view line, std::string_view head,
                                      const OtlpClock& clock, LineBuffer& out)
{
    simdjson::dom::element rec;
    const bool parsed = !parser_.parse(line.data(), line.size()).get(rec) &&
                        rec.type() == simdjson::dom::element_type::OBJECT;
    put(out, head);
    JsonLine body(out);
    if (!parsed) {
        ++malformed_bodies_;
        body.begin_object().key("stringValue"_key).string(line).end_object();
        out.push_back('}');
        return;
    }
    const simdjson::dom::object obj(rec);
    // The traceparent key becomes traceId, spanId and flags (and leaves the body).
    std::optional<TraceContext> trace;
    std::string_view traceparent;
    if (!obj["traceparent"].get(traceparent)) trace = TraceContext::parse_traceparent(traceparent);
    body.begin_object().key("kvlistValue"_key).begin_object().key("values"_key);
    write_key_values(body, obj, trace ? std::string_view("traceparent") : std::string_view{});
    body.end_object().end_object();
    // The values the tail takes, as compact text (the DOM's own spelling).
    std::vector<std::string> texts(pointers_.size());
    std::vector<OtlpFound> found(pointers_.size());
    for (std::size_t i = 0; i < pointers_.size(); ++i) {
        simdjson::dom::element v;
        if (rec.at_pointer(pointers_[i]).get(v)) continue;
        texts[i] = simdjson::to_string(v);
        found[i].text = texts[i];
    }
    tail(found, trace, clock, out);
}

void OtlpLogRecordEncoder::tail(std::span<const OtlpFound> found,
                                const std::optional<TraceContext>& trace, const OtlpClock& clock,
                                LineBuffer& out)
{
    std::size_t at = 0;
    std::uint64_t time_ns = 0;
    for (const OtlpTimeField& f : opts_.time_fields) {
        const OtlpFound& v = found[at++];
        if (time_ns != 0 || v.text.empty() || v.any_value) continue;
        time_ns = v.number == v.number && f.kind != OtlpTimeField::Kind::iso8601_utc
                      ? seconds_unix_nanos(v.number, f.kind, clock.steady_to_unix_ns)
                      : raw_unix_nanos(v.text, f.kind, clock.steady_to_unix_ns);
    }
    if (time_ns) {
        put(out, R"(,"timeUnixNano":")");
        decimal(out, time_ns);
        out.push_back('"');
    }
    bool any_attribute = false;
    for (const std::string& key : attribute_keys_) {
        const OtlpFound& v = found[at++];
        if (v.text.empty() || v.text == "null") continue;
        put(out, any_attribute ? std::string_view(",") : std::string_view(R"(,"attributes":[)"));
        any_attribute = true;
        put(out, key);
        if (v.any_value) put(out, v.text);
        else if (!any_value(v.text, out)) put(out, "{}");
        out.push_back('}');
    }
    if (any_attribute) out.push_back(']');
    if (trace) {
        char tp[TraceContext::traceparent_size];  // "00-<32 hex>-<16 hex>-<2 hex>"
        trace->format_traceparent(tp);
        put(out, R"(,"flags":)");
        decimal(out, trace->flags);
        put(out, R"(,"traceId":")");
        put(out, std::string_view(tp + 3, 32));
        put(out, R"(","spanId":")");
        put(out, std::string_view(tp + 36, 16));
        out.push_back('"');
    }
    if (!event_name_json_.empty()) {
        put(out, R"(,"eventName":)");
        const std::string_view field =
            opts_.event_name_field.empty() || found[at].any_value ? std::string_view{} : found[at].text;
        if (field.size() >= 2 && field.front() == '"') {
            // The constant name without its closing quote, '.', the field's escaped text.
            put(out, std::string_view(event_name_json_).substr(0, event_name_json_.size() - 1));
            out.push_back('.');
            put(out, field.substr(1));
        } else {
            put(out, event_name_json_);
        }
    }
    out.push_back('}');
}

bool OtlpLogRecordEncoder::any_value(std::string_view json, LineBuffer& out)
{
    if (scanner_->any_value(json, out)) return true;
    simdjson::dom::element v;
    if (parser_.parse(json.data(), json.size()).get(v)) return false;
    JsonLine line(out);
    write_any_value(line, v);
    return true;
}

std::string_view OtlpLogRecordEncoder::value_at(std::string_view json, std::string_view pointer)
{
    // As the scanner notes it in a whole line (the text as written; object members only).
    OtlpBodyScanner scanner({std::string(pointer)});
    LineBuffer ignored;
    if (scanner.scan(json, ignored)) {
        scratch_.assign(scanner.found(0));
        return scratch_;
    }
    simdjson::dom::element root, v;
    if (parser_.parse(json.data(), json.size()).get(root) || root.at_pointer(pointer).get(v))
        return {};
    scratch_ = simdjson::to_string(v);
    return scratch_;
}

}  // namespace jsonlw::detail
