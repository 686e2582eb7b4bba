// SinkContext::write_log: a sink logs through its writer's log sink.
#include <jsonlw/sinks/line_sink.hpp>

namespace jsonlw {

void SinkContext::write_log(LogLevel level, std::string_view message) const noexcept
{
    try {
        if (log) log(level, message);
        else log_to_stderr(level, message);
    } catch (...) {
        // A throwing log sink must not cost records.
    }
}

}  // namespace jsonlw
