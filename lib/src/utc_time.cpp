#include <jsonlw/utc_time.hpp>

#include <fmt/format.h>

#include <ctime>

namespace jsonlw {
namespace {

struct Split {
    std::tm tm{};
    long long micros = 0;
};

Split split(WallClock::time_point tp)
{
    using namespace std::chrono;
    const auto us = duration_cast<microseconds>(tp.time_since_epoch()).count();
    long long secs = us / 1'000'000;
    long long micros = us % 1'000'000;
    if (micros < 0) {
        micros += 1'000'000;
        --secs;
    }
    Split s;
    const std::time_t t = static_cast<std::time_t>(secs);
    ::gmtime_r(&t, &s.tm);
    s.micros = micros;
    return s;
}

}  // namespace

void append_utc_iso8601(LineBuffer& out, WallClock::time_point tp)
{
    const Split s = split(tp);
    fmt::format_to(fmt::appender(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00",
                   s.tm.tm_year + 1900, s.tm.tm_mon + 1, s.tm.tm_mday, s.tm.tm_hour,
                   s.tm.tm_min, s.tm.tm_sec, s.micros);
}

std::string utc_iso8601(WallClock::time_point tp)
{
    LineBuffer buf;
    append_utc_iso8601(buf, tp);
    return fmt::to_string(buf);
}

std::string utc_hour(WallClock::time_point tp)
{
    const Split s = split(tp);
    return fmt::format("{:04}-{:02}-{:02}T{:02}", s.tm.tm_year + 1900, s.tm.tm_mon + 1,
                       s.tm.tm_mday, s.tm.tm_hour);
}

}  // namespace jsonlw
