// OtlpLogsEncoder: turns a group of JSON Lines records into one OTLP JSON LogsData line.
// Made and used by one OtlpSink on its writer's I/O thread; owns its simdjson parser and the
// line's fixed prefix (resource and scope). The rules followed: docs/otlp.md.
#pragma once

#include <jsonlw/json_line.hpp>
#include <jsonlw/otlp_options.hpp>

#include <simdjson.h>

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <memory>
#include <string_view>
#include <vector>

namespace jsonlw::detail {

class OtlpBodyScanner;

class OtlpLogsEncoder {
public:
    // `host` and `pid` become the resource's host.name and process.pid.
    OtlpLogsEncoder(OtlpOptions opts, std::string_view host, pid_t pid);
    ~OtlpLogsEncoder();

    // Appends one line — `{"resourceLogs":[…]}` and '\n' — holding a log record per line of
    // `lines` (complete JSON Lines records, each ending in '\n') to `out`, and returns how many
    // records it holds. A line that is not a JSON object becomes a record whose body is the
    // line as a string (nothing is lost); malformed_bodies() counts them.
    std::size_t encode(std::string_view lines, LineBuffer& out);

    std::uint64_t malformed_bodies() const noexcept { return malformed_bodies_; }

private:
    // The fast path (OtlpBodyScanner); false leaves the line to record(), the DOM path.
    bool fast_record(std::string_view line, LineBuffer& out, std::uint64_t observed_ns,
                     std::int64_t steady_to_unix_ns);
    void record(std::string_view line, JsonLine& out, std::uint64_t observed_ns,
                std::int64_t steady_to_unix_ns);
    std::uint64_t record_time(simdjson::dom::element rec, std::int64_t steady_to_unix_ns) const;

    OtlpOptions opts_;
    std::string prefix_;  // up to and including "logRecords":[
    std::string event_name_json_;  // the constant "eventName" member, or empty
    simdjson::dom::parser parser_;
    std::unique_ptr<OtlpBodyScanner> scanner_;
    std::vector<std::string> attribute_keys_;  // `{"key":"<name>","value":` per attribute
    std::uint64_t malformed_bodies_ = 0;
};

}  // namespace jsonlw::detail
