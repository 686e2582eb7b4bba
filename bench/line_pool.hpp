// The records every variant writes: pre-serialized, compact JSON lines of one exact size, and
// the files they end up in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace bench {

// `count` distinct compact JSON objects, each exactly line_bytes - 1 characters long (the
// '\n' makes line_bytes), mixing numbers, an array of token ids and a string, so validation
// sees a realistic record rather than one long string.
struct LinePool {
    std::size_t line_bytes = 0;  // bytes per line in the file, '\n' included
    std::vector<std::string> lines;
    std::string label;  // "250 B", "1 KiB", ...

    const std::string& at(std::size_t i) const noexcept { return lines[i % lines.size()]; }
};

LinePool make_pool(std::size_t line_bytes, std::size_t count = 64);

// A pool of one line: the seed record, the aggregated worker example of
// support/perf_metrics_reference.hpp (a WorkerPerfMetricsRecord line,
// tensorrt_llm/serve/_perf_metrics_schema.py), minified.
LinePool seed_worker_pool();

// The bytes `records` lines take in a file, in pool order: what the write() limit appends.
std::string prebuilt_bytes(const LinePool& pool, std::size_t records);

// What a finished file holds.
struct FileCheck {
    std::uint64_t lines = 0;  // '\n' count
    std::uint64_t bytes = 0;
    bool exists = false;
};
FileCheck check_file(const std::filesystem::path& path);
// The same over every regular file under `dir` (writers that lay files out in folders).
FileCheck check_tree(const std::filesystem::path& dir);
// Every line of every file under `dir`, without the '\n'.
std::vector<std::string> read_tree_lines(const std::filesystem::path& dir);

// "<what> in the file: <n> lines, <m> bytes; expected ..." or empty when it matches.
std::string file_problem(const FileCheck& c, std::uint64_t lines, std::uint64_t bytes);

// A fresh directory under $TMPDIR (or /tmp) for one bench process; removed by clean_work_dir.
std::filesystem::path make_work_dir();
void clean_work_dir(const std::filesystem::path& dir) noexcept;

// Removes every file under `dir` (keeps the directory): each run starts with an empty one.
void empty_dir(const std::filesystem::path& dir) noexcept;

}  // namespace bench
