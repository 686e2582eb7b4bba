// Reading what a writer wrote: whole files, their lines, JSON validity (simdjson DOM, which
// validates a whole line, UTF-8 included) and the "id" member of a line.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw_test {

inline std::string read_file(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::filesystem::path& p, std::string_view content)
{
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

// The lines of a file, without their '\n'. A last line without '\n' is returned too.
inline std::vector<std::string> split_lines(std::string_view text)
{
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        out.emplace_back(text.substr(pos, nl - pos));
        pos = nl + 1;
    }
    return out;
}

inline std::vector<std::string> read_lines(const std::filesystem::path& p)
{
    return split_lines(read_file(p));
}

inline std::size_t count_lines(const std::filesystem::path& p)
{
    std::size_t n = 0;
    for (char c : read_file(p)) n += c == '\n';
    return n;
}

// One parser per thread of the test (the DOM parser reuses its buffers).
inline simdjson::dom::parser& json_parser()
{
    thread_local simdjson::dom::parser parser;
    return parser;
}

inline bool is_valid_json(std::string_view line)
{
    simdjson::dom::element doc;
    return json_parser().parse(line.data(), line.size()).get(doc) == simdjson::SUCCESS;
}

inline std::optional<std::int64_t> json_id(std::string_view line)
{
    simdjson::dom::element doc;
    if (json_parser().parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS)
        return std::nullopt;
    std::int64_t id = 0;
    if (doc["id"].get_int64().get(id) != simdjson::SUCCESS) return std::nullopt;
    return id;
}

inline std::vector<std::int64_t> ids_of(const std::vector<std::string>& lines)
{
    std::vector<std::int64_t> out;
    for (const auto& l : lines) out.push_back(json_id(l).value_or(-1));
    return out;
}

// The regular files directly in `dir` (names only).
inline std::vector<std::string> files_in(const std::filesystem::path& dir)
{
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        out.push_back(e.path().filename().string());
    return out;
}

// The entries directly in `dir` whose name ends with `suffix`, sorted by name (".jsonl" for a
// rotated writer's closed files, ".open" for those still being written).
inline std::vector<std::filesystem::path> files_ending(const std::filesystem::path& dir,
                                                       std::string_view suffix)
{
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace jsonlw_test
