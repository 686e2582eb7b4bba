// The {"conformance":i} lines (see conformance_lines.hpp), read back into ids.
#include "conformance_lines.hpp"

#include <algorithm>
#include <charconv>

namespace jsonlw::testing::conformance {

std::optional<std::uint64_t> id_of(std::string_view line) noexcept
{
    constexpr std::string_view head = "{\"conformance\":";
    if (line.substr(0, head.size()) != head) return std::nullopt;
    const char* p = line.data() + head.size();
    const char* end = line.data() + line.size();
    std::uint64_t id = 0;
    const auto [q, ec] = std::from_chars(p, end, id);
    if (ec != std::errc{} || q == end || (*q != '}' && *q != ',')) return std::nullopt;
    return id;
}

std::vector<std::uint64_t> ids_of(const Lines& lines)
{
    std::vector<std::uint64_t> ids;
    std::string_view rest = lines.bytes;
    while (!rest.empty()) {
        const std::size_t nl = std::min(rest.find('\n'), rest.size());
        if (const auto id = id_of(rest.substr(0, nl))) ids.push_back(*id);
        rest.remove_prefix(std::min(nl + 1, rest.size()));
    }
    return ids;
}

}  // namespace jsonlw::testing::conformance
