// parse_utc_iso8601_ns and unix_nanos (see otlp_time.hpp).
#include "otlp_time.hpp"

#include <charconv>
#include <chrono>
#include <cmath>

namespace jsonlw::detail {

namespace {

bool digits(std::string_view s, std::size_t at, std::size_t n, int& out) noexcept
{
    if (at + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    out = v;
    return true;
}

}  // namespace

std::optional<std::uint64_t> parse_utc_iso8601_ns(std::string_view s) noexcept
{
    int y, mo, d, h, mi, sec;
    if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) ||
        s[7] != '-' || !digits(s, 8, 2, d) || s[10] != 'T' || !digits(s, 11, 2, h) ||
        s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec))
        return std::nullopt;
    std::size_t at = 19;
    std::uint64_t frac_ns = 0;
    if (at < s.size() && s[at] == '.') {
        ++at;
        std::uint64_t scale = 100000000;
        const std::size_t first = at;
        while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
            if (at - first >= 9) return std::nullopt;
            frac_ns += static_cast<std::uint64_t>(s[at] - '0') * scale;
            scale /= 10;
            ++at;
        }
        if (at == first) return std::nullopt;
    }
    const std::string_view zone = s.substr(at);
    if (zone != "Z" && zone != "+00:00") return std::nullopt;
    const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month(mo),
                                          std::chrono::day(d)};
    if (!ymd.ok() || y < 1970 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
    const auto days = std::chrono::sys_days(ymd).time_since_epoch().count();
    const std::uint64_t secs = static_cast<std::uint64_t>(days) * 86400 +
                               static_cast<std::uint64_t>(h * 3600 + mi * 60 + sec);
    return secs * 1000000000ull + frac_ns;
}

std::uint64_t seconds_unix_nanos(double seconds, OtlpTimeField::Kind kind,
                            std::int64_t steady_to_unix_ns) noexcept
{
    if (!std::isfinite(seconds) || seconds <= 0) return 0;
    if (seconds >= 9.2e9) return 0;
    // Whole seconds and the fraction apart: a double near 1.7e18 ns would round nanoseconds
    // away (1700000000.25 s must stay ...250000000 ns).
    const double whole = std::floor(seconds);
    const std::int64_t ns = static_cast<std::int64_t>(whole) * 1000000000 +
                            std::llround((seconds - whole) * 1e9) +
                            (kind == OtlpTimeField::Kind::steady_seconds ? steady_to_unix_ns : 0);
    return ns > 0 ? static_cast<std::uint64_t>(ns) : 0;
}

std::uint64_t unix_nanos(simdjson::dom::element v, OtlpTimeField::Kind kind,
                         std::int64_t steady_to_unix_ns) noexcept
{
    if (kind == OtlpTimeField::Kind::iso8601_utc) {
        std::string_view s;
        if (v.get(s)) return 0;
        return parse_utc_iso8601_ns(s).value_or(0);
    }
    double seconds;
    if (v.get(seconds)) return 0;
    return seconds_unix_nanos(seconds, kind, steady_to_unix_ns);
}

std::uint64_t raw_unix_nanos(std::string_view raw, OtlpTimeField::Kind kind,
                             std::int64_t steady_to_unix_ns) noexcept
{
    if (kind == OtlpTimeField::Kind::iso8601_utc) {
        // A UTC stamp has no escapes: the token's text between its quotes is the string.
        if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') return 0;
        return parse_utc_iso8601_ns(raw.substr(1, raw.size() - 2)).value_or(0);
    }
    if (raw.empty() || raw.front() == '"' || raw.front() == 't' || raw.front() == 'f' ||
        raw.front() == 'n' || raw.front() == '{' || raw.front() == '[')
        return 0;
    double seconds;
    const auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), seconds);
    if (ec != std::errc{} || p != raw.data() + raw.size()) return 0;
    return seconds_unix_nanos(seconds, kind, steady_to_unix_ns);
}

}  // namespace jsonlw::detail
