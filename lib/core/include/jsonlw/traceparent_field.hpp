// The "traceparent" member a record's line carries when the record has a W3C trace context:
// one rule for the three writers (docs/writers.md, "Trace context on records").
#pragma once

#include <jsonlw/json_line.hpp>
#include <jsonlw/trace_context.hpp>

#include <optional>
#include <string_view>

namespace jsonlw {

// Writes `"traceparent":"00-<32 hex>-<16 hex>-<2 hex>"` (docs/trace_context.md, "Formatting")
// when `tc` holds a context, and nothing otherwise: the line without one is the line as it
// was before records carried trace contexts. One branch when absent, no allocation when
// present (the value is formatted on the stack).
inline void write_traceparent(JsonLine& line, const std::optional<TraceContext>& tc)
{
    if (!tc) [[likely]]
        return;
    char text[TraceContext::traceparent_size];
    tc->format_traceparent(text);
    line.key("traceparent"_key).string(std::string_view(text, sizeof text));
}

}  // namespace jsonlw
