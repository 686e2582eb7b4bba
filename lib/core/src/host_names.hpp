// The names files and writer ids are made of (host_names.cpp; libjsonlw internal).
#pragma once

#include <ctime>
#include <string>

namespace jsonlw::detail {

// This machine's name ("localhost" when it has none), and `now` as YYYYMMDDTHHMMSSZ (UTC).
std::string host_name();
std::string utc_stamp(std::time_t now = std::time(nullptr));

}  // namespace jsonlw::detail
