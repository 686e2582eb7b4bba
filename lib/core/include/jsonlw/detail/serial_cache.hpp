// SerialCache: the lines a unit of batches' records became when WriterOptions::
// serializer_threads > 1 serialized them ahead of write_batch(). Filled by the serializer
// threads (each chunk by one of them), read by serialize_batch() on the I/O thread once every
// chunk is done; owned by the WriterCore, reused unit after unit (no allocation once warm).
#pragma once

#include <jsonlw/json_line.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::detail {

// How serialize() fared for one record of the unit.
enum class Serialized : std::uint8_t { absent, line, sanitized_line, malformed, unexpected };

// One record's outcome: its line (with '\n') at [begin, end) of its chunk's bytes, or the
// index of the message in the chunk's `errors`.
struct SerialEntry {
    static constexpr std::uint32_t no_message = 0xFFFFFFFF;  // storing it ran out of memory
    std::uint32_t chunk = 0;
    std::uint32_t begin = 0, end = 0;
    Serialized outcome = Serialized::absent;
};

// A contiguous run of the unit's records, serialized by one thread into its own buffer.
struct SerialChunk {
    std::size_t first = 0, count = 0;  // staging indexes [first, first + count)
    LineBuffer bytes;
    std::vector<std::string> errors;  // malformed or unexpected: what() (only on failure)
};

struct SerialCache {
    bool active = false;               // the unit being written was serialized ahead
    std::vector<SerialEntry> entries;  // per staging index
    std::vector<SerialChunk> chunks;

    // Record `i` of the unit, or nullptr when the unit was not serialized ahead (or `i` is
    // not one of its records).
    const SerialEntry* find(std::size_t i) const noexcept
    {
        if (!active || i >= entries.size()) return nullptr;
        const SerialEntry& e = entries[i];
        return e.outcome == Serialized::absent ? nullptr : &e;
    }
    std::string_view line(const SerialEntry& e) const noexcept
    {
        return {chunks[e.chunk].bytes.data() + e.begin, e.end - e.begin};
    }
    std::string_view error(const SerialEntry& e) const noexcept
    {
        const auto& errors = chunks[e.chunk].errors;
        return e.begin < errors.size() ? std::string_view(errors[e.begin])
                                       : std::string_view("(message lost: out of memory)");
    }
};

// The serializer thread running now: 0 on the I/O thread (and any thread that is not one of
// a writer's serializer helpers), 1 .. serializer_threads - 1 on the helpers.
std::size_t current_serializer_slot() noexcept;

}  // namespace jsonlw::detail
