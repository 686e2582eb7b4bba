// KafkaSink: a writer's lines to a Kafka topic (librdkafka), one message per line, behind
// any encoder — perf metrics, raw output, request traces, a RawJsonWriter's records.
//
// Each line becomes one message keyed by the value of its top-level field `key_field` (a
// string's contents, a number's or a boolean's JSON text; absent, null, an object, an array
// or a line that is not a JSON object: no key), so the records of one request share a
// partition.
//
// How delivery is accounted for. The writer counts a group of lines when append() returns,
// so append() produces the group's lines and then serves librdkafka's delivery reports on
// the I/O thread (rd_kafka_flush in short slices) until every message of the group has one,
// or delivery_timeout + 2 s have passed. Its AppendResult says:
//   records_written  the broker acknowledged the message (acks per `config`; default all)
//   records_failed   its delivery report said failed (message timed out with the brokers
//                    down, a broker error, too large), or librdkafka's queue stayed full for
//                    queue_full_wait, or it could not be produced at all
//   records_unknown  no delivery report by the deadline (librdkafka may still deliver it)
// and the writer counts them as written, dropped.write_error and unknown; a close that runs
// out of shutdown_timeout counts the group still waiting as unknown. `landed` is the
// delivered lines' bytes, newline included. A group waits for its acknowledgements before
// the next is produced, so batches are better large (batch_records 1000, say).
//
// Memory stays bounded when the brokers are down: librdkafka's queue holds at most
// max_queued_messages / max_queued_kbytes (a full queue is retried while deliveries are
// served, for queue_full_wait, then the rest of the group fails), and while a group waits,
// the writer's own queue fills and submit() drops as queue_full.
//
// Called by the writer's engine as every LineSink is (start() on the writer's start()
// thread, append() on its I/O thread); stats() from any thread; the log sink also from
// librdkafka's threads (its warnings and errors, rate-limited). The destructor stops waiting
// for deliveries (stop() does so early), purges what librdkafka still holds and destroys the
// producer; it does not wait for the brokers.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jsonlw {

struct KafkaOptions {
    // bootstrap.servers: "host:port,host:port". Required: a KafkaSink without brokers fails
    // its start() (the writer is then disabled); KafkaJsonWriter is inert without them.
    std::string brokers{};
    // The topic every line goes to. Required (empty: start() fails, the writer disabled).
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
    // last, so they override the fields above. A property librdkafka rejects fails start().
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

class KafkaSink final : public LineSink {
public:
    explicit KafkaSink(KafkaOptions kafka);
    ~KafkaSink() override;
    KafkaSink(const KafkaSink&) = delete;
    KafkaSink& operator=(const KafkaSink&) = delete;

    // Creates the producer (no connection yet: librdkafka connects in the background). An
    // error (no brokers, no topic, a property librdkafka rejects) is logged with the reason.
    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::string describe(std::string_view key) const override;

    // Any thread: a group waiting for deliveries stops at its next slice (at most 100 ms);
    // its undelivered records count as unknown. For a writer that is being destroyed.
    void stop() noexcept;
    const KafkaOptions& options() const noexcept { return kafka_; }
    KafkaProducerStats stats() const noexcept;

private:
    struct Producer;
    const KafkaOptions kafka_;
    std::unique_ptr<Producer> producer_;
};

}  // namespace jsonlw
