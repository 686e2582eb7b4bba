// Reading OTLP JSON Lines back: the records a LogsData line holds, as the JSON Lines records a
// writer with format jsonl would have written (docs/otlp.md, "Reading it back"). Used by the
// report's readers and by `jsonlw validate`, each with its own OtlpRecords per thread.
#pragma once

#include <jsonlw/json_line.hpp>

#include <simdjson.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::tools {

// Whether a parsed line is an OTLP LogsData document (an object whose first member is
// "resourceLogs"), rather than a record.
bool is_otlp_logs(simdjson::dom::element root) noexcept;

// Turns one LogsData line into its records. Not thread-safe; reuse one per thread.
class OtlpRecords {
public:
    // Fills records() with one JSON object per log record, in order: its body's kvlistValue as
    // an object (intValue as an integer, doubleValue a number, {} null, bytesValue its base64
    // text), then "traceparent" built from traceId, spanId and flags when the record has them.
    // False, with error() saying where, when the document does not follow the OTLP JSON rules
    // for what jsonlw writes (a member of the wrong type, an int64 not a decimal string, an id
    // not lowercase hex of its length, a body that is not a kvlistValue, an AnyValue with two
    // values); records() then holds the records before the bad one.
    bool decode(simdjson::dom::element root);

    std::size_t size() const noexcept { return ends_.size(); }
    std::string_view record(std::size_t i) const noexcept
    {
        const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
        return {buf_.data() + begin, ends_[i] - begin};
    }
    const std::string& error() const noexcept { return error_; }

private:
    bool fail(std::string what);
    bool log_record(simdjson::dom::element rec);
    bool any_value(JsonLine& out, simdjson::dom::element v, int depth);
    bool key_values(JsonLine& out, simdjson::dom::element list, int depth);
    // f(key, value) for each {"key":…,"value":…} of `list`; false when `list` is not an array
    // (failing with not_array), a member is not such an object (not_member), or f is false.
    template <class F>
    bool each_key_value(simdjson::dom::element list, const char* not_array, const char* not_member, F f);
    // A KeyValue list (resource or record attributes): checked, not kept.
    bool check_attributes(simdjson::dom::element list);

    LineBuffer buf_;
    LineBuffer scratch_;
    std::vector<std::size_t> ends_;
    std::string error_;
    std::string where_;
};

}  // namespace jsonlw::tools
