// A RawJsonWriter inside an io_context: submit from the loop, close, print the counters.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

int main()
{
    boost::asio::io_context io;
    jsonlw::RawJsonWriter writer(io.get_executor(), {
        .directory = "jsonlw-out",  // created by start(); empty would make the writer inert
        .stem = "embed",
        .subject = "example",
        .shutdown_timeout = std::chrono::seconds(2),
    });
    writer.start();
    for (int i = 0; i < 3; ++i)
        writer.submit(fmt::format(R"({{ "seq": {}, "msg": "hello" }})", i));  // minified on write
    writer.submit("{not json");  // dropped alone, counted as malformed, logged
    writer.async_close([&](jsonlw::error_code, jsonlw::CloseReport report) {
        const jsonlw::WriterStats& s = report.stats;
        fmt::print("{}: written {}, malformed {}, drained {}\n", writer.file_path().string(),
                   s.written, s.dropped.malformed, report.drained);
    });
    io.run();
}
