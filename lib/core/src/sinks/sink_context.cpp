// SinkContext::write_log and file_event: a sink logs through its writer's log sink and tells
// a listener about its files.
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

void SinkContext::file_event(FileEvent::Kind kind, const std::filesystem::path& path,
                             std::uint64_t records, std::size_t group_offset) const noexcept
{
    if (!on_file_event) return;
    try {
        FileEvent e{kind, path.lexically_relative(directory).generic_string(), records,
                    group_offset};
        if (e.file.empty() || e.file.rfind("..", 0) == 0) e.file = path.generic_string();
        on_file_event(e);
    } catch (...) {
        // A listener's failure must not cost records.
    }
}

}  // namespace jsonlw
