// What one append did: where its bytes went and how many landed. A sink fills it in
// (LineSink::append(); jsonlw/sinks/line_sink.hpp says what each field means for a sink that
// is not a plain file), the writer counts it.
#pragma once

#include <cstdint>
#include <system_error>

namespace jsonlw {

struct AppendResult {
    // Success, or the error behind the records not written (the errno of the open, write or
    // fsync that failed; a broker's error).
    std::error_code ec{};
    // false: nothing of the group reached the destination (it would not open, nothing was
    // sent); true once any byte may have.
    bool attempted = false;
    // Where the group's bytes begin in the destination: a file's size before the append; 0
    // where that means nothing (a broker, memory).
    std::uint64_t offset = 0;
    // Payload bytes that reached the destination, as it stores them (all, on success;
    // compressed, for a compressing sink). A result that counts every record written with
    // landed 0 means the lines as given.
    std::uint64_t landed = 0;
    // A '\n' went first to end a torn last line found in an append-only file (always false
    // for another destination).
    bool isolated_fragment = false;
    // How the writer counts the group's records — they add up to Lines::records: written (the
    // whole line is where a reader finds it); unknown (some of its bytes may be there, or its
    // durability failed); write_error (surely none of its bytes are there). Under
    // Durability::fsync_batch the writer counts records_written only once the sink's sync()
    // succeeded, else unknown.
    std::uint64_t records_written = 0;
    std::uint64_t records_unknown = 0;
    std::uint64_t records_failed = 0;

    bool ok() const noexcept { return !ec; }
};

}  // namespace jsonlw
