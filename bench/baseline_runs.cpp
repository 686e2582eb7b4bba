// Baselines that need no jsonlw: the write() limit, fprintf under a mutex, and the same with
// the validation a user writes by hand for RawJsonWriter's guarantee (simdjson).
#include "alloc_count.hpp"
#include "clock.hpp"
#include "producers.hpp"
#include "runs.hpp"

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
#include <string>
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

ThroughputResult fprintf_throughput(const ThroughputSpec& s)
{
    ThroughputResult r;
    const auto path = s.dir / "fprintf.jsonl";
    std::FILE* f = std::fopen(path.c_str(), "w");  // default (full) buffering
    if (!f) {
        r.problem = fmt::format("fopen: {}", std::strerror(errno));
        return r;
    }
    std::mutex mu;
    std::atomic<std::uint64_t> failed{0};
    SteadyClock::time_point t0;
    run_producers(s.producers, s.records, t0,
                  [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                      std::uint64_t bad = 0;
                      for (std::size_t n = 0; n < count; ++n, i += stride) {
                          std::lock_guard lk(mu);
                          if (std::fprintf(f, "%s\n", s.pool->at(i).c_str()) < 0) ++bad;
                      }
                      failed += bad;
                  });
    if (std::fflush(f) != 0) ++failed;
    if (std::fclose(f) != 0) ++failed;
    r.seconds = seconds_since(t0);
    const FileCheck c = check_file(path);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.problem = file_problem(c, s.records, s.records * s.pool->line_bytes);
    if (r.problem.empty() && failed.load())
        r.problem = fmt::format("{} fprintf/fflush/fclose calls failed", failed.load());
    empty_dir(s.dir);
    return r;
}

ThroughputResult fprintf_validated_throughput(const ThroughputSpec& s)
{
    ThroughputResult r;
    const auto path = s.dir / "fprintf-validated.jsonl";
    std::FILE* f = std::fopen(path.c_str(), "w");  // default (full) buffering
    if (!f) {
        r.problem = fmt::format("fopen: {}", std::strerror(errno));
        return r;
    }
    std::mutex mu;
    std::atomic<std::uint64_t> failed{0}, invalid{0};
    SteadyClock::time_point t0;
    run_producers(s.producers, s.records, t0,
                  [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                      // Per producer, as a user would keep one per thread: a parser and a
                      // minify buffer, reused.
                      simdjson::dom::parser parser;
                      std::vector<char> out;
                      std::uint64_t bad = 0, rejected = 0;
                      for (std::size_t n = 0; n < count; ++n, i += stride) {
                          const std::string& line = s.pool->at(i);  // no copy: the caller's string
                          simdjson::dom::element root;
                          if (parser.parse(line).get(root) ||
                              root.type() != simdjson::dom::element_type::OBJECT) {
                              ++rejected;
                              continue;
                          }
                          out.resize(line.size());
                          std::size_t len = 0;
                          if (simdjson::minify(line.data(), line.size(), out.data(), len)) {
                              ++rejected;
                              continue;
                          }
                          std::lock_guard lk(mu);
                          if (std::fprintf(f, "%.*s\n", static_cast<int>(len), out.data()) < 0) ++bad;
                      }
                      failed += bad;
                      invalid += rejected;
                  });
    if (std::fflush(f) != 0) ++failed;
    if (std::fclose(f) != 0) ++failed;
    r.seconds = seconds_since(t0);
    const FileCheck c = check_file(path);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.problem = file_problem(c, s.records, s.records * s.pool->line_bytes);
    if (r.problem.empty() && (failed.load() || invalid.load()))
        r.problem = fmt::format("{} writes failed, {} lines rejected", failed.load(),
                                invalid.load());
    empty_dir(s.dir);
    return r;
}

SubmitCostResult fprintf_submit_cost(const SubmitCostSpec& s)
{
    SubmitCostResult r;
    const auto path = s.dir / "fprintf-submit.jsonl";
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) {
        r.problem = fmt::format("fopen: {}", std::strerror(errno));
        return r;
    }
    const TickClock& clk = TickClock::get();
    std::mutex mu;
    auto call = [&](const std::string& line) {
        std::lock_guard lk(mu);
        return std::fprintf(f, "%s\n", line.c_str()) >= 0;
    };
    // At most rate x seconds calls, and no longer than `seconds`: a descheduled caller
    // makes fewer calls rather than stretching the run.
    std::size_t calls = static_cast<std::size_t>(s.rate_per_s * s.seconds);
    r.ns.reserve(calls / s.sample_every + 1);
    Pacer pacer(s.rate_per_s);
    const auto t0 = SteadyClock::now();
    const auto deadline = t0 + std::chrono::duration_cast<SteadyClock::duration>(
                                   std::chrono::duration<double>(s.seconds));
    std::size_t i = 0;
    for (; i < calls && (i % 256 != 0 || SteadyClock::now() < deadline); ++i) {
        pacer.wait();
        const std::string& line = s.pool->at(i);
        const std::uint64_t a0 = allocations_on_this_thread();
        bool ok;
        if (i >= s.warmup_calls && i % s.sample_every == 0) {
            const std::uint64_t c0 = clk.start();
            ok = call(line);
            const std::uint64_t c1 = clk.stop();
            r.ns.push_back(clk.to_ns(c1 - c0));
        } else {
            ok = call(line);
        }
        (i >= s.warmup_calls ? r.allocations : r.warmup_allocations) +=
            allocations_on_this_thread() - a0;
        if (!ok) ++r.refused;
    }
    calls = i;
    r.achieved_rate = static_cast<double>(calls) / seconds_since(t0);
    r.calls = calls;
    std::fclose(f);
    const FileCheck c = check_file(path);
    r.problem = file_problem(c, calls, calls * s.pool->line_bytes);
    empty_dir(s.dir);
    return r;
}

}  // namespace bench
