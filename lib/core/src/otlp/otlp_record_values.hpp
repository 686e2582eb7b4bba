// OtlpRecordValues: the values a log record takes from its record (time fields, attributes, the
// event-name field: OtlpLogRecordEncoder::pointers()), picked out while an OtlpRecordForm
// writes the record — which JSON pointers a member's key continues, and the first value each
// pointer reaches. Owned by one OtlpRecordForm; used by its serializer thread only.
#pragma once

#include "otlp_log_record.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::detail {

class OtlpRecordValues {
public:
    // At most 64 pointers (OtlpRecordForm::supports()); bit i of a mask is pointer i.
    explicit OtlpRecordValues(const std::vector<std::string>& pointers);

    // The pointers a record's top-level members may continue.
    std::uint64_t all() const noexcept { return all_; }
    // Of `candidates` (pointers matched down to an object `depth` levels deep, 1 for the
    // record's own), those whose next token is `name`: ending at its value, or going deeper.
    void member(std::uint64_t candidates, std::size_t depth, std::string_view name,
                std::uint64_t& ending, std::uint64_t& deeper) const;
    // Bit n % 64 set for each size n the next token of `candidates` has at `depth`: a key of
    // another size continues none of them.
    std::uint64_t key_sizes(std::uint64_t candidates, std::size_t depth) const noexcept;
    // Pointer i's tokens from `depth` on, as a JSON pointer (a lookup inside a raw() value).
    std::string pointer_from(std::size_t i, std::size_t depth) const;

    // Forgets the last record's values.
    void reset() noexcept { found_ = any_value_ = 0; }
    // Pointers that have their value.
    std::uint64_t found() const noexcept { return found_; }
    // Gives each pointer of `which` that has none yet this value: its JSON Lines text, or its
    // AnyValue (any_value); `number` the double the text spells (NaN: not known).
    void note(std::uint64_t which, std::string_view text, bool any_value, double number);
    // What the record's tail takes (OtlpLogRecordEncoder::tail), one per pointer.
    std::span<const OtlpFound> values();

private:
    std::vector<std::vector<std::string>> tokens_;  // per pointer
    std::vector<std::uint64_t> ending_at_;          // [d]: pointers of d tokens
    std::uint64_t all_ = 0;
    std::uint64_t found_ = 0;
    std::uint64_t any_value_ = 0;      // pointers whose text is an AnyValue
    std::vector<std::string> texts_;   // per pointer: its value's text
    std::vector<double> numbers_;      // per pointer: the double it spells, or NaN
    std::vector<OtlpFound> values_;
};

}  // namespace jsonlw::detail
