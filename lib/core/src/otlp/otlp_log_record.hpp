// OtlpLogRecordEncoder: one JSON Lines record as one OTLP JSON LogRecord — the head before the
// body, the body (scanned, or through the DOM for any other JSON), and the tail after it
// (timeUnixNano, attributes, trace ids, eventName). Owned by one OtlpLogsEncoder (its sink's
// I/O thread) or one OtlpRecordForm (one serializer thread); owns its scanner and simdjson
// parser. The rules followed: docs/otlp.md.
#pragma once

#include <jsonlw/json_line.hpp>
#include <jsonlw/otlp_options.hpp>
#include <jsonlw/trace_context.hpp>

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::detail {

class OtlpBodyScanner;

// The moment a group of records is encoded: its observedTimeUnixNano, and the offset that
// turns steady-clock seconds into Unix time (docs/otlp.md, "Times").
struct OtlpClock {
    std::uint64_t observed_ns = 0;
    std::int64_t steady_to_unix_ns = 0;
    static OtlpClock now() noexcept;
};

// A value a log record takes from its record (one per OtlpLogRecordEncoder::pointers()): the
// value's raw compact JSON text, or (any_value) its AnyValue, already spelled; empty: absent.
// `number`: the double the text spells, when known (NaN: parse the text if needed).
struct OtlpFound {
    std::string_view text{};
    bool any_value = false;
    double number = __builtin_nan("");
};

class OtlpLogRecordEncoder {
public:
    explicit OtlpLogRecordEncoder(const OtlpOptions& opts);
    ~OtlpLogRecordEncoder();
    OtlpLogRecordEncoder(const OtlpLogRecordEncoder&) = delete;
    OtlpLogRecordEncoder& operator=(const OtlpLogRecordEncoder&) = delete;

    // The JSON pointers whose values the record's fields come from: the time fields, the
    // attributes, then the event-name field (when set), in that order.
    const std::vector<std::string>& pointers() const noexcept { return pointers_; }
    const OtlpOptions& options() const noexcept { return opts_; }

    // `{"observedTimeUnixNano":"…","severityNumber":9,"severityText":"INFO","body":` for
    // `clock`, in `out` (its capacity kept: once per batch, no allocation after the first).
    static void head(const OtlpClock& clock, std::string& out);

    // Appends the log record of one JSON Lines record (`line`, without its '\n') to `out`;
    // `head` is head(clock). A line that is not a JSON object gets a stringValue body and
    // is counted in malformed_bodies().
    void record(std::string_view line, std::string_view head, const OtlpClock& clock,
                LineBuffer& out);

    // Appends what follows the body — timeUnixNano, attributes, flags/traceId/spanId,
    // eventName — and the record's closing '}', from `found` (one per pointers()).
    void tail(std::span<const OtlpFound> found, const std::optional<TraceContext>& trace,
              const OtlpClock& clock, LineBuffer& out);

    // Appends the AnyValue of one JSON value (compact text scanned, any other JSON through
    // the DOM); false, and nothing appended, when `json` is not one JSON value.
    bool any_value(std::string_view json, LineBuffer& out);

    // The JSON text of the value at `pointer` inside the JSON object `json` (as the scanner
    // finds it in a whole line), kept until the next call; empty when there is none.
    std::string_view value_at(std::string_view json, std::string_view pointer);

    std::uint64_t malformed_bodies() const noexcept { return malformed_bodies_; }

private:
    bool fast_record(std::string_view line, std::string_view head, const OtlpClock& clock,
                     LineBuffer& out);
    void dom_record(std::string_view line, std::string_view head, const OtlpClock& clock,
                    LineBuffer& out);

    OtlpOptions opts_;
    std::vector<std::string> pointers_;
    std::string event_name_json_;  // the constant eventName, escaped; empty: none
    std::vector<std::string> attribute_keys_;  // `{"key":"<name>","value":` per attribute
    std::unique_ptr<OtlpBodyScanner> scanner_;
    simdjson::dom::parser parser_;
    std::vector<OtlpFound> found_;  // fast_record's, reused
    std::string scratch_;            // dom_record's and value_at()'s
    std::uint64_t malformed_bodies_ = 0;
};

}  // namespace jsonlw::detail
