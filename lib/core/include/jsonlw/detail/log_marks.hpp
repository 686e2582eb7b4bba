// When a warning that repeats is logged: at its first occurrence, then at every 1000th, each
// line saying the count so far (docs/design.md, "Accounting"). Every writer, sink and binding
// counts its own occurrences and asks here. Any thread; no state.
#pragma once

#include <cstdint>

namespace jsonlw::detail {

inline constexpr std::uint64_t log_mark_every = 1000;

// Whether the nth occurrence (counted from 1) is logged.
constexpr bool log_worthy(std::uint64_t nth) noexcept
{
    return nth == 1 || nth % log_mark_every == 0;
}

// The first logged count above `count`: 1, then 1000, 2000, ...
constexpr std::uint64_t next_log_mark(std::uint64_t count) noexcept
{
    return count == 0 ? 1 : (count / log_mark_every + 1) * log_mark_every;
}

// Whether a count that went from `before` up to `after` (by more than one, perhaps) passed a
// logged count, for the callers that add several occurrences at once.
constexpr bool crosses_log_mark(std::uint64_t before, std::uint64_t after) noexcept
{
    return next_log_mark(before) <= after;
}

}  // namespace jsonlw::detail
