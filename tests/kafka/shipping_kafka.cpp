// Ship JSON lines to Kafka: one message per line, keyed by request_id, delivery counted.
// Run with a broker list ("host:9092"); without one it uses librdkafka's in-process mock
// cluster, so it runs anywhere.
#include <jsonlw/jsonlw.hpp>
#include <jsonlw/kafka_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <chrono>
#include <string>

using namespace std::chrono_literals;

int main(int argc, char** argv)
{
    jsonlw::KafkaOptions kafka{
        .brokers = argc > 1 ? argv[1] : "mock",
        .topic = "llm-requests",
        .key_field = "request_id",        // one request's records share a partition
        .delivery_timeout = 10s,          // not acknowledged by then: dropped.write_error
        .max_queued_messages = 10'000,    // librdkafka's queue: memory stays bounded
        .config = {{"compression.type", "lz4"}},
    };
    if (argc < 2) kafka.config.push_back({"test.mock.num.brokers", "3"});

    boost::asio::io_context io;
    jsonlw::KafkaJsonWriter writer(io.get_executor(),
                                   {.subject = "request", .batch_records = 1000,
                                    .shutdown_timeout = 15s},
                                   kafka);
    writer.start();
    for (int i = 0; i < 100; ++i)
        writer.submit(fmt::format(R"({{"request_id":"req-{}","step":{}}})", i % 10, i));
    writer.submit("not json");  // dropped.malformed, never produced
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport r) {
        // written: acknowledged by the brokers; write_error: delivery failed; unknown: no
        // delivery report before shutdown_timeout.
        fmt::print("delivered {}, failed {}, unknown {}, malformed {}\n", r.stats.written,
                   r.stats.dropped.write_error, r.stats.unknown, r.stats.dropped.malformed);
    });
    io.run();
}
