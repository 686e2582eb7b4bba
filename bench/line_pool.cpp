#include "line_pool.hpp"

#include "perf_metrics_reference.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace bench {

namespace fs = std::filesystem;

namespace {

std::string size_label(std::size_t bytes)
{
    if (bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
    return fmt::format("{} B", bytes);
}

// One record of exactly `len` characters: a fixed head, token ids filling about a third of
// the line, and a string padded to the exact length.
std::string make_line(std::size_t len, std::size_t seq)
{
    std::string head = fmt::format(
        R"({{"request_id":{},"ts":{}.{:03},"kind":"bench","ok":true,"tokens":[)", 100000 + seq,
        1700000000 + seq, seq % 1000);
    const std::size_t token_budget = len / 3;
    std::string tokens;
    for (std::size_t k = 0; tokens.size() + 8 < token_budget; ++k) {
        if (!tokens.empty()) tokens += ',';
        tokens += fmt::format("{}", (seq * 7919 + k * 104729) % 151936);
    }
    std::string line = head + tokens + R"(],"text":")";
    const std::string tail = "\"}";
    if (line.size() + tail.size() > len)
        throw std::invalid_argument(fmt::format("record size {} is too small", len + 1));
    const std::size_t pad = len - line.size() - tail.size();
    static constexpr std::string_view words = "the quick brown fox jumps over the lazy dog ";
    for (std::size_t i = 0; i < pad; ++i) line += words[(i + seq) % words.size()];
    line += tail;
    return line;
}

}  // namespace

LinePool make_pool(std::size_t line_bytes, std::size_t count)
{
    LinePool p;
    p.line_bytes = line_bytes;
    p.label = size_label(line_bytes);
    p.lines.reserve(count);
    for (std::size_t i = 0; i < count; ++i) p.lines.push_back(make_line(line_bytes - 1, i));
    return p;
}

LinePool seed_worker_pool()
{
    LinePool p;
    p.lines.emplace_back(perf_metrics_reference::seed_worker_line);
    p.line_bytes = p.lines.front().size() + 1;
    p.label = fmt::format("seed worker {} B", p.line_bytes);
    return p;
}

std::string prebuilt_bytes(const LinePool& pool, std::size_t records)
{
    std::string out;
    out.reserve(records * pool.line_bytes);
    for (std::size_t i = 0; i < records; ++i) {
        out += pool.at(i);
        out += '\n';
    }
    return out;
}

FileCheck check_file(const fs::path& path)
{
    FileCheck c;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return c;
    c.exists = true;
    std::vector<char> buf(std::size_t{1} << 20);
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        c.bytes += static_cast<std::uint64_t>(n);
        // memchr is vectorized; a byte loop would cost more than some of the runs it checks.
        const char* p = buf.data();
        const char* const end = p + n;
        while (const void* hit = std::memchr(p, '\n', static_cast<std::size_t>(end - p))) {
            ++c.lines;
            p = static_cast<const char*>(hit) + 1;
        }
    }
    ::close(fd);
    return c;
}

FileCheck check_tree(const fs::path& dir)
{
    FileCheck total;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
        if (!e.is_regular_file(ec)) continue;
        const FileCheck c = check_file(e.path());
        total.exists = total.exists || c.exists;
        total.lines += c.lines;
        total.bytes += c.bytes;
    }
    return total;
}

std::vector<std::string> read_tree_lines(const fs::path& dir)
{
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
        if (!e.is_regular_file(ec)) continue;
        std::ifstream in(e.path(), std::ios::binary);
        std::string line;
        while (std::getline(in, line)) out.push_back(line);
    }
    return out;
}

std::string file_problem(const FileCheck& c, std::uint64_t lines, std::uint64_t bytes)
{
    if (!c.exists) return "no output file";
    if (c.lines == lines && c.bytes == bytes) return {};
    return fmt::format("file has {} lines / {} bytes, expected {} / {}", c.lines, c.bytes, lines,
                       bytes);
}

fs::path make_work_dir()
{
    const char* tmp = std::getenv("TMPDIR");
    fs::path base = tmp && *tmp ? fs::path(tmp) : fs::path("/tmp");
    fs::path dir = base / fmt::format("jsonlw-bench-{}", ::getpid());
    fs::create_directories(dir);
    return dir;
}

void clean_work_dir(const fs::path& dir) noexcept
{
    std::error_code ec;
    fs::remove_all(dir, ec);
}

void empty_dir(const fs::path& dir) noexcept
{
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove_all(e.path(), ec);
}

}  // namespace bench
