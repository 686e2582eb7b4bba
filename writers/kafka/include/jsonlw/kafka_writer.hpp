// KafkaJsonWriter: JSON texts validated and minified like RawJsonWriter's records (invalid
// JSON, trailing garbage and non-objects are malformed, dropped alone), written through a
// KafkaSink (kafka_sink.hpp says how messages are keyed and how delivery is counted): a
// JsonlRecordWriter<std::string> whose sink is Kafka. Any other writer goes to Kafka the same
// way — give its options a KafkaSink (docs/sinks.md).
//
// No file is opened or created (`directory`, `file_io` and the rotation fields are not
// used). Without brokers the writer is inert (every call a cheap no-op, nothing counted); a
// topic missing or a property librdkafka rejects disables it with one error log.
//
// Thread-safety and lifetime: as JsonlRecordWriter. The destructor stops waiting for
// deliveries (the running batch's undelivered records count as unknown), purges what
// librdkafka still holds and destroys the producer; it does not wait for the brokers.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/kafka_sink.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace jsonlw {

class KafkaJsonWriter final : public JsonlRecordWriter<std::string> {
public:
    // `opts` configures the queue, batching, close and logs; its directory, file_io, the
    // rotation fields and sink are not used.
    KafkaJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, KafkaOptions kafka);
    // Stops waiting for deliveries, then stops the writer (the engine keeps the encoder).
    ~KafkaJsonWriter() override;

    const KafkaOptions& kafka_options() const noexcept { return kafka_; }
    KafkaProducerStats producer_stats() const noexcept;

private:
    KafkaJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, KafkaOptions&& kafka,
                    std::shared_ptr<KafkaSink> sink);

    KafkaOptions kafka_;
    std::shared_ptr<KafkaSink> sink_;  // null when inert
};

}  // namespace jsonlw
