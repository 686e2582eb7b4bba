// The three writers of `jsonlw serve` and their file sinks, configured from the model's
// options as the in-process demo configures them (demo_writer_options.hpp): raw output and
// request traces in hour folders, perf metrics in one (rotating) file, all under --out.
// Constructed, started and closed on the server's loop thread; the writers are then
// called from that thread (the raw-output hook and the trace and perf submits). With
// `enabled` false (--writers off) nothing is constructed and every call is skipped by the
// ModelServer.
#pragma once

#include "../demo/demo_accounting.hpp"
#include "../demo/demo_options.hpp"

#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/request_trace_writer.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <array>
#include <functional>
#include <memory>

namespace jsonlw::serve {

// What the three writers ended with, in demo_kinds order: raw output, request trace, perf.
struct WritersOutcome {
    std::array<CloseReport, 3> reports{};
    std::array<FileSinkCounters, 3> sinks{};
    RawOutputCounters raw{};
    std::uint64_t trace_invalid_traceparents = 0;
};

class ServeWriters {
public:
    // `flush`: the writers' flush_interval (--writer-flush-ms).
    ServeWriters(const boost::asio::any_io_executor& ex, const tools::DemoOptions& o,
                 std::chrono::milliseconds flush);

    void start();
    // Closes all three (each within its shutdown timeout) and calls `done` on the executor.
    void async_close(std::function<void(WritersOutcome)> done);

    RawOutputWriter& raw() noexcept { return raw_; }
    RequestTraceWriter& trace() noexcept { return trace_; }
    PerfMetricsWriter& perf() noexcept { return perf_; }

private:
    std::shared_ptr<PartitionedFileSink> raw_sink_, trace_sink_;
    std::shared_ptr<FileSink> perf_sink_;
    RawOutputWriter raw_;
    RequestTraceWriter trace_;
    PerfMetricsWriter perf_;
};

}  // namespace jsonlw::serve
