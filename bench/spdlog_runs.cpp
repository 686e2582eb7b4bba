// The peer: spdlog (Debian's compiled libspdlog, fmt external), pattern "%v" so each line is
// the record alone. Async loggers get their own thread pool (queue 8192, one worker) unless a
// scenario says otherwise; the time includes flush, the pool's shutdown (which writes what is
// queued) and the file's close.
#include "clock.hpp"
#include "paced_calls.hpp"
#include "producers.hpp"
#include "runs.hpp"

#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <sys/resource.h>

#include <atomic>
#include <cstring>
#include <memory>

namespace bench {

namespace {

constexpr std::size_t spdlog_queue = 8192;

// A logger of one mode writing `path`, and the pool behind it when async.
struct SpdlogSetup {
    std::shared_ptr<spdlog::details::thread_pool> pool;
    std::shared_ptr<spdlog::sinks::basic_file_sink_mt> sink;
    std::shared_ptr<spdlog::logger> logger;

    SpdlogSetup(const std::filesystem::path& path, SpdlogMode mode, std::size_t queue)
    {
        sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string(), true);
        if (mode == SpdlogMode::sync) {
            logger = std::make_shared<spdlog::logger>("bench-sync", sink);
        } else {
            pool = std::make_shared<spdlog::details::thread_pool>(queue, 1);
            logger = std::make_shared<spdlog::async_logger>(
                "bench-async", sink, pool,
                mode == SpdlogMode::async_block ? spdlog::async_overflow_policy::block
                                                : spdlog::async_overflow_policy::overrun_oldest);
        }
        logger->set_pattern("%v");
        logger->set_level(spdlog::level::info);
    }

    void log(const std::string& line)
    {
        logger->log(spdlog::level::info, spdlog::string_view_t(line.data(), line.size()));
    }

    // Flush, then shut the pool down (its worker writes everything queued first), then close
    // the file.
    void finish()
    {
        logger->flush();
        logger.reset();
        pool.reset();
        sink.reset();
    }
};

std::string mode_problem(SpdlogMode mode, std::uint64_t lines, std::uint64_t records)
{
    if (mode == SpdlogMode::async_overrun_oldest) return {};  // losing lines is its policy
    if (lines == records) return {};
    return fmt::format("file has {} lines, expected {}", lines, records);
}

}  // namespace

bool have_spdlog() noexcept { return true; }

ThroughputResult spdlog_throughput(const ThroughputSpec& s, SpdlogMode mode)
{
    ThroughputResult r;
    const auto path = s.dir / "spdlog.jsonl";
    try {
        SpdlogSetup sp(path, mode, spdlog_queue);
        SteadyClock::time_point t0;
        run_producers(s.producers, s.records, t0,
                      [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                          for (std::size_t n = 0; n < count; ++n, i += stride) sp.log(s.pool->at(i));
                      });
        sp.finish();
        r.seconds = seconds_since(t0);
    } catch (const std::exception& e) {
        r.problem = fmt::format("spdlog: {}", e.what());
        empty_dir(s.dir);
        return r;
    }
    const FileCheck c = check_file(path);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.lost = s.records > c.lines ? s.records - c.lines : 0;
    r.problem = mode_problem(mode, c.lines, s.records);
    if (r.problem.empty() && c.bytes != c.lines * s.pool->line_bytes)
        r.problem = fmt::format("file has {} bytes for {} lines", c.bytes, c.lines);
    empty_dir(s.dir);
    return r;
}

SubmitCostResult spdlog_submit_cost(const SubmitCostSpec& s, SpdlogMode mode)
{
    SubmitCostResult r;
    const auto path = s.dir / "spdlog-submit.jsonl";
    try {
        SpdlogSetup sp(path, mode, spdlog_queue);
        PacedCalls paced(s, r);
        while (paced.more())
            paced.step([&](std::size_t i) {
                return [&sp, &line = s.pool->at(i)] {
                    sp.log(line);
                    return true;
                };
            });
        paced.finish();
        sp.finish();
    } catch (const std::exception& e) {
        r.problem = fmt::format("spdlog: {}", e.what());
    }
    const FileCheck c = check_file(path);
    if (r.problem.empty()) r.problem = mode_problem(mode, c.lines, r.calls);
    empty_dir(s.dir);
    return r;
}

OverloadResult spdlog_overload(const OverloadSpec& s, bool block)
{
    OverloadResult r;
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    r.rss_start_kib = ru.ru_maxrss;
    const auto path = s.dir / "spdlog-overload.jsonl";
    std::atomic<std::uint64_t> calls{0};
    const SpdlogMode mode = block ? SpdlogMode::async_block : SpdlogMode::async_overrun_oldest;
    try {
        SpdlogSetup sp(path, mode, s.queue_capacity);
        SteadyClock::time_point t0;
        run_producers_for(s.producers, s.seconds, t0, [&](int k, const std::atomic<bool>& stop) {
            std::uint64_t n = 0;
            std::size_t i = static_cast<std::size_t>(k);
            while (!stop.load(std::memory_order_relaxed)) {
                sp.log(s.pool->at(i++));
                ++n;
            }
            calls += n;
        });
        sp.finish();
        r.seconds = seconds_since(t0);
    } catch (const std::exception& e) {
        std::strncpy(r.problem, e.what(), sizeof r.problem - 1);
    }
    ::getrusage(RUSAGE_SELF, &ru);
    r.rss_peak_kib = ru.ru_maxrss;
    const FileCheck c = check_file(path);
    r.calls = calls;
    r.submitted = calls;
    r.lines = c.lines;
    r.written = c.lines;
    r.lost = r.calls > c.lines ? r.calls - c.lines : 0;
    // spdlog counts nothing per record: "exact" here only means the file and the calls agree
    // where the policy promises it (block: every call is a line).
    r.counts_exact = block ? c.lines == r.calls : c.lines <= r.calls;
    const std::string p = mode_problem(mode, c.lines, r.calls);
    if (!p.empty() && !r.problem[0]) std::strncpy(r.problem, p.c_str(), sizeof r.problem - 1);
    empty_dir(s.dir);
    return r;
}

}  // namespace bench
