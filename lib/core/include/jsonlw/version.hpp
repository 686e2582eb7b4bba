// The library's version.
#pragma once

#define JSONLW_VERSION_MAJOR 0
#define JSONLW_VERSION_MINOR 1
#define JSONLW_VERSION_PATCH 0

namespace jsonlw {
inline constexpr const char* version_string = "0.1.0";
}  // namespace jsonlw
