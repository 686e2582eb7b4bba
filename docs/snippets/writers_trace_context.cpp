// One request's traceparent on its three records: the request line reads the header itself,
// the server parses it once (trace_context_of) for the raw output, response and perf record.
#include <jsonlw/close_all.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/request_trace_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

int main()
{
    boost::asio::io_context io;
    jsonlw::PerfMetricsWriter perf(io.get_executor(), "jsonlw-out/joined/perf", "server");
    jsonlw::RawOutputWriter raw(io.get_executor(), {.directory = "jsonlw-out/joined/raw"});
    jsonlw::RequestTraceWriter trace(io.get_executor(), {.directory = "jsonlw-out/joined/trace"});
    perf.start(), raw.start(), trace.start();

    jsonlw::RequestTrace req;
    req.trace_id = jsonlw::new_trace_id();
    req.route = "/v1/completions";
    req.headers = {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}};
    req.body = R"({"prompt": "hi"})";
    const std::optional<jsonlw::TraceContext> tc = jsonlw::trace_context_of(req.headers).context;
    const std::string id = req.trace_id;
    trace.record_request(std::move(req));  // "traceparent" from its header

    // The same context on the output's first chunk, the response and the perf record.
    const std::int32_t tokens[] = {9};
    raw.on_chunk({.request_id = 7, .text_diff = "hello", .token_ids_diff = tokens,
                  .is_final = true, .trace_context = tc});
    jsonlw::ResponseTrace resp;
    resp.trace_id = id;
    resp.client_id = 7;
    resp.trace_context = tc;
    trace.record_response(std::move(resp));
    jsonlw::PerfMetricsRecord rec;
    rec.request_id = "7";
    rec.server.emplace();  // its stamps, as a handler took them
    rec.trace_context = tc;
    perf.submit(std::move(rec));

    jsonlw::async_close_all(
        [&](jsonlw::error_code, std::array<jsonlw::CloseReport, 3> reports) {
            fmt::print("{} lines with traceparent {}; invalid traceparent headers: {}\n",
                       reports[0].stats.written + reports[1].stats.written +
                           reports[2].stats.written,
                       tc->traceparent(), trace.invalid_traceparents());
        },
        perf, raw, trace);
    io.run();
}
