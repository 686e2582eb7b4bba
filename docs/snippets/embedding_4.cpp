// Trusted input: text this program built itself is written without being parsed.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

int main()
{
    boost::asio::io_context io;
    jsonlw::RawJsonWriter writer(io.get_executor(),
                                 {.directory = "jsonlw-out/trusted", .stem = "events"},
                                 {.validation = jsonlw::RawJsonValidation::trusted});
    writer.start();
    writer.submit(fmt::format(R"({{"seq":{},"msg":"compact"}})", 1));  // written as given
    writer.submit("{\"seq\": 2,\n \"msg\": \"pretty\"}\n");  // LFs become spaces: sanitized
    writer.submit("");                                       // empty: dropped as malformed
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport report) {
        const jsonlw::WriterStats& s = report.stats;
        fmt::print("written {}, sanitized {}, malformed {}\n", s.written, s.sanitized,
                   s.dropped.malformed);
    });
    io.run();
}
