// Perf metrics as OTLP JSON Lines: one LogsData document per batch, for the Collector's
// otlpjsonfile receiver; the request's traceparent becomes the log record's traceId/spanId.
#include <jsonlw/perf_metrics_clock.hpp>
#include <jsonlw/perf_metrics_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

int main()
{
    using namespace std::chrono_literals;
    const std::filesystem::path dir = "jsonlw-out/otlp";
    std::filesystem::remove_all(dir);
    boost::asio::io_context io;
    jsonlw::PerfMetricsWriter writer(io.get_executor(), dir, "server",
                                     {.format = jsonlw::LineFormat::otlp,
                                      .otlp = {.service_name = "my-llm-server"}});
    writer.start();

    const auto t0 = std::chrono::steady_clock::now();
    jsonlw::PerfMetricsRecord rec = jsonlw::worker_record("42", {.arrival = t0, .last_token = t0 + 40ms});
    rec.trace_context = jsonlw::TraceContext::parse_traceparent(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    writer.submit(std::move(rec));

    int status = 1;
    writer.async_close([&](jsonlw::error_code, jsonlw::CloseReport report) {
        std::ifstream in(writer.file_path());
        std::string line;
        std::getline(in, line);
        // {"resourceLogs":[{"resource":{"attributes":[{"key":"service.name",...
        //   "logRecords":[{"observedTimeUnixNano":"...","severityNumber":9,
        //   "severityText":"INFO","body":{"kvlistValue":{"values":[{"key":"request_id",...}]}},
        //   "timeUnixNano":"...","flags":1,"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",
        //   "eventName":"jsonlw.perf_metrics"}]}]}]}
        fmt::print("written {}: {}...\n", report.stats.written, line.substr(0, 60));
        status = report.stats.written == 1 &&
                         line.find("\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4736\"") != std::string::npos
                     ? 0
                     : 1;
    });
    io.run();
    return status;
}
