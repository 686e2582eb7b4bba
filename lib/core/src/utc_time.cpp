#include <jsonlw/utc_time.hpp>

#include <fmt/format.h>

#include <cstring>
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
    const int year = s.tm.tm_year + 1900;
    if (year < 0 || year > 9999) [[unlikely]] {
        fmt::format_to(fmt::appender(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00",
                       year, s.tm.tm_mon + 1, s.tm.tm_mday, s.tm.tm_hour, s.tm.tm_min,
                       s.tm.tm_sec, s.micros);
        return;
    }
    // The same 32 characters, two digits at a time (a runtime format string costs ~10x).
    static constexpr char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char b[32];
    const auto put2 = [&](int at, long long v) {
        std::memcpy(b + at, pairs + 2 * v, 2);
    };
    put2(0, year / 100);
    put2(2, year % 100);
    b[4] = '-';
    put2(5, s.tm.tm_mon + 1);
    b[7] = '-';
    put2(8, s.tm.tm_mday);
    b[10] = 'T';
    put2(11, s.tm.tm_hour);
    b[13] = ':';
    put2(14, s.tm.tm_min);
    b[16] = ':';
    put2(17, s.tm.tm_sec);  // 0..60 (a leap second)
    b[19] = '.';
    put2(20, s.micros / 10000);
    put2(22, s.micros / 100 % 100);
    put2(24, s.micros % 100);
    std::memcpy(b + 26, "+00:00", 6);
    out.append(b, b + sizeof b);
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
