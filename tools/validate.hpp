// `jsonlw validate FILE...`: strict JSON per line. Each '\n'-terminated line is parsed on its
// own with simdjson's DOM parser (which validates all of it, UTF-8 included), so one bad line
// never hides the ones after it; a final line without '\n' is a torn tail, reported apart.
#pragma once

#include "report_read.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace jsonlw::tools {

struct ValidateResult {
    std::string file;
    std::uint64_t lines = 0, valid = 0, malformed = 0;
    std::uint64_t torn_tail_bytes = 0;
    std::uint64_t torn_tail_line = 0;     // its 1-based line number when present
    std::vector<MalformedLine> problems;  // every malformed line, up to max_problems
    std::string error;                    // the file could not be opened or read

    static constexpr std::size_t max_problems = 1000;
};

// Validates one file; never throws for bad content.
ValidateResult validate_file(const std::filesystem::path& path);

// Exit status rules of `jsonlw validate`: 1 if any line is malformed, else 2 if a torn tail
// is present and not allowed, 3 if a file could not be read, else 0.
int validate_exit_status(const std::vector<ValidateResult>& results, bool allow_torn_tail) noexcept;

}  // namespace jsonlw::tools
