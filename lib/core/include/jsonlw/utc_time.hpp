// UTC timestamps as the writers spell them (ISO-8601, microseconds, "+00:00").
#pragma once

#include <jsonlw/json_line.hpp>

#include <chrono>
#include <string>

namespace jsonlw {

using WallClock = std::chrono::system_clock;

// "2026-09-03T14:05:09.123456+00:00", appended to `out`: Python's datetime.isoformat() of an
// aware UTC time, except that the microseconds are always written (isoformat() drops a zero
// fraction), so every stamp has one width. Thread-safe; no allocation beyond buffer growth.
void append_utc_iso8601(LineBuffer& out, WallClock::time_point tp);
std::string utc_iso8601(WallClock::time_point tp);

// "2026-09-03T14": the hour folder of a record (the first 13 characters of the above).
std::string utc_hour(WallClock::time_point tp);

}  // namespace jsonlw
