// Log levels and the log sink a writer reports through.
#pragma once

#include <functional>
#include <string_view>

namespace jsonlw {

enum class LogLevel { debug, info, warning, error };

// A sink for a writer's log lines. Called mostly from the writer's I/O thread, but also from
// the thread that calls start() (start-up messages), from the executor's thread (a close
// that timed out) and, in configured writers, from the caller's thread (rate-limited
// warnings of their hooks): it must be thread-safe and must not call back into the writer.
// An empty LogSink means "write to stderr".
using LogSink = std::function<void(LogLevel, std::string_view)>;

std::string_view to_string(LogLevel level) noexcept;

// The default sink: one line "jsonlw <level>: <message>" on stderr.
void log_to_stderr(LogLevel level, std::string_view message) noexcept;

}  // namespace jsonlw
