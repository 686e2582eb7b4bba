// safe_path_component(): turns any key (a tenant, a model name, a session) into one file-name
// component that cannot leave the directory it is joined to.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace jsonlw {

// The longest component safe_path_component() returns (bytes; NAME_MAX is 255).
inline constexpr std::size_t max_path_component = 200;

// One file-name component for `key`, safe to join to a directory (dir / result):
//   - bytes other than [A-Za-z0-9_-] and '.' become %XX (uppercase hex), so '/', '\\', NUL,
//     control bytes, '%' and non-ASCII bytes never appear raw;
//   - a leading '.' becomes %2E, so the result is never ".", ".." or a hidden file;
//   - the empty key becomes "%" (which no other key produces);
//   - a result longer than max_path_component is cut to 183 bytes (never inside a %XX) and
//     gets "~" and 16 hex digits of a 64-bit hash of the whole key.
// Distinct keys give distinct components (the long form: up to a 64-bit hash collision).
// Pure and thread-safe.
std::string safe_path_component(std::string_view key);

}  // namespace jsonlw
