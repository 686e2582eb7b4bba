// KafkaJsonWriter: a JsonlRecordWriter whose lines go to a Kafka topic (librdkafka), one
// message per line, instead of to a file.
//
// Records are JSON texts, validated and minified like RawJsonWriter's (invalid JSON, invalid
// UTF-8, trailing garbage and non-objects are malformed, dropped alone). Each line becomes
// one message keyed by the value of its top-level field `key_field` (a string's contents, a
// number's or a boolean's JSON text; absent, null, an object or an array: no key), so the
// records of one request share a partition.
//
// How delivery is accounted for. The base class resolves a batch when write_batch() returns,
// so write_batch() produces the batch's lines and then serves librdkafka's delivery reports
// on the I/O thread (rd_kafka_flush in short slices) until every message of the batch has
// one, or delivery_timeout + 2 s have passed. The batch's outcome is therefore known when
// write_batch() returns, the core stays unchanged, and the counters mean what they say:
//   written              the broker acknowledged the message (acks per `config`; default all)
//   dropped.write_error  its delivery report said failed (message timed out with the brokers
//                        down, a broker error, too large), or librdkafka's queue stayed full
//                        for queue_full_wait, or it could not be produced at all
//   unknown              no delivery report by the deadline (librdkafka may still deliver
//                        it); or still waiting when async_close() ran out of shutdown_timeout
//                        (the base counts that whole batch as unknown)
//   dropped.malformed    not a JSON object (never produced)
// Nothing is lost silently: every record of a batch lands in exactly one of them. A batch
// waits for its acknowledgements before the next is produced, so batches are better large
// (batch_records 1000, say): the wait is one broker round trip per batch.
//
// Each batch's outcome reaches the base's counters through JsonlRecordWriter::settle(): no
// file is opened or created (`directory` and `file_io` are not used). `bytes` counts the
// delivered lines' bytes, newline included, and `batches` the batches with at least one
// delivered message.
//
// Memory stays bounded when the brokers are down: librdkafka's queue holds at most
// max_queued_messages / max_queued_kbytes (a full queue is retried while deliveries are
// served, for queue_full_wait, then the rest of the batch is write_error), and while a batch
// waits, the writer's own queue fills and submit() drops as queue_full.
//
// Thread-safety and lifetime: as JsonlRecordWriter; the log sink is also called from
// librdkafka's threads (its warnings and errors, rate-limited). file_path() names no file
// this writer writes. The destructor stops waiting for deliveries (the running batch's
// undelivered records count as unknown), purges what librdkafka still holds and destroys
// the producer; it does not wait for the brokers.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jsonlw {

struct KafkaOptions {
    // bootstrap.servers: "host:port,host:port". Empty: the writer is inert (every call a
    // cheap no-op, nothing counted), like a JsonlRecordWriter without a directory.
    std::string brokers{};
    // The topic every line goes to. Required (empty: one error log, the writer inert).
    std::string topic{};
    // The top-level field whose value keys each message (default "request_id"). Empty: no
    // key (librdkafka spreads the messages over the partitions).
    std::string key_field = "request_id";
    // message.timeout.ms: a message not acknowledged by then fails (write_error), retries
    // included (default 30 s). A batch waits for its reports at most this + 2 s.
    std::chrono::milliseconds delivery_timeout{30000};
    // queue.buffering.max.messages: messages librdkafka holds, in flight included (default
    // 100000). After that, produce waits for room (below).
    std::size_t max_queued_messages = 100000;
    // queue.buffering.max.kbytes: bytes librdkafka holds (KiB; default 65536 = 64 MiB).
    std::size_t max_queued_kbytes = 65536;
    // With librdkafka's queue full: how long a batch waits for room, serving delivery
    // reports, before the rest of it is counted as write_error (default 1 s).
    std::chrono::milliseconds queue_full_wait{1000};
    // linger.ms: how long librdkafka lets messages gather before sending (default 5 ms; each
    // batch is flushed at its end anyway).
    std::chrono::milliseconds linger{5};
    // enable.idempotence: no duplicates, order kept per partition across retries (default
    // true; implies acks=all).
    bool idempotent = true;
    // Any other librdkafka property ("security.protocol", "compression.type", ...), applied
    // last, so they override the fields above. A property librdkafka rejects: one error
    // log, the writer inert.
    std::vector<std::pair<std::string, std::string>> config{};
};

// What the producer did, beyond the writer's own counters (for tests and monitoring).
struct KafkaProducerStats {
    std::uint64_t produced = 0;          // messages handed to librdkafka
    std::uint64_t delivered = 0;         // delivery reports: delivered
    std::uint64_t failed = 0;            // delivery reports: failed; or refused by produce
    std::uint64_t late_reports = 0;      // reports for messages already counted as unknown
    std::uint64_t queue_full_waits = 0;  // produce calls that found librdkafka's queue full
};

class KafkaJsonWriter final : public JsonlRecordWriter<std::string> {
public:
    // Creates the producer (no connection yet: librdkafka connects in the background).
    // `opts` configures the queue, batching, close and logs; its directory and file_io are
    // not used.
    KafkaJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, KafkaOptions kafka);
    ~KafkaJsonWriter() override;

    const KafkaOptions& kafka_options() const noexcept { return kafka_; }
    KafkaProducerStats producer_stats() const noexcept;

protected:
    void serialize(const std::string& text, JsonLine& line) override;
    void write_batch(std::span<const std::string> batch) override;
    std::size_t record_bytes(const std::string& text) const noexcept override
    {
        return text.size();
    }

private:
    struct Producer;
    struct Prepared;
    KafkaJsonWriter(boost::asio::any_io_executor ex, Prepared prepared, KafkaOptions&& kafka);
    static Prepared prepare(WriterOptions opts, const KafkaOptions& kafka);

    KafkaOptions kafka_;
    std::unique_ptr<Producer> producer_;  // null when inert; write_batch(): I/O thread only
};

}  // namespace jsonlw
