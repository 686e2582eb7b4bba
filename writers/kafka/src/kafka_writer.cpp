// KafkaJsonWriter: RawJsonWriter's validation and minification as the encoder, a KafkaSink
// as the destination.
#include <jsonlw/kafka_writer.hpp>

#include <fmt/format.h>
#include <simdjson.h>

#include <vector>

namespace jsonlw {

namespace {

// The writer's encoder: a JSON object text, validated and minified (I/O thread only).
class KafkaTextEncoder final : public RecordEncoder<std::string> {
public:
    void serialize(const std::string& text, JsonLine& line) override;
    std::size_t record_bytes(const std::string& text) const noexcept override
    {
        return text.size();
    }

private:
    simdjson::dom::parser parser_;
    std::vector<char> minified_;
};

// No brokers: inert, silently. No topic: inert, with the error said at construction.
std::shared_ptr<KafkaSink> make_sink(const KafkaOptions& kafka, const WriterOptions& opts)
{
    if (kafka.brokers.empty()) return nullptr;
    if (kafka.topic.empty()) {
        SinkContext said;
        said.log = opts.log;
        said.write_log(
            LogLevel::error,
            fmt::format("Disabling {} Kafka output (topic ''): no topic", opts.subject));
        return nullptr;
    }
    return std::make_shared<KafkaSink>(kafka);
}

// The writer's options: `sink` (made here, also returned through `made`) and no directory.
WriterOptions kafka_writer_options(WriterOptions opts, const KafkaOptions& kafka,
                                   std::shared_ptr<KafkaSink>& made)
{
    made = make_sink(kafka, opts);
    opts.directory.clear();  // inert without a sink
    opts.file_io.reset();
    opts.sink = made;
    return opts;
}

}  // namespace

KafkaJsonWriter::KafkaJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                                 KafkaOptions kafka)
    : KafkaJsonWriter(std::move(ex), std::move(opts), std::move(kafka), nullptr)
{
}

// `sink` is made from `kafka` here, before `kafka` is moved into the member.
KafkaJsonWriter::KafkaJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                                 KafkaOptions&& kafka, std::shared_ptr<KafkaSink> sink)
    : JsonlRecordWriter<std::string>(std::move(ex),
                                     kafka_writer_options(std::move(opts), kafka, sink),
                                     std::make_shared<KafkaTextEncoder>()),
      kafka_(std::move(kafka)),
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

void KafkaTextEncoder::serialize(const std::string& text, JsonLine& line)
{
    const bool padded = text.capacity() - text.size() >= simdjson::SIMDJSON_PADDING;
    simdjson::dom::element root;
    if (const auto err = parser_.parse(text.data(), text.size(), !padded).get(root))
        throw MalformedRecord(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    if (!root.is_object()) throw MalformedRecord("not a JSON object");
    minified_.resize(text.size());
    std::size_t len = 0;
    if (const auto err = simdjson::minify(text.data(), text.size(), minified_.data(), len))
        throw MalformedRecord(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    line.raw({minified_.data(), len});
}

}  // namespace jsonlw
