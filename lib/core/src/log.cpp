#include <jsonlw/log.hpp>

#include <cstdio>

namespace jsonlw {

std::string_view to_string(LogLevel level) noexcept
{
    switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
    }
    return "?";
}

void log_to_stderr(LogLevel level, std::string_view message) noexcept
{
    const std::string_view lv = to_string(level);
    std::fprintf(stderr, "jsonlw %.*s: %.*s\n", static_cast<int>(lv.size()), lv.data(),
                 static_cast<int>(message.size()), message.data());
}

}  // namespace jsonlw
