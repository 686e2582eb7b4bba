// A record's own time as Unix nanoseconds, from the spellings OtlpTimeField::Kind names.
// Free functions; thread-safe; used by OtlpLogsEncoder.
#pragma once

#include <jsonlw/otlp_options.hpp>

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace jsonlw::detail {

// "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)" (UTC only; 0–9 fraction digits) as nanoseconds
// since the Unix epoch; nullopt for anything else, a time before 1970 included.
std::optional<std::uint64_t> parse_utc_iso8601_ns(std::string_view s) noexcept;

// The value `v` spelled as `kind` says, in Unix nanoseconds; 0 when it is not usable (wrong
// type, not positive, not parseable): OTLP's "unknown".
// The same for a value's raw JSON text (a string token for iso8601_utc, a number otherwise).
std::uint64_t raw_unix_nanos(std::string_view raw, OtlpTimeField::Kind kind,
                             std::int64_t steady_to_unix_ns) noexcept;

// The same for a number of seconds already read (steady_seconds or unix_seconds).
std::uint64_t seconds_unix_nanos(double seconds, OtlpTimeField::Kind kind,
                                 std::int64_t steady_to_unix_ns) noexcept;

std::uint64_t unix_nanos(simdjson::dom::element v, OtlpTimeField::Kind kind,
                         std::int64_t steady_to_unix_ns) noexcept;

}  // namespace jsonlw::detail
