// The jsonlw rows of a throughput cell: RawJsonWriter fed pre-serialized lines, and the
// configured writers fed their typed records; timed until async_close() completes, then the
// file and the writer's counters checked.
#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"
#include "writer_harness.hpp"
#include "producers.hpp"
#include "writer_workloads.hpp"

#include <jsonlw/perf_metrics_writer.hpp>

#include <boost/asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace bench {

using jsonlw::Overflow;
using jsonlw::SubmitResult;

ThroughputResult jsonlw_raw_throughput(const ThroughputSpec& s, bool trusted)
{
    ThroughputResult r;
    LogTally logs;
    std::filesystem::path file;
    std::optional<jsonlw::CloseReport> report;
    std::atomic<std::uint64_t> refused{0};
    {
        Loop loop;
        // The queue holds as many records as spdlog's (8192); Overflow::block with a timeout
        // no run reaches, so every record is written and none is dropped.
        jsonlw::RawJsonWriter w(loop.executor(), jsonlw::WriterOptions{
                                                     .directory = s.dir,
                                                     .stem = "raw",
                                                     .subject = "bench",
                                                     .queue_capacity = 8192,
                                                     .overflow = Overflow::block,
                                                     .block_timeout = std::chrono::hours(1),
                                                     .shutdown_timeout = std::chrono::hours(1),
                                                     .log = logs.sink(),
                                                     .serializer_threads = s.serializers,
                                                 },
                                 jsonlw::RawJsonOptions{
                                     .validation = trusted ? jsonlw::RawJsonValidation::trusted
                                                           : jsonlw::RawJsonValidation::full});
        w.start();
        SteadyClock::time_point t0;
        run_producers(s.producers, s.records, t0,
                      [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                          std::uint64_t bad = 0;
                          for (std::size_t n = 0; n < count; ++n, i += stride) {
                              const SubmitResult res =
                                  s.submit_view ? w.submit(std::string_view(s.pool->at(i)))
                                  : s.hand_over
                                      ? w.submit(jsonlw::RawJsonText(
                                            jsonlw::RawJsonText::take_buffer_t{},
                                            std::string(s.pool->at(i))))
                                      : w.submit(std::string(s.pool->at(i)));
                              if (res != SubmitResult::accepted) ++bad;
                          }
                          refused += bad;
                      });
        report = w.async_close(asio::use_future).get();
        r.seconds = seconds_since(t0);
        file = w.file_path();
    }
    const FileCheck c = check_file(file);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.problem = file_problem(c, s.records, s.records * s.pool->line_bytes);
    if (r.problem.empty()) r.problem = stats_problem(report->stats, s.records);
    if (r.problem.empty() && refused.load() != 0)
        r.problem = fmt::format("{} submits refused", refused.load());
    if (r.problem.empty() && !report->drained) r.problem = "close did not drain";
    empty_dir(s.dir);
    return r;
}

ThroughputResult writer_throughput(const WriterWorkload& wl, const ThroughputSpec& s)
{
    ThroughputResult r;
    LogTally logs;
    std::optional<jsonlw::CloseReport> report;
    std::atomic<std::uint64_t> retries{0}, bad{0};
    std::uint64_t hook_failures = 0;
    {
        Loop loop;
        SteadyClock::time_point t0;
        if (wl.kind == WriterWorkload::Kind::perf_metrics) {
            // The writer's constants are TensorRT-LLM's (queue 1024, drop_newest): a producer
            // that must not lose a record retries it after a refusal (counted).
            const auto& tmpl = *static_cast<const jsonlw::PerfMetricsRecord*>(wl.records.get());
            jsonlw::PerfMetricsWriter w(loop.executor(), s.dir, "bench",
                                        jsonlw::WriterOptions{
                                            .log = logs.sink(),
                                            .serializer_threads = s.serializers});
            w.start();
            run_producers(s.producers, s.records, t0,
                          [&](int, std::size_t count, std::size_t, std::size_t) {
                              std::uint64_t again = 0, failed = 0;
                              for (std::size_t n = 0; n < count; ++n) {
                                  for (;;) {
                                      const SubmitResult res = w.submit(jsonlw::PerfMetricsRecord(tmpl));
                                      if (res == SubmitResult::accepted) break;
                                      if (res != SubmitResult::dropped_queue_full) {
                                          ++failed;
                                          break;
                                      }
                                      // Back off for about half a batch's worth of
                                      // serialization, rather than spin against the I/O
                                      // thread for the same cores.
                                      ++again;
                                      std::this_thread::sleep_for(std::chrono::microseconds(50));
                                  }
                              }
                              retries += again;
                              bad += failed;
                          });
            report = w.async_close(asio::use_future).get();
        } else {
            const auto& shape = *static_cast<const RawOutputShape*>(wl.records.get());
            jsonlw::RawOutputWriter w(loop.executor(), raw_output_options(s.dir, logs));
            w.start();
            run_producers(s.producers, s.records, t0,
                          [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                              for (std::size_t n = 0; n < count; ++n, i += stride)
                                  feed_output(w, shape, raw_output_first_id + i);
                          });
            report = w.async_close(asio::use_future).get();
            hook_failures = w.counters().hook_failures;
        }
        r.seconds = seconds_since(t0);
    }
    const FileCheck c = check_tree(s.dir);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.lost = retries;  // refusals retried (PerfMetricsWriter), not records lost
    r.problem = file_problem(c, s.records, s.records * wl.lines.line_bytes);
    const jsonlw::WriterStats& st = report->stats;
    if (r.problem.empty() && (st.written != s.records || st.dropped.queue_full != retries ||
                              st.dropped.total() != retries || st.unknown || st.pending))
        r.problem = fmt::format("stats: written {} of {}, dropped {} (retried refusals {})",
                                st.written, s.records, st.dropped.total(), retries.load());
    if (r.problem.empty() && (bad.load() || hook_failures))
        r.problem = fmt::format("{} submits refused as closed/disabled, {} hook failures",
                                bad.load(), hook_failures);
    empty_dir(s.dir);
    return r;
}

}  // namespace bench
