// jsonlw (core): a RawJsonWriter, and async_close_all over it.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

int main()
{
    boost::asio::io_context io;
    jsonlw::RawJsonWriter writer(io.get_executor(), {.directory = "out/core", .stem = "core"});
    writer.start();
    writer.submit(R"({"a": 1})");
    writer.submit("{not json");
    jsonlw::async_close_all([](jsonlw::error_code, auto reports) {
        fmt::print("core: written {}, malformed {}\n", reports[0].stats.written,
                   reports[0].stats.dropped.malformed);
    }, writer);
    io.run();
}
