// OtlpRecords (see report/detail/otlp_lines.hpp): LogsData -> the records, checked against the
// OTLP JSON rules (opentelemetry-proto's logs.proto and common.proto, JSON mapping per the
// OTLP specification: lowerCamelCase names, hex ids, 64-bit integers as decimal strings).
#include <jsonlw/report/detail/otlp_lines.hpp>

#include <jsonlw/trace_context.hpp>

#include <fmt/format.h>

#include <charconv>

namespace jsonlw::tools {

namespace {

constexpr int max_depth = 128;

bool decimal_int64(std::string_view s) noexcept
{
    long long v;
    const auto* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data(), end, v);
    return !s.empty() && ec == std::errc{} && p == end && (s.size() < 2 || s[0] != '0') &&
           !(s.size() >= 2 && s[0] == '-' && s[1] == '0');
}

bool decimal_uint64(std::string_view s) noexcept
{
    unsigned long long v;
    const auto* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data(), end, v);
    return !s.empty() && ec == std::errc{} && p == end && (s.size() < 2 || s[0] != '0');
}

bool lower_hex(std::string_view s, std::size_t n) noexcept
{
    if (s.size() != n) return false;
    bool nonzero = false;
    for (const char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
        nonzero |= c != '0';
    }
    return nonzero;
}

}  // namespace

bool is_otlp_logs(simdjson::dom::element root) noexcept
{
    simdjson::dom::object obj;
    if (root.get(obj)) return false;
    for (const auto field : obj) return field.key == "resourceLogs";
    return false;
}

bool OtlpRecords::fail(std::string what)
{
    error_ = where_.empty() ? std::move(what) : where_ + ": " + what;
    return false;
}

bool OtlpRecords::decode(simdjson::dom::element root)
{
    buf_.clear();
    ends_.clear();
    error_.clear();
    where_.clear();
    simdjson::dom::array resource_logs;
    if (root["resourceLogs"].get(resource_logs)) return fail("resourceLogs is not an array");
    std::size_t r = 0;
    for (const auto rl : resource_logs) {
        simdjson::dom::array scope_logs;
        where_ = fmt::format("resourceLogs[{}]", r);
        if (rl.type() != simdjson::dom::element_type::OBJECT) return fail("not an object");
        simdjson::dom::element resource;
        if (!rl["resource"].get(resource)) {
            simdjson::dom::element attributes;
            where_ += ".resource";
            if (resource.type() != simdjson::dom::element_type::OBJECT) return fail("not an object");
            if (!resource["attributes"].get(attributes) && !check_attributes(attributes)) return false;
            where_ = fmt::format("resourceLogs[{}]", r);
        }
        if (rl["scopeLogs"].get(scope_logs)) return fail("scopeLogs is not an array");
        std::size_t s = 0;
        for (const auto sl : scope_logs) {
            simdjson::dom::array records;
            where_ = fmt::format("resourceLogs[{}].scopeLogs[{}]", r, s);
            if (sl.type() != simdjson::dom::element_type::OBJECT) return fail("not an object");
            if (sl["logRecords"].get(records)) return fail("logRecords is not an array");
            std::size_t k = 0;
            for (const auto rec : records) {
                where_ = fmt::format("resourceLogs[{}].scopeLogs[{}].logRecords[{}]", r, s, k++);
                if (!log_record(rec)) return false;
            }
            ++s;
        }
        ++r;
    }
    where_.clear();
    if (ends_.empty()) return fail("no log record");
    return true;
}

bool OtlpRecords::log_record(simdjson::dom::element rec)
{
    simdjson::dom::object obj;
    if (rec.get(obj)) return fail("not an object");
    std::string_view trace_id, span_id;
    std::uint64_t flags = 0;
    simdjson::dom::element body;
    bool has_body = false;
    for (const auto field : obj) {
        const std::string_view k = field.key;
        std::string_view s;
        if (k == "timeUnixNano" || k == "observedTimeUnixNano") {
            if (field.value.get(s) || !decimal_uint64(s))
                return fail(std::string(k) + " is not a decimal string");
        } else if (k == "traceId") {
            if (field.value.get(trace_id) || !lower_hex(trace_id, 32))
                return fail("traceId is not 32 lowercase hex digits (not all zero)");
        } else if (k == "spanId") {
            if (field.value.get(span_id) || !lower_hex(span_id, 16))
                return fail("spanId is not 16 lowercase hex digits (not all zero)");
        } else if (k == "flags") {
            if (field.value.get(flags) || flags > 0xffffffffu) return fail("flags is not a uint32 number");
        } else if (k == "severityNumber") {
            std::int64_t n;
            if (field.value.get(n) || n < 0 || n > 24) return fail("severityNumber is not a number 0..24");
        } else if (k == "severityText" || k == "eventName") {
            if (field.value.get(s)) return fail(std::string(k) + " is not a string");
        } else if (k == "droppedAttributesCount") {
            std::uint64_t n;
            if (field.value.get(n)) return fail("droppedAttributesCount is not a number");
        } else if (k == "attributes") {
            if (!check_attributes(field.value)) return false;
        } else if (k == "body") {
            body = field.value;
            has_body = true;
        } else {
            return fail("\"" + std::string(k) + "\" is not a LogRecord field");
        }
    }
    if (trace_id.empty() != span_id.empty()) return fail("traceId without spanId, or the reverse");
    if (!has_body) return fail("no body");
    simdjson::dom::element values;
    simdjson::dom::object body_obj;
    if (body.get(body_obj) || body_obj.size() != 1 || body_obj["kvlistValue"]["values"].get(values))
        return fail("the body is not a kvlistValue");
    JsonLine line(buf_);
    line.begin_object();
    // The members, then traceparent last (where the writers put it).
    const bool members = each_key_value(
        values, "body.kvlistValue.values is not an array",
        "a body member is not {\"key\":…,\"value\":…}",
        [&](std::string_view key, simdjson::dom::element v) { return any_value(line.key(key), v, 1); });
    if (!members) return false;
    if (!trace_id.empty()) {
        const std::string tp = fmt::format("00-{}-{}-{:02x}", trace_id, span_id, flags & 0xffu);
        line.key("traceparent").string(tp);
    }
    line.end_object();
    ends_.push_back(buf_.size());
    return true;
}

template <class F>
bool OtlpRecords::each_key_value(simdjson::dom::element list, const char* not_array,
                                 const char* not_member, F f)
{
    simdjson::dom::array items;
    if (list.get(items)) return fail(not_array);
    for (const auto kv : items) {
        std::string_view key;
        simdjson::dom::element v;
        if (kv.type() != simdjson::dom::element_type::OBJECT || kv["key"].get(key) || kv["value"].get(v))
            return fail(not_member);
        if (!f(key, v)) return false;
    }
    return true;
}

bool OtlpRecords::check_attributes(simdjson::dom::element list)
{
    scratch_.clear();
    JsonLine out(scratch_);
    return each_key_value(list, "attributes is not an array",
                          "an attribute is not {\"key\":…,\"value\":…}",
                          [&](std::string_view, simdjson::dom::element v) {
                              out.begin_array();
                              if (!any_value(out, v, 1)) return false;
                              out.end_array();
                              return true;
                          });
}

bool OtlpRecords::any_value(JsonLine& out, simdjson::dom::element v, int depth)
{
    if (depth > max_depth) return fail("AnyValue nested too deep");
    simdjson::dom::object obj;
    if (v.get(obj)) return fail("an AnyValue is not an object");
    if (obj.size() == 0) {
        out.null();
        return true;
    }
    if (obj.size() != 1) return fail("an AnyValue holds more than one value");
    const auto field = *obj.begin();
    const std::string_view k = field.key;
    std::string_view s;
    if (k == "stringValue" || k == "bytesValue") {
        if (field.value.get(s)) return fail(std::string(k) + " is not a string");
        out.string(s);
    } else if (k == "intValue") {
        if (field.value.get(s) || !decimal_int64(s)) return fail("intValue is not a decimal string");
        out.raw(s);
    } else if (k == "doubleValue") {
        double d;
        if (field.value.get(d)) return fail("doubleValue is not a number");
        out.number_or_null(d);
    } else if (k == "boolValue") {
        bool b;
        if (field.value.get(b)) return fail("boolValue is not true or false");
        out.value(b);
    } else if (k == "arrayValue") {
        simdjson::dom::array items;
        if (field.value["values"].get(items)) return fail("arrayValue.values is not an array");
        out.begin_array();
        for (const auto item : items)
            if (!any_value(out, item, depth + 1)) return false;
        out.end_array();
    } else if (k == "kvlistValue") {
        simdjson::dom::element list;
        if (field.value["values"].get(list)) return fail("kvlistValue.values is missing");
        return key_values(out, list, depth + 1);
    } else {
        return fail("\"" + std::string(k) + "\" is not an AnyValue field");
    }
    return true;
}

bool OtlpRecords::key_values(JsonLine& out, simdjson::dom::element list, int depth)
{
    out.begin_object();
    const bool members = each_key_value(
        list, "kvlistValue.values is not an array", "a kvlist member is not {\"key\":…,\"value\":…}",
        [&](std::string_view key, simdjson::dom::element v) { return any_value(out.key(key), v, depth); });
    if (!members) return false;
    out.end_object();
    return true;
}

}  // namespace jsonlw::tools
