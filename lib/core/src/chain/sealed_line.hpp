// How the chain key sits in a sealed line (the layout line_chain.hpp documents), shared by
// LineChain::seal, which writes it, and verify_chain, which takes it out again.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jsonlw::detail {

inline constexpr std::string_view chain_key_open = "\"chain\":\"";

// Whether `head` (a line up to, not including, its final `}`) is `{` then only JSON
// whitespace (RFC 8259, section 2), so the key goes in without a comma.
inline bool is_empty_object_head(std::string_view head) noexcept
{
    return !head.empty() && head.front() == '{' &&
           head.find_first_not_of(" \t\r\n", 1) == std::string_view::npos;
}

// A sealed line taken apart: the bytes hashed (the line without the key) and the value.
struct SealedLine {
    std::string body;
    std::string_view value;
};

// `line` without its newline; nullopt when it has no chain key laid out as seal() writes it.
inline std::optional<SealedLine> unseal(std::string_view line)
{
    constexpr std::size_t key_len = chain_key_open.size() + 64 + 2;  // "chain":"<V>"}
    if (line.size() < 1 + key_len) return std::nullopt;
    const std::size_t k = line.size() - key_len;
    const std::string_view key = line.substr(k);
    if (key.substr(0, chain_key_open.size()) != chain_key_open || key.substr(key_len - 2) != "\"}")
        return std::nullopt;
    std::string_view head = line.substr(0, k);
    if (head.back() == ',' && !is_empty_object_head(head.substr(0, k - 1)))
        head.remove_suffix(1);
    else if (!is_empty_object_head(head))
        return std::nullopt;
    SealedLine s{std::string(head), key.substr(chain_key_open.size(), 64)};
    s.body.push_back('}');
    return s;
}

}  // namespace jsonlw::detail
