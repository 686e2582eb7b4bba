// OtlpLogsEncoder: turns a group of records into one OTLP JSON LogsData line. Made and used by
// one OtlpSink on its writer's I/O thread; owns the line's fixed prefix (resource and scope)
// and the OtlpLogRecordEncoder that converts JSON Lines records. The rules followed:
// docs/otlp.md.
#pragma once

#include "otlp_log_record.hpp"

#include <jsonlw/json_line.hpp>
#include <jsonlw/otlp_options.hpp>

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jsonlw::detail {

// What a LogsData line holds before its log records: `{"resourceLogs":[{"resource":…,
// "scopeLogs":[{"scope":…,"logRecords":[`; and after them, with the line's end.
std::string otlp_logs_prefix(const OtlpOptions& opts, std::string_view host, pid_t pid);
inline constexpr std::string_view otlp_logs_suffix = "]}]}]}\n";

class OtlpLogsEncoder {
public:
    // `host` and `pid` become the resource's host.name and process.pid.
    OtlpLogsEncoder(OtlpOptions opts, std::string_view host, pid_t pid);

    // Appends one line — `{"resourceLogs":[…]}` and '\n' — holding a log record per line of
    // `lines` (complete JSON Lines records, each ending in '\n') to `out`, and returns how many
    // records it holds. A line that is not a JSON object becomes a record whose body is the
    // line as a string (nothing is lost); malformed_bodies() counts them.
    std::size_t encode(std::string_view lines, LineBuffer& out);

    std::uint64_t malformed_bodies() const noexcept { return records_.malformed_bodies(); }

private:
    std::string prefix_;  // up to and including "logRecords":[
    std::string head_;    // each record's, up to "body": (per encode())
    OtlpLogRecordEncoder records_;
};

}  // namespace jsonlw::detail
