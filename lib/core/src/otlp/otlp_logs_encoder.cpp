// OtlpLogsEncoder (see otlp_logs_encoder.hpp). The document shape is opentelemetry-proto's
// opentelemetry/proto/logs/v1/logs.proto (LogsData -> ResourceLogs -> ScopeLogs -> LogRecord),
// spelled by the OTLP specification's JSON rules (docs/otlp.md).
#include "otlp_logs_encoder.hpp"

#include <jsonlw/version.hpp>

#include <cstdlib>
#include <errno.h>

namespace jsonlw::detail {

using namespace jsonlw::literals;

namespace {

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

}  // namespace

std::string otlp_logs_prefix(const OtlpOptions& opts, std::string_view host, pid_t pid)
{
    LineBuffer buf;
    JsonLine out(buf);
    out.begin_object().key("resourceLogs"_key).begin_array().begin_object();
    out.key("resource"_key).begin_object().key("attributes"_key).begin_array();
    string_attribute(out, "service.name",
                     opts.service_name.empty() ? default_service_name() : opts.service_name);
    string_attribute(out, "host.name", host);
    out.begin_object().key("key"_key).string("process.pid");
    out.key("value"_key).begin_object().key("intValue"_key).string(std::to_string(pid));
    out.end_object().end_object();
    out.end_array().end_object();
    out.key("scopeLogs"_key).begin_array().begin_object();
    out.key("scope"_key).begin_object().key("name"_key).string("jsonlw");
    out.key("version"_key).string(version_string).end_object();
    out.key("logRecords"_key).begin_array();
    return std::string(buf.data(), buf.size());
}

OtlpLogsEncoder::OtlpLogsEncoder(OtlpOptions opts, std::string_view host, pid_t pid)
    : prefix_(otlp_logs_prefix(opts, host, pid)), records_(opts)
{
}

std::size_t OtlpLogsEncoder::encode(std::string_view lines, LineBuffer& out)
{
    const OtlpClock clock = OtlpClock::now();
    OtlpLogRecordEncoder::head(clock, head_);
    const std::string_view head = head_;
    out.append(prefix_.data(), prefix_.data() + prefix_.size());
    std::size_t records = 0;
    while (!lines.empty()) {
        const std::size_t nl = lines.find('\n');
        const std::string_view one = lines.substr(0, nl);
        lines.remove_prefix(nl == std::string_view::npos ? lines.size() : nl + 1);
        if (records > 0) out.push_back(',');
        records_.record(one, head, clock, out);
        ++records;
    }
    out.append(otlp_logs_suffix.data(), otlp_logs_suffix.data() + otlp_logs_suffix.size());
    return records;
}

}  // namespace jsonlw::detail
