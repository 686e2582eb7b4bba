// KafkaJsonWriter: RawJsonWriter's intake and encoder (RawJsonEncoder) with a KafkaSink as
// the sink.
#include <jsonlw/kafka_writer.hpp>

#include <fmt/format.h>

#include <memory>
#include <utility>

namespace jsonlw {

namespace {

// No brokers: inert, silently. No topic: inert, with the error said at construction.
std::shared_ptr<KafkaSink> make_sink(const KafkaWriterOptions& opts)
{
    if (opts.kafka.brokers.empty()) return nullptr;
    if (opts.kafka.topic.empty()) {
        SinkContext said;
        said.log = opts.log;
        said.write_log(
            LogLevel::error,
            fmt::format("Disabling {} Kafka output (topic ''): no topic", opts.subject));
        return nullptr;
    }
    return std::make_shared<KafkaSink>(opts.kafka);
}

// The engine's options: the sink is `sink` (none: inert), no directory, no file.
WriterOptions engine_options(const KafkaWriterOptions& opts, std::shared_ptr<KafkaSink> sink)
{
    WriterOptions o = opts;
    o.directory.clear();
    o.file_io.reset();
    o.sink = std::move(sink);
    return o;
}

}  // namespace

KafkaJsonWriter::KafkaJsonWriter(boost::asio::any_io_executor ex, KafkaWriterOptions opts)
    : KafkaJsonWriter(std::move(ex), opts, make_sink(opts))
{
}

KafkaJsonWriter::KafkaJsonWriter(boost::asio::any_io_executor ex, const KafkaWriterOptions& opts,
                                 std::shared_ptr<KafkaSink> sink)
    : JsonTextWriter(std::move(ex), engine_options(opts, sink),
                     std::make_shared<RawJsonEncoder>(opts.raw, opts)),
      kafka_(opts.kafka),
      sink_(std::move(sink))
{
}

KafkaJsonWriter::~KafkaJsonWriter()
{
    // A batch waiting for deliveries stops at its next slice (at most 100 ms); the base's
    // destructor then stops the writer.
    if (sink_) sink_->stop();
}

KafkaProducerStats KafkaJsonWriter::producer_stats() const noexcept
{
    return sink_ ? sink_->stats() : KafkaProducerStats{};
}

}  // namespace jsonlw
