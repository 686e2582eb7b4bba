// jsonlw-kafka: two lines to librdkafka's in-process mock cluster (test.mock.num.brokers).
#include <jsonlw/kafka_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

int main()
{
    boost::asio::io_context io;
    jsonlw::KafkaJsonWriter writer(io.get_executor(), {.subject = "kafka"},
                                   {.brokers = "mock", .topic = "t",
                                    .config = {{"test.mock.num.brokers", "1"}}});
    writer.start();
    writer.submit(R"({"request_id": 1})");
    writer.submit(R"({"request_id": 2})");
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport report) {
        fmt::print("kafka: written {}\n", report.stats.written);
    });
    io.run();
}
