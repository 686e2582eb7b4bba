// The file_check scenario: what noticing a removed or moved file costs a batch. FileSink's
// append checks the descriptor's link count before (fstat) and the path's device and inode
// after (stat), as CPython's Lib/logging/handlers.py WatchedFileHandler does; the rows time
// that append next to the same writev with the one fstat the appender made before the check,
// a bare writev, and the two checks alone, in ns per batch (docs/benchmarks.md).
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <jsonlw/sinks/file_sink.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace bench {
namespace {

struct Timed {
    double ns_per_batch = 0;
    std::string problem;
};

constexpr std::size_t kLines = 32, kLineBytes = 128;

std::string batch_bytes()
{
    std::string line = "{\"id\":0,\"text\":\"" + std::string(kLineBytes - 20, 'x') + "\"}\n";
    line.resize(kLineBytes - 1, ' ');
    line.back() = '}';
    line += '\n';
    std::string b;
    for (std::size_t i = 0; i < kLines; ++i) b += line;
    return b;
}

template <class F>
Timed timed(std::size_t batches, F&& f)
{
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < batches; ++i)
        if (!f()) return Timed{0, "a call failed"};
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    return Timed{ns / static_cast<double>(batches), {}};
}

Timed file_sink_append(const std::filesystem::path& dir, const std::string& bytes, std::size_t n)
{
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    jsonlw::FileSink sink;
    jsonlw::SinkContext ctx;
    ctx.directory = dir;
    ctx.stem = "check";
    ctx.subject = "bench";
    ctx.host = "h";
    ctx.pid = 1;
    ctx.file_io = jsonlw::posix_file_io();
    if (sink.start(ctx)) return Timed{0, "start failed"};
    const jsonlw::Lines lines{bytes, kLines, 0};
    Timed t = timed(n, [&] { return sink.append({}, lines).records_written == kLines; });
    sink.close(false);
    std::filesystem::remove_all(dir);
    return t;
}

// mode 0: writev; 1: fstat + writev (the appender before the path check); 2: fstat + stat, no write.
Timed by_hand(const std::filesystem::path& dir, const std::string& bytes, std::size_t n, int mode)
{
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "by-hand.jsonl").native();
    const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) return Timed{0, "open failed"};
    iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
    Timed t = timed(n, [&] {
        struct stat st {};
        if (mode >= 1 && (::fstat(fd, &st) != 0 || st.st_nlink == 0)) return false;
        if (mode == 2) return ::stat(path.c_str(), &st) == 0;
        return ::writev(fd, &iov, 1) == static_cast<ssize_t>(bytes.size());
    });
    ::close(fd);
    std::filesystem::remove_all(dir);
    return t;
}

}  // namespace

void file_check_scenario(const Config& cfg, Report& report)
{
    const std::string bytes = batch_bytes();
    const std::size_t batches = cfg.quick ? 5000 : 20000;
    const auto dir = cfg.dir / "file-check";
    std::vector<Variant<Timed>> variants = {
        {"FileSink::append (fstat before, stat after)",
         [&] { return file_sink_append(dir, bytes, batches); }},
        {"fstat + writev (the appender before the check)",
         [&] { return by_hand(dir, bytes, batches, 1); }},
        {"writev alone", [&] { return by_hand(dir, bytes, batches, 0); }},
        {"fstat + stat alone (the check)", [&] { return by_hand(dir, bytes, batches, 2); }},
    };
    auto results = alternate<Timed>(cfg, "file check", variants, [](const Timed& t) {
        return fmt::format("{:.0f} ns/batch{}", t.ns_per_batch,
                           t.problem.empty() ? "" : " PROBLEM: " + t.problem);
    });
    Section sec;
    sec.scenario = "file_check";
    sec.title = fmt::format("noticing a removed or moved file: {} batches of {} lines of {} B "
                            "appended to one file, ns per batch",
                            batches, kLines, kLineBytes);
    sec.params = {{"batches", static_cast<double>(batches)},
                  {"lines_per_batch", static_cast<double>(kLines)},
                  {"line_bytes", static_cast<double>(kLineBytes)}};
    sec.rows = lower_is_better_rows(variants, results, "ns/batch",
                                    [](const Timed& t) { return t.ns_per_batch; });
    for (std::size_t v = 1; v < 3; ++v)
        sec.rows[v].ratio = pair_ratios(sec.rows[0].values, sec.rows[v].values, false);
    sec.notes.push_back("FileSink::append also builds its AppendResult and checks for rotation; "
                        "the check's own cost is the last row (two system calls on a warm "
                        "dentry and inode)");
    report.sections.push_back(std::move(sec));
}

}  // namespace bench
