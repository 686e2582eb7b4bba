// Lines: a group of serialized records, ready to append.
#pragma once

#include <cstddef>
#include <string_view>

namespace jsonlw {

// What serialize_batch() returns and append() takes: the bytes of `records` complete lines
// (each ends with '\n'), `sanitized` of which had invalid UTF-8 replaced. The bytes live in
// the writer's batch buffer until the next serialize_batch() call.
struct Lines {
    std::string_view bytes{};
    std::size_t records = 0;
    std::size_t sanitized = 0;
    // The bytes are one OTLP LogsData line holding `records` log records, not the records'
    // own lines (LineFormat::otlp: the engine wrote it so, detail/otlp_record_form.hpp); the
    // writer's OtlpSink passes it on as it is.
    bool log_records = false;
};

}  // namespace jsonlw
