// Reading JSON Lines files fast and strictly: big pread()s into one reused, padded buffer, a
// split on '\n', and a per-line DOM parse by the caller (simdjson's iterate_many stops at the
// first malformed line, so it cannot count the ones after it). Also the per-file integrity
// figures and how files are found. Not thread-safe: one LineScanner per thread.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace jsonlw::tools {

// Reads the lines whose first byte lies in [begin, end) of an open file, so that several
// scanners can share one big file: a line that starts in the range is read to its end, even
// past `end`. Every line view is followed by at least SIMDJSON_PADDING readable bytes, as
// dom::parser::parse(..., realloc_if_needed = false) needs; it is valid until the next call.
class LineScanner {
public:
    static constexpr std::uint64_t to_eof = ~std::uint64_t{0};

    LineScanner(int fd, std::uint64_t begin, std::uint64_t end = to_eof,
                std::size_t chunk_bytes = std::size_t{4} << 20);

    // The next '\n'-terminated line (without the '\n'); false at the end of the range, at a
    // final line with no '\n' (then torn_tail() holds it), or on a read error (error()).
    bool next(std::string_view& line, std::uint64_t& offset);

    // The bytes after the file's last '\n', when that fragment starts in this range (a
    // writer stopped mid-line, or the file is still being written).
    std::string_view torn_tail() const noexcept { return torn_; }
    std::uint64_t torn_tail_offset() const noexcept { return torn_offset_; }
    std::error_code error() const noexcept { return error_; }
    // Bytes consumed so far (lines with their '\n', skipped bytes, the torn tail).
    std::uint64_t consumed() const noexcept { return offset_ - start_; }

private:
    bool fill();  // reads more; false at EOF or on error

    int fd_;
    std::uint64_t end_;
    std::uint64_t start_;
    std::vector<char> buf_;
    std::size_t chunk_;
    std::size_t head_ = 0, tail_ = 0;  // unread data is buf_[head_, tail_)
    std::uint64_t offset_;             // file offset of buf_[head_]
    std::uint64_t read_pos_;           // file offset of buf_[tail_]
    bool eof_ = false;
    bool done_ = false;
    bool aligned_;                     // at the start of a line
    std::string_view torn_{};
    std::uint64_t torn_offset_ = 0;
    std::error_code error_{};
};

// What the report tells record kinds apart by (the record's own fields, never the file name;
// see docs/tools.md).
enum class RecordKind : std::uint8_t {
    perf_worker,     // has "perf_metrics" (TensorRT-LLM shape A)
    perf_disagg,     // has "ctx_server", "ctx_perf_metrics" or "gen_perf_metrics" (shape B)
    raw_output,      // "event": "raw_output"
    trace_request,   // "event": "request" and a "trace_id"
    trace_response,  // "event": "response" and a "trace_id"
    other,           // valid JSON, none of the above
};
inline constexpr std::size_t record_kind_count = 6;
const char* record_kind_name(RecordKind k) noexcept;

// Classifies a parsed line by its top-level keys.
RecordKind classify(simdjson::dom::element root) noexcept;

// A malformed line, for the listing.
struct MalformedLine {
    std::uint64_t line = 0;    // 1-based
    std::uint64_t offset = 0;  // byte offset of its first byte
    std::string error;         // simdjson's message, or "empty line"
};

// Per-file integrity: every '\n'-terminated line is either valid or malformed; a final line
// without '\n' is the torn tail, counted apart and not parsed.
struct FileIntegrity {
    std::filesystem::path path;
    std::string name;  // relative to the report's directory
    std::uint64_t bytes = 0;
    // valid: records read (an OTLP line holds several: docs/otlp.md); otlp_lines: the lines
    // that were OTLP LogsData documents.
    std::uint64_t lines = 0, valid = 0, malformed = 0, otlp_lines = 0;
    std::uint64_t torn_tail_bytes = 0;  // 0: the file ends with '\n' (or is empty)
    std::array<std::uint64_t, record_kind_count> kinds{};
    std::vector<MalformedLine> malformed_lines;  // the first max_listed
    std::string error;                           // the file could not be (fully) read

    static constexpr std::size_t max_listed = 20;
    // The kind most of its valid lines have ("empty" / "mixed" aside).
    std::string kind_label() const;
};

// Which files find_jsonl_files() returns.
enum class JsonlFiles : std::uint8_t {
    closed,     // *.jsonl only (what `report` reads)
    with_open,  // also *.jsonl.open: a rotating writer's file still being written (its
                // default open_suffix, lib/core/include/jsonlw/writer_options.hpp)
};

// Every regular *.jsonl (and *.jsonl.open, when asked) under dir, recursively, sorted by path.
// Unreadable subdirectories are skipped and named in `errors`.
std::vector<std::filesystem::path> find_jsonl_files(const std::filesystem::path& dir,
                                                    std::vector<std::string>& errors,
                                                    JsonlFiles which = JsonlFiles::closed);

// Whether a file's name ends in ".jsonl.open" (a file its writer has not closed yet).
bool is_open_jsonl(const std::filesystem::path& path);

// Every durable request-trace sidecar (<x>/_writer/*.json) under dir, sorted.
std::vector<std::filesystem::path> find_trace_sidecars(const std::filesystem::path& dir);

}  // namespace jsonlw::tools
