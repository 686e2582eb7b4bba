// The jsonlw row of the drain scenario: records queued while the io_context is not running,
// timed from async_close() until its completion handler runs.
#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"
#include "writer_harness.hpp"

#include <chrono>
#include <optional>

namespace bench {

using jsonlw::SubmitResult;

DrainResult jsonlw_raw_drain(const LinePool& pool, std::size_t records,
                             const std::filesystem::path& dir)
{
    DrainResult r;
    LogTally logs;
    std::filesystem::path file;
    std::optional<jsonlw::CloseReport> report;
    {
        asio::io_context ctx;  // not running while the records are queued
        auto guard = asio::make_work_guard(ctx);
        jsonlw::RawJsonWriter w(ctx.get_executor(), jsonlw::WriterOptions{
                                                        .directory = dir,
                                                        .stem = "drain",
                                                        .subject = "bench",
                                                        .queue_capacity = records,
                                                        .shutdown_timeout = std::chrono::hours(1),
                                                        .log = logs.sink(),
                                                    });
        w.start();
        std::uint64_t refused = 0;
        for (std::size_t i = 0; i < records; ++i)
            if (w.submit(std::string(pool.at(i))) != SubmitResult::accepted) ++refused;
        SteadyClock::time_point t1;
        const auto t0 = SteadyClock::now();
        w.async_close([&](jsonlw::error_code, jsonlw::CloseReport rep) {
            t1 = SteadyClock::now();
            report = rep;
            guard.reset();
        });
        ctx.run();
        r.seconds = std::chrono::duration<double>(t1 - t0).count();
        file = w.file_path();
        if (refused) r.problem = fmt::format("{} records refused while queueing", refused);
    }
    const FileCheck c = check_file(file);
    r.lines = c.lines;
    if (r.problem.empty()) r.problem = file_problem(c, records, records * pool.line_bytes);
    if (r.problem.empty() && report) r.problem = stats_problem(report->stats, records);
    if (r.problem.empty() && !report) r.problem = "close never completed";
    empty_dir(dir);
    return r;
}

}  // namespace bench
