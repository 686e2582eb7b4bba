// `jsonlw validate FILE|DIR...`: strict JSON per line. Each '\n'-terminated line is parsed on
// its own with simdjson's DOM parser (which validates all of it, UTF-8 included), so one bad
// line never hides the ones after it; a final line without '\n' is a torn tail, reported
// apart, and expected in a file still being written (a rotating writer's *.jsonl.open).
#pragma once

#include <jsonlw/report/report.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace jsonlw::tools {

// One file to validate, as validate_inputs() found it.
struct ValidateInput {
    std::filesystem::path path;
    bool still_written = false;  // a *.jsonl.open file: a writer may be mid-line in it
};

// What `jsonlw validate` reads for its arguments, in order: a file (or "-") as given, whatever
// its name; a directory's every regular *.jsonl and *.jsonl.open, recursively and sorted (as
// `report` finds files, plus the ones still being written). A directory that cannot be read,
// or holds no such file, is named in `errors` ("<dir>: no *.jsonl or *.jsonl.open file under
// it"): validating nothing is not a pass.
std::vector<ValidateInput> validate_inputs(const std::vector<std::filesystem::path>& args,
                                           std::vector<std::string>& errors);

struct ValidateResult {
    std::string file;
    bool still_written = false;  // its torn tail is expected, not an error
    std::uint64_t lines = 0, valid = 0, malformed = 0;
    // Lines that are OTLP LogsData documents (checked against the OTLP JSON rules as well),
    // and the log records they hold.
    std::uint64_t otlp_lines = 0, otlp_records = 0;
    std::uint64_t torn_tail_bytes = 0;
    std::uint64_t torn_tail_line = 0;     // its 1-based line number when present
    std::vector<MalformedLine> problems;  // every malformed line, up to max_problems
    std::string error;                    // the file could not be opened or read

    static constexpr std::size_t max_problems = 1000;
};

// Validates one file; never throws for bad content.
ValidateResult validate_file(const std::filesystem::path& path, bool still_written = false);

// Exit status rules of `jsonlw validate`: 1 if any line is malformed, else 2 if a file that is
// not still being written has a torn tail and that is not allowed, 3 if a file could not be
// read, else 0.
int validate_exit_status(const std::vector<ValidateResult>& results, bool allow_torn_tail) noexcept;

}  // namespace jsonlw::tools
