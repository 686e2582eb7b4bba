// What one append did: where its bytes went and how many landed.
#pragma once

#include <cstdint>
#include <system_error>

namespace jsonlw {

struct AppendResult {
    std::error_code ec{};            // success, or the errno of the open/write/fsync that failed
    bool attempted = false;          // false: nothing was written (the open failed)
    std::uint64_t offset = 0;        // file size before the append: where its payload begins
    std::uint64_t landed = 0;        // payload bytes that reached the file (all, on success)
    bool isolated_fragment = false;  // a '\n' went first to end a torn last line
    // How the writer counted the lines: written; unknown (some of their bytes landed before
    // the failure); write_error (none of their bytes landed).
    std::uint64_t records_written = 0;
    std::uint64_t records_unknown = 0;
    std::uint64_t records_failed = 0;

    bool ok() const noexcept { return !ec; }
};

}  // namespace jsonlw
