// The output format of a writer's lines: JSON Lines (the records themselves) or OTLP JSON Lines
// (each line one OpenTelemetry LogsData document holding a group's records as log records),
// and what the OTLP form takes from each record. See docs/otlp.md.
#pragma once

#include <string>
#include <vector>

namespace jsonlw {

enum class LineFormat {
    // One record per line, as the writer's encoder wrote it (the default; byte-identical to a
    // writer without this option).
    jsonl,
    // One OTLP LogsData JSON document per line (resourceLogs -> scopeLogs -> logRecords), one
    // group of records per line: what the OpenTelemetry Collector's file exporter writes and
    // its `otlpjsonfile` receiver reads. The writer's sink gets these lines instead.
    otlp,
};

// How a record's own time is spelled at a JSON pointer (RFC 6901) into the record.
struct OtlpTimeField {
    enum class Kind {
        iso8601_utc,     // "2026-11-04T05:06:08.623456+00:00" (the writers' UTC stamps)
        steady_seconds,  // steady-clock seconds (CLOCK_MONOTONIC, the perf metrics' *_time):
                         // turned into Unix time with the host's wall-minus-steady offset
        unix_seconds,    // seconds since the Unix epoch, a number
    };
    std::string pointer;  // "/finished_at", "/perf_metrics/timing_metrics/last_token_time"
    Kind kind = Kind::iso8601_utc;
};

// A log record attribute copied from the record: `name` (an OpenTelemetry semantic convention
// name where one fits, e.g. "gen_ai.usage.output_tokens") from the value at `pointer`; left out
// when the record has nothing there (or null).
struct OtlpAttribute {
    std::string name;
    std::string pointer;
};

// What the OTLP form takes from each record. The shipped writers fill the fields a user leaves
// empty with their own (docs/otlp.md lists them).
struct OtlpOptions {
    // The resource's service.name. Empty: $OTEL_SERVICE_NAME, else "unknown_service:<program>"
    // as OpenTelemetry SDKs name a service nobody named.
    std::string service_name{};
    // Each log record's eventName. With event_name_field, its string value is appended after a
    // '.' ("jsonlw.request_trace" + "." + "request").
    std::string event_name{};
    std::string event_name_field{};
    // Where the record's own time is: the first pointer that holds a usable value gives
    // timeUnixNano; none (or no fields): timeUnixNano is left out (0, "unknown" in OTLP).
    std::vector<OtlpTimeField> time_fields{};
    // Attributes copied from the record (the body keeps the whole record too).
    std::vector<OtlpAttribute> attributes{};

    // `given` with every empty field taken from `own` (how a shipped writer adds its event
    // name, time fields and attributes to what a user set).
    static OtlpOptions merged(OtlpOptions given, const OtlpOptions& own)
    {
        if (given.service_name.empty()) given.service_name = own.service_name;
        if (given.event_name.empty()) {
            given.event_name = own.event_name;
            if (given.event_name_field.empty()) given.event_name_field = own.event_name_field;
        }
        if (given.time_fields.empty()) given.time_fields = own.time_fields;
        if (given.attributes.empty()) given.attributes = own.attributes;
        return given;
    }
};

}  // namespace jsonlw
