// KafkaJsonWriter: JSON texts to Kafka — RawJsonWriter's intake (JsonTextWriter: a short text
// copied once into its queue cell) and encoder (RawJsonEncoder: invalid JSON, trailing garbage
// and, unless allow_any_value, non-objects are malformed, dropped alone) over a KafkaSink, each
// line one message (kafka_sink.hpp says how messages are keyed and how delivery is counted).
// Any other writer goes to Kafka the same way — give its options a KafkaSink (docs/sinks.md).
//
// No file is opened or created (`directory`, `file_io` and the rotation fields are not
// used). Without brokers the writer is inert (every call a cheap no-op, nothing counted); a
// topic missing or a property librdkafka rejects disables it with one error log.
//
// Thread-safety and lifetime: as JsonlRecordWriter. The destructor stops waiting for
// deliveries (the running batch's undelivered records count as unknown), purges what
// librdkafka still holds and destroys the producer; it does not wait for the brokers.
#pragma once

#include <jsonlw/kafka_sink.hpp>
#include <jsonlw/raw_json_encoder.hpp>
#include <jsonlw/raw_json_writer.hpp>
#include <jsonlw/writer_options.hpp>

#include <memory>
#include <utility>

namespace jsonlw {

// The engine's options (queue, batching, close, logs; `directory`, `file_io`, the rotation
// fields and `sink` are not used: the sink is the KafkaSink made from `kafka`) plus the
// writer's own.
struct KafkaWriterOptions : WriterOptions {
    // Brokers, topic, message key, delivery (kafka_sink.hpp).
    KafkaOptions kafka{};
    // How each record is validated, as RawJsonWriter's (default: full, objects only).
    RawJsonOptions raw{};
};

// Called from any thread as JsonlRecordWriter; owns its KafkaSink, shared with the engine,
// which also owns the encoder.
class KafkaJsonWriter final : public JsonTextWriter {
public:
    KafkaJsonWriter(boost::asio::any_io_executor ex, KafkaWriterOptions opts);
    // The engine's options and the Kafka ones apart (designated initializers name only
    // WriterOptions' fields); validation at its default.
    KafkaJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, KafkaOptions kafka)
        : KafkaJsonWriter(std::move(ex), KafkaWriterOptions{std::move(opts), std::move(kafka)})
    {
    }
    // Stops waiting for deliveries, then the engine's destructor stops the writer (the engine
    // keeps the encoder and the sink).
    ~KafkaJsonWriter() override;

    const KafkaOptions& kafka_options() const noexcept { return kafka_; }
    KafkaProducerStats producer_stats() const noexcept;

private:
    KafkaJsonWriter(boost::asio::any_io_executor ex, const KafkaWriterOptions& opts,
                    std::shared_ptr<KafkaSink> sink);

    const KafkaOptions kafka_;
    const std::shared_ptr<KafkaSink> sink_;  // null when inert; the engine shares it
};

}  // namespace jsonlw
