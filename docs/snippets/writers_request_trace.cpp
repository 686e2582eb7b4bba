// A request line when the request is accepted, a response line when its response ends.
#include <jsonlw/request_trace_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <string>

int main()
{
    boost::asio::io_context io;
    jsonlw::RequestTraceWriter writer(io.get_executor(), {.directory = "jsonlw-out/traces"});
    writer.start();

    const std::string id = jsonlw::new_trace_id();  // joins the two lines
    writer.record_request({
        .trace_id = id,
        .session = "user@example.com",  // written sanitized: user_example.com
        .server_arrival_time = 5310.0,  // steady-clock s (jsonlw::steady_seconds), or nullopt
        .route = "/v1/chat/completions",
        .headers = {{"Authorization", "Bearer sk-1"}, {"Content-Type", "application/json"}},
        .body = R"({"model": "m", "messages": []})",  // written parsed and minified
    });
    writer.record_response({
        .trace_id = id,
        .session = "user@example.com",
        .client_id = 7,  // the engine's request id
        .http_status = 200,
        .response = {.kind = jsonlw::ResponseKind::sse_text, .body = "data: [DONE]\n\n"},
    });

    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport report) {
        fmt::print("request_trace: written {}, dropped {}\n", report.stats.written,
                   report.stats.dropped.total());
    });
    io.run();
}
