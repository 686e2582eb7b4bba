// The lines every check_sink() run writes: record i is {"conformance":i} (a LineFormat::otlp
// line may carry more fields after the id). Free functions, any thread; they own nothing.
#pragma once

#include <jsonlw/lines.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace jsonlw::testing::conformance {

// The id of a line {"conformance":<id>…}, or none.
std::optional<std::uint64_t> id_of(std::string_view line) noexcept;
// The ids of the lines of `lines` that have one, in order.
std::vector<std::uint64_t> ids_of(const Lines& lines);

}  // namespace jsonlw::testing::conformance
