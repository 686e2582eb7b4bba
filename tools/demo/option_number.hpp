// A command-line number, whole: the text must be exactly one number of T's kind (no sign
// where T is unsigned, no trailing characters). Shared by the demo's and the server's flags.
#pragma once

#include <charconv>
#include <string_view>
#include <system_error>

namespace jsonlw::tools {

template <class T>
bool option_number(std::string_view s, T& out)
{
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace jsonlw::tools
