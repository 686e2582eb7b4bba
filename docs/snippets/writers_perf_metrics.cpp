// A worker's perf-metrics record from steady_clock stamps, submitted once the request ended.
#include <jsonlw/perf_metrics_clock.hpp>
#include <jsonlw/perf_metrics_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <chrono>

int main()
{
    using namespace std::chrono_literals;
    boost::asio::io_context io;
    jsonlw::PerfMetricsWriter writer(io.get_executor(), "jsonlw-out/perf", "server");
    writer.start();

    // The stamps a handler took while serving request 42 (here 1 ms apart, made up).
    const auto t0 = std::chrono::steady_clock::now();
    jsonlw::PerfMetricsRecord rec = jsonlw::worker_record("42", {
        .server_arrival = t0,
        .arrival = t0 + 1ms,
        .first_scheduled = t0 + 2ms,
        .first_token = t0 + 5ms,
        .server_first_token = t0 + 6ms,
        .last_token = t0 + 40ms,
    });
    rec.server->first_iter = 812;  // optional fields: set the ones you have
    rec.server->last_iter = 860;
    rec.server->kv_cache_metrics = jsonlw::KvCacheMetrics{.num_total_allocated_blocks = 5,
                                                          .num_new_allocated_blocks = 3,
                                                          .num_reused_blocks = 2,
                                                          .num_missed_blocks = 3};
    writer.submit(std::move(rec));  // never blocks; the line is written on the writer's thread

    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport report) {
        fmt::print("perf_metrics: written {}, dropped {}\n", report.stats.written,
                   report.stats.dropped.total());
    });
    io.run();
}
