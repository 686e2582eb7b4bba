// verify_chain: recompute a file's chain and classify its first break.
//
// How a break is classified (first match wins). The chain only ever shows that line i's
// value does not follow from the value before it (P) and its bytes; the rest is inference
// from the lines after it, kept to what those lines can show:
//   truncated        line i is the last and has no newline (checked before its value);
//   not_json_object, missing_key: line i cannot be taken apart as seal() writes it;
//   reordered        line i's value follows from its bytes and the value of a later line k:
//                    it was written after line k;
//   deleted_or_inserted  a later line j's value follows from P: line j is where the chain
//                    goes on, so lines i..j-1 were put in (or replaced what was there);
//   edited           anything else. When line i+1 chains onto line i's value, line i's own
//                    value is what the writer wrote, so either its bytes were changed or the
//                    line(s) just before it were removed — the values cannot tell which, and
//                    the detail says both. A deleted last line is invisible here unless the
//                    caller compares prev with where the next file starts (docs/chain.md).
#include <jsonlw/line_chain.hpp>

#include "chain_hash.hpp"
#include "sealed_line.hpp"

#include <istream>
#include <stdexcept>
#include <vector>

namespace jsonlw {

namespace {

using detail::SealedLine;

struct ChainChecker {
    detail::ChainHash hash;
    char value[64];

    // Whether `s`'s value follows from prev and its bytes.
    bool follows(std::string_view prev, const std::optional<SealedLine>& s)
    {
        if (!s) return false;
        hash.value(prev, s->body, value);
        return s->value == std::string_view(value, sizeof value);
    }
};

std::string line_name(std::size_t n) { return "line " + std::to_string(n); }

ChainBreak classify(ChainChecker& check, std::istream& lines, std::size_t i,
                    const SealedLine& bad, const std::string& prev)
{
    std::vector<std::string> rest_text;  // owns what rest's values view
    for (std::string text; std::getline(lines, text);) rest_text.push_back(std::move(text));
    std::vector<std::optional<SealedLine>> rest;
    for (const std::string& text : rest_text) rest.push_back(detail::unseal(text));

    for (std::size_t k = 0; k < rest.size(); ++k) {
        if (rest[k] && check.follows(rest[k]->value, bad))
            return {i, ChainBreak::Kind::reordered,
                    line_name(i) + " chains onto " + line_name(i + 1 + k) +
                        ", which comes after it: the lines are out of order"};
    }
    for (std::size_t j = 0; j < rest.size(); ++j) {
        if (check.follows(prev, rest[j]))
            return {i, ChainBreak::Kind::deleted_or_inserted,
                    line_name(i + 1 + j) + " chains onto the value before " + line_name(i) +
                        ": lines " + std::to_string(i) + " to " + std::to_string(i + j) +
                        " are not part of the chain (inserted, or put in place of others)"};
    }
    const bool next_follows = !rest.empty() && check.follows(bad.value, rest.front());
    return {i, ChainBreak::Kind::edited,
            line_name(i) + "'s bytes do not give its chain value" +
                (next_follows ? ", which " + line_name(i + 1) + " chains onto: " + line_name(i) +
                                    " was edited, or the line(s) just before it deleted"
                              : ", and the next line does not chain onto that value either: " +
                                    line_name(i) + " (bytes and value) was edited")};
}

}  // namespace

std::optional<ChainBreak> verify_chain(std::istream& lines, ChainMode mode,
                                       const std::optional<ChainKey>& key, std::string& prev)
{
    detail::check_chain_setup(mode, key, prev, "verify_chain");
    if (mode == ChainMode::none)
        throw std::invalid_argument("verify_chain: chain mode none has no chain to verify");
    ChainChecker check{detail::ChainHash(mode, key), {}};
    std::size_t i = 0;
    for (std::string text; std::getline(lines, text);) {
        ++i;
        if (lines.eof())  // getline stopped at the end, not at a newline
            return ChainBreak{i, ChainBreak::Kind::truncated,
                              line_name(i) + " is the last and has no newline (" +
                                  std::to_string(text.size()) + " bytes): a torn write or a cut file"};
        if (text.size() < 2 || text.front() != '{' || text.back() != '}')
            return ChainBreak{i, ChainBreak::Kind::not_json_object,
                              line_name(i) + " does not start with { and end with }"};
        const std::optional<SealedLine> sealed = detail::unseal(text);
        if (!sealed || !detail::is_chain_value(sealed->value))
            return ChainBreak{i, ChainBreak::Kind::missing_key,
                              line_name(i) + " has no \"chain\":\"<64 lowercase hex>\" key before its final }"};
        if (!check.follows(prev, sealed)) return classify(check, lines, i, *sealed, prev);
        prev.assign(sealed->value);
    }
    return std::nullopt;
}

}  // namespace jsonlw
