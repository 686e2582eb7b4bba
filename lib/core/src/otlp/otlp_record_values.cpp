// OtlpRecordValues (see otlp_record_values.hpp). A pointer takes the first value it reaches
// outside arrays, as OtlpBodyScanner notes it in a JSON Lines line.
#include "otlp_record_values.hpp"

#include "otlp_body_scanner.hpp"

#include <bit>

namespace jsonlw::detail {

OtlpRecordValues::OtlpRecordValues(const std::vector<std::string>& pointers)
{
    for (std::size_t i = 0; i < pointers.size(); ++i) {
        std::vector<std::string> tokens = OtlpBodyScanner::pointer_tokens(pointers[i]);
        if (ending_at_.size() <= tokens.size()) ending_at_.resize(tokens.size() + 1);
        if (!tokens.empty()) {
            ending_at_[tokens.size()] |= std::uint64_t{1} << i;
            all_ |= std::uint64_t{1} << i;
        }
        tokens_.push_back(std::move(tokens));
    }
    texts_.resize(pointers.size());
    numbers_.resize(pointers.size());
    values_.resize(pointers.size());
}

void OtlpRecordValues::member(std::uint64_t candidates, std::size_t depth, std::string_view name,
                              std::uint64_t& ending, std::uint64_t& deeper) const
{
    std::uint64_t match = 0;
    for (std::uint64_t m = candidates; m; m &= m - 1) {
        const auto i = static_cast<std::size_t>(std::countr_zero(m));
        if (tokens_[i][depth - 1] == name) match |= std::uint64_t{1} << i;
    }
    const std::uint64_t ends = depth < ending_at_.size() ? ending_at_[depth] : 0;
    ending = match & ends;
    deeper = match & ~ends;
}

std::uint64_t OtlpRecordValues::key_sizes(std::uint64_t candidates, std::size_t depth) const noexcept
{
    std::uint64_t sizes = 0;
    for (std::uint64_t m = candidates; m; m &= m - 1) {
        const auto& tokens = tokens_[static_cast<std::size_t>(std::countr_zero(m))];
        if (depth <= tokens.size()) sizes |= std::uint64_t{1} << (tokens[depth - 1].size() % 64);
    }
    return sizes;
}

std::string OtlpRecordValues::pointer_from(std::size_t i, std::size_t depth) const
{
    std::string pointer;
    for (std::size_t k = depth; k < tokens_[i].size(); ++k) {
        pointer += '/';
        for (const char c : tokens_[i][k]) {  // RFC 6901 escapes
            if (c == '~') pointer += "~0";
            else if (c == '/') pointer += "~1";
            else pointer += c;
        }
    }
    return pointer;
}

void OtlpRecordValues::note(std::uint64_t which, std::string_view text, bool any_value, double number)
{
    for (std::uint64_t m = which & ~found_; m; m &= m - 1) {
        const auto i = static_cast<std::size_t>(std::countr_zero(m));
        texts_[i].assign(text);
        numbers_[i] = number;
        found_ |= std::uint64_t{1} << i;
        if (any_value) any_value_ |= std::uint64_t{1} << i;
    }
}

std::span<const OtlpFound> OtlpRecordValues::values()
{
    for (std::size_t i = 0; i < texts_.size(); ++i)
        values_[i] = found_ >> i & 1 ? OtlpFound{texts_[i], (any_value_ >> i & 1) != 0, numbers_[i]}
                                     : OtlpFound{};
    return values_;
}

}  // namespace jsonlw::detail
