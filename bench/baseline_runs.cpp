// The baselines, what a user writes without jsonlw: the write() limit, and every by-hand
// variant, which all end in the one fprintf-under-a-mutex sink below (plain, validated with
// simdjson, or formatted from the typed record with fmt).
#include "by_hand_format.hpp"
#include "clock.hpp"
#include "paced_calls.hpp"
#include "producers.hpp"
#include "runs.hpp"
#include "writer_workloads.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

ThroughputResult write_limit_throughput(const ThroughputSpec& s)
{
    ThroughputResult r;
    const auto path = s.dir / "limit.jsonl";
    const std::string& buf = *s.prebuilt;
    constexpr std::size_t chunk = std::size_t{1} << 20;
    const auto t0 = SteadyClock::now();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        r.problem = fmt::format("open: {}", std::strerror(errno));
        return r;
    }
    for (std::size_t off = 0; off < buf.size();) {
        const ssize_t w = ::write(fd, buf.data() + off, std::min(chunk, buf.size() - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            r.problem = fmt::format("write: {}", std::strerror(errno));
            break;
        }
        off += static_cast<std::size_t>(w);
    }
    ::close(fd);
    r.seconds = seconds_since(t0);
    const FileCheck c = check_file(path);
    r.lines = c.lines;
    r.bytes = c.bytes;
    if (r.problem.empty()) r.problem = file_problem(c, s.records, s.records * s.pool->line_bytes);
    empty_dir(s.dir);
    return r;
}

namespace {

// The by-hand sink: one stdio FILE shared by every thread, default (full) buffering, each
// line fprintf()ed under a std::mutex. put() may be called from any thread; close() once,
// after the last put().
class LockedStdioFile {
public:
    explicit LockedStdioFile(const std::filesystem::path& path)
        : f_(std::fopen(path.c_str(), "w")), open_errno_(f_ ? 0 : errno)
    {
    }
    ~LockedStdioFile()
    {
        if (f_) std::fclose(f_);
    }
    LockedStdioFile(const LockedStdioFile&) = delete;
    LockedStdioFile& operator=(const LockedStdioFile&) = delete;

    // Empty, or why the file could not be opened.
    std::string open_problem() const
    {
        return f_ ? std::string() : fmt::format("fopen: {}", std::strerror(open_errno_));
    }

    bool put(std::string_view line)
    {
        std::lock_guard lk(mu_);
        return std::fprintf(f_, "%.*s\n", static_cast<int>(line.size()), line.data()) >= 0;
    }

    // fflush + fclose; how many of the two failed.
    int close()
    {
        int failed = std::fflush(f_) != 0 ? 1 : 0;
        if (std::fclose(f_) != 0) ++failed;
        f_ = nullptr;
        return failed;
    }

private:
    std::FILE* f_;
    int open_errno_;
    std::mutex mu_;
};

// The one fprintf + mutex throughput run: each producer makes its records' lines with a
// line maker of its own (make_maker() per producer: its parser or buffers, reused), then
// fprintf()s them; timed from the producers' release until the file is closed, then checked.
// A maker returns the line for record i, or nullopt for a record it rejects (not written).
template <class MakeMaker>
ThroughputResult fprintf_mutex_throughput(const ThroughputSpec& s, const char* file_name,
                                          std::size_t line_bytes, MakeMaker make_maker)
{
    ThroughputResult r;
    const auto path = s.dir / file_name;
    LockedStdioFile file(path);
    if (r.problem = file.open_problem(); !r.problem.empty()) return r;
    std::atomic<std::uint64_t> failed{0}, rejected{0};
    SteadyClock::time_point t0;
    run_producers(s.producers, s.records, t0,
                  [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                      auto line_for = make_maker();
                      std::uint64_t bad = 0, refused = 0;
                      for (std::size_t n = 0; n < count; ++n, i += stride) {
                          const std::optional<std::string_view> line = line_for(i);
                          if (!line) ++refused;
                          else if (!file.put(*line)) ++bad;
                      }
                      failed += bad;
                      rejected += refused;
                  });
    failed += static_cast<std::uint64_t>(file.close());
    r.seconds = seconds_since(t0);
    const FileCheck c = check_file(path);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.problem = file_problem(c, s.records, s.records * line_bytes);
    if (r.problem.empty() && (failed.load() || rejected.load()))
        r.problem = fmt::format("{} fprintf/fflush/fclose calls failed, {} lines rejected",
                                failed.load(), rejected.load());
    empty_dir(s.dir);
    return r;
}

}  // namespace

ThroughputResult fprintf_throughput(const ThroughputSpec& s)
{
    return fprintf_mutex_throughput(s, "fprintf.jsonl", s.pool->line_bytes, [&s] {
        return [&s](std::size_t i) { return std::optional<std::string_view>(s.pool->at(i)); };
    });
}

ThroughputResult fprintf_owned_throughput(const ThroughputSpec& s)
{
    return fprintf_mutex_throughput(s, "fprintf-owned.jsonl", s.pool->line_bytes, [&s] {
        // A new string per record, as submit(std::string(line)) builds one: the move-assign
        // frees the previous record's buffer, so each record costs one malloc and one free.
        return [&s, held = std::string()](std::size_t i) mutable {
            held = std::string(s.pool->at(i));
            return std::optional<std::string_view>(held);
        };
    });
}

ThroughputResult fprintf_validated_throughput(const ThroughputSpec& s)
{
    return fprintf_mutex_throughput(s, "fprintf-validated.jsonl", s.pool->line_bytes, [&s] {
        // Per producer, as a user would keep one per thread: a parser and a minify buffer.
        return [&s, parser = simdjson::dom::parser(), out = std::vector<char>()](
                   std::size_t i) mutable -> std::optional<std::string_view> {
            const std::string& line = s.pool->at(i);  // no copy: the caller's string
            simdjson::dom::element root;
            if (parser.parse(line).get(root) || root.type() != simdjson::dom::element_type::OBJECT)
                return std::nullopt;
            out.resize(line.size());
            std::size_t len = 0;
            if (simdjson::minify(line.data(), line.size(), out.data(), len)) return std::nullopt;
            return std::string_view(out.data(), len);
        };
    });
}

ThroughputResult perf_fmt_throughput(const WriterWorkload& wl, const ThroughputSpec& s)
{
    const auto& rec = *static_cast<const jsonlw::PerfMetricsRecord*>(wl.records.get());
    {
        fmt::memory_buffer check;
        format_perf_by_hand(rec, check);
        if (std::string_view(check.data(), check.size()) != wl.lines.lines.front())
            return {.problem = "the hand-formatted line differs from PerfMetricsWriter's: " +
                               fmt::to_string(check)};
    }
    return fprintf_mutex_throughput(s, "fmt.jsonl", wl.lines.line_bytes, [&rec] {
        return [&rec, b = fmt::memory_buffer()](std::size_t) mutable {
            b.clear();
            format_perf_by_hand(rec, b);
            return std::optional<std::string_view>(std::string_view(b.data(), b.size()));
        };
    });
}

ThroughputResult raw_output_fmt_throughput(const WriterWorkload& wl, const ThroughputSpec& s)
{
    const auto& o = *static_cast<const RawOutputShape*>(wl.records.get());
    {
        ByHandOutput acc;
        fmt::memory_buffer check;
        format_output_by_hand(o, raw_output_first_id, acc, check);
        const std::string mine = without_stamps(fmt::to_string(check));
        bool found = false;
        for (const std::string& l : wl.lines.lines) found = found || without_stamps(l) == mine;
        if (!found)
            return {.problem = "the hand-formatted line matches no RawOutputWriter line: " + mine};
    }
    return fprintf_mutex_throughput(s, "fmt-raw-output.jsonl", wl.lines.line_bytes, [&o] {
        return [&o, acc = ByHandOutput(), b = fmt::memory_buffer()](std::size_t i) mutable {
            b.clear();
            format_output_by_hand(o, raw_output_first_id + i, acc, b);
            return std::optional<std::string_view>(std::string_view(b.data(), b.size()));
        };
    });
}

SubmitCostResult fprintf_submit_cost(const SubmitCostSpec& s)
{
    SubmitCostResult r;
    const auto path = s.dir / "fprintf-submit.jsonl";
    LockedStdioFile file(path);
    if (r.problem = file.open_problem(); !r.problem.empty()) return r;
    PacedCalls paced(s, r);
    while (paced.more())
        paced.step([&](std::size_t i) {
            return [&file, &line = s.pool->at(i)] { return file.put(line); };
        });
    paced.finish();
    file.close();
    const FileCheck c = check_file(path);
    r.problem = file_problem(c, r.calls, r.calls * s.pool->line_bytes);
    empty_dir(s.dir);
    return r;
}

}  // namespace bench
