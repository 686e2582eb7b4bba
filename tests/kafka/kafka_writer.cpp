// KafkaJsonWriter against librdkafka's in-process mock cluster: exact delivery counts, keys
// and partitions read back by a consumer, broker errors and brokers taken down (counted
// failures or retried deliveries, never a hang), librdkafka's bounded queue, a timed-out close.
#include <jsonlw/kafka_writer.hpp>
#include <jsonlw/perf_metrics_clock.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/tee_sink.hpp>

#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "files.hpp"
#include "io_runner.hpp"
#include "log_capture.hpp"
#include "temp_dir.hpp"
#include "wait.hpp"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace std::chrono_literals;
using jsonlw::KafkaJsonWriter;
using jsonlw::KafkaOptions;
using jsonlw::SubmitResult;
using jsonlw::WriterOptions;
using jsonlw_test::close;
using jsonlw_test::flush;
using jsonlw_test::invariant_holds;
using jsonlw_test::IoRunner;
using jsonlw_test::LogCapture;
using jsonlw_test::wait_until;

constexpr std::int16_t produce_api_key = 0;  // Kafka protocol ApiKey of ProduceRequest
constexpr int broker_count = 3;

void quiet_log(const rd_kafka_t*, int, const char*, const char*) {}

rd_kafka_conf_t* quiet_conf()
{
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, &quiet_log);
    return conf;
}

void set(rd_kafka_conf_t* conf, const char* name, const std::string& value)
{
    char err[512];
    if (rd_kafka_conf_set(conf, name, value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
        throw std::runtime_error(err);
}

// A mock cluster of its own per test, owned through a handle that does nothing else.
class MockCluster {
public:
    MockCluster()
    {
        char err[512];
        rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, quiet_conf(), err, sizeof err);
        if (!rk_) throw std::runtime_error(err);
        mc_ = rd_kafka_mock_cluster_new(rk_, broker_count);
        if (!mc_) throw std::runtime_error("rd_kafka_mock_cluster_new failed");
    }
    ~MockCluster()
    {
        rd_kafka_mock_cluster_destroy(mc_);
        rd_kafka_destroy(rk_);
    }
    MockCluster(const MockCluster&) = delete;
    MockCluster& operator=(const MockCluster&) = delete;

    std::string bootstraps() const { return rd_kafka_mock_cluster_bootstraps(mc_); }
    void create_topic(const std::string& topic, int partitions)
    {
        REQUIRE(rd_kafka_mock_topic_create(mc_, topic.c_str(), partitions, 1) ==
                RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    void set_all(bool up)
    {
        for (int id = 1; id <= broker_count; ++id)
            REQUIRE((up ? rd_kafka_mock_broker_set_up(mc_, id)
                        : rd_kafka_mock_broker_set_down(mc_, id)) == RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    // The next `n` ProduceRequests fail with `err`.
    void fail_produce(std::size_t n, rd_kafka_resp_err_t err)
    {
        std::vector<rd_kafka_resp_err_t> errs(n, err);
        rd_kafka_mock_push_request_errors_array(mc_, produce_api_key, errs.size(), errs.data());
    }

private:
    rd_kafka_t* rk_ = nullptr;
    rd_kafka_mock_cluster_t* mc_ = nullptr;
};

struct Message {
    std::optional<std::string> key;
    std::string value;
    int partition = -1;
};

// Everything the topic holds: reads each partition from the beginning to its end.
std::vector<Message> consume_all(const MockCluster& cluster, const std::string& topic,
                                 int partitions)
{
    rd_kafka_conf_t* conf = quiet_conf();
    set(conf, "bootstrap.servers", cluster.bootstraps());
    set(conf, "group.id", "jsonlw-test-" + topic);
    set(conf, "enable.auto.commit", "false");
    set(conf, "enable.partition.eof", "true");
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) throw std::runtime_error(err);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p)
        rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    REQUIRE(rd_kafka_assign(rk, list) == RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(list);

    std::vector<Message> out;
    std::set<int> at_end;
    const bool all_read = wait_until([&] {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
        if (!m) return false;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            at_end.insert(m->partition);
        } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            Message msg;
            if (m->key) msg.key.emplace(static_cast<const char*>(m->key), m->key_len);
            msg.value.assign(static_cast<const char*>(m->payload), m->len);
            msg.partition = m->partition;
            out.push_back(std::move(msg));
        }
        rd_kafka_message_destroy(m);
        return static_cast<int>(at_end.size()) == partitions;
    });
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    REQUIRE(all_read);
    return out;
}

WriterOptions writer_options(const LogCapture& logs, std::size_t batch = 100)
{
    return {.subject = "kafka test", .queue_capacity = 4096, .batch_records = batch,
            .log = logs.sink()};
}

// Fast reconnects, so a broker that comes back is used again within milliseconds.
KafkaOptions kafka_options(const MockCluster& cluster, std::string topic)
{
    return {.brokers = cluster.bootstraps(),
            .topic = std::move(topic),
            .delivery_timeout = 10s,
            .config = {{"reconnect.backoff.ms", "10"}, {"reconnect.backoff.max.ms", "100"},
                       {"retry.backoff.ms", "20"}}};
}

std::string line(const std::string& request_id, int i)
{
    return fmt::format(R"({{ "request_id": "{}", "seq": {}, "text": "token {}" }})", request_id,
                       i, i);
}
std::string minified(const std::string& request_id, int i)
{
    return fmt::format(R"({{"request_id":"{}","seq":{},"text":"token {}"}})", request_id, i, i);
}

}  // namespace

TEST_CASE("Every line is delivered once, keyed by its request_id, and a consumer reads each back",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("requests", 4);
    LogCapture logs;
    IoRunner io;
    constexpr int requests = 30, per_request = 20;
    {
        KafkaJsonWriter writer(io.executor(), writer_options(logs),
                               kafka_options(cluster, "requests"));
        writer.start();
        io.start();
        for (int i = 0; i < per_request; ++i)
            for (int r = 0; r < requests; ++r)
                REQUIRE(writer.submit(line(fmt::format("req-{}", r), i)) == SubmitResult::accepted);
        const auto report = close(writer);
        CHECK(report.drained);
        CHECK(report.stats.written == requests * per_request);
        CHECK(report.stats.dropped.total() == 0);
        CHECK(report.stats.unknown == 0);
        CHECK(invariant_holds(report.stats));
        const auto ps = writer.producer_stats();
        CHECK(ps.produced == requests * per_request);
        CHECK(ps.delivered == requests * per_request);
        CHECK(ps.failed == 0);
        INFO(logs.dump());
    }

    const std::vector<Message> got = consume_all(cluster, "requests", 4);
    REQUIRE(got.size() == requests * per_request);
    std::map<std::string, std::set<int>> partitions_of;
    std::map<std::string, int> next_seq;
    std::set<std::string> values;
    for (const Message& m : got) {
        REQUIRE(m.key);
        partitions_of[*m.key].insert(m.partition);
        // Per key (one partition), records arrive in submission order.
        CHECK(m.value == minified(*m.key, next_seq[*m.key]++));
        values.insert(m.value);
    }
    CHECK(values.size() == requests * per_request);  // no duplicate
    CHECK(partitions_of.size() == requests);
    for (const auto& [key, parts] : partitions_of) CHECK(parts.size() == 1);
}

TEST_CASE("Malformed lines are dropped alone and lines without the key field get a null key",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("mixed", 1);
    LogCapture logs;
    IoRunner io;
    {
        KafkaJsonWriter writer(io.executor(), writer_options(logs),
                               kafka_options(cluster, "mixed"));
        writer.start();
        io.start();
        writer.submit(R"({"request_id":"req-1","a":1})");
        writer.submit(R"({"request_id":42,"a":2})");
        writer.submit(R"({"a":3})");
        writer.submit(R"({"request_id":null,"a":4})");
        writer.submit(R"({"request_id":"req-1", "a":)");  // truncated
        writer.submit(R"([1,2,3])");                       // not an object
        writer.submit("{\"request_id\":\"\xff\"}");        // invalid UTF-8
        const auto report = close(writer);
        CHECK(report.stats.written == 4);
        CHECK(report.stats.dropped.malformed == 3);
        CHECK(report.stats.dropped.total() == 3);
        CHECK(invariant_holds(report.stats));
        CHECK(writer.producer_stats().produced == 4);
        CHECK(logs.count(jsonlw::LogLevel::warning, "Dropped malformed kafka test record") == 1);
    }
    const std::vector<Message> got = consume_all(cluster, "mixed", 1);
    REQUIRE(got.size() == 4);
    CHECK(got[0].key == std::optional<std::string>("req-1"));
    CHECK(got[0].value == R"({"request_id":"req-1","a":1})");
    CHECK(got[1].key == std::optional<std::string>("42"));
    CHECK_FALSE(got[2].key);
    CHECK_FALSE(got[3].key);
    CHECK(got[3].value == R"({"request_id":null,"a":4})");
}

TEST_CASE("KafkaWriterOptions carries RawJsonWriter's validation options; validation runs on "
          "several serializer threads",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("any-value", 1);
    LogCapture logs;
    IoRunner io;
    jsonlw::KafkaWriterOptions o;
    o.subject = "kafka test";
    o.queue_capacity = 4096;
    o.batch_records = 100;
    o.serializer_threads = 2;
    o.log = logs.sink();
    o.kafka = kafka_options(cluster, "any-value");
    o.raw.allow_any_value = true;
    constexpr int n = 300;
    {
        KafkaJsonWriter writer(io.executor(), o);
        CHECK(writer.kafka_options().topic == "any-value");
        for (int i = 0; i < n; ++i)  // queued before start: full batches, split over threads
            REQUIRE(writer.submit(i % 3 == 0 ? fmt::format("[ {}, {} ]", i, i)
                                             : line("any", i)) == SubmitResult::accepted);
        REQUIRE(writer.submit(std::string_view("[1,")) == SubmitResult::accepted);  // truncated
        writer.start();
        io.start();
        const auto report = close(writer);
        INFO(logs.dump());
        CHECK(report.stats.written == n);
        CHECK(report.stats.dropped.malformed == 1);
        CHECK(invariant_holds(report.stats));
    }
    const std::vector<Message> got = consume_all(cluster, "any-value", 1);
    REQUIRE(got.size() == n);
    for (int i = 0; i < n; ++i) {
        if (i % 3 == 0) {
            CHECK(got[i].value == fmt::format("[{},{}]", i, i));
            CHECK_FALSE(got[i].key);
        } else {
            CHECK(got[i].value == minified("any", i));
        }
    }
}

TEST_CASE("A broker that rejects a produce request costs exactly the records it rejected",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("rejected", 1);
    LogCapture logs;
    IoRunner io;
    // Batches of exactly 10 (a batch waits to fill), each one ProduceRequest (librdkafka
    // lingers until the batch's flush).
    auto wo = writer_options(logs, 10);
    wo.flush_interval = 10s;
    auto ko = kafka_options(cluster, "rejected");
    ko.linger = 1000ms;
    KafkaJsonWriter writer(io.executor(), wo, ko);
    writer.start();
    io.start();

    for (int i = 0; i < 20; ++i) writer.submit(line("ok-1", i));
    REQUIRE(wait_until([&] { return writer.stats().written == 20; }));

    // Not retriable: every message of the rejected request fails.
    cluster.fail_produce(1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    for (int i = 0; i < 10; ++i) writer.submit(line("rejected", i));
    REQUIRE(wait_until([&] { return writer.stats().dropped.write_error == 10; }));
    auto s = writer.stats();
    CHECK(s.written == 20);
    CHECK(invariant_holds(s));

    for (int i = 0; i < 5; ++i) writer.submit(line("ok-2", i));
    const auto report = close(writer);
    INFO(logs.dump());
    CHECK(report.stats.written == 25);
    CHECK(report.stats.dropped.write_error == 10);
    CHECK(report.stats.unknown == 0);
    CHECK(report.stats.batches == 3);  // batches with a delivered message
    CHECK(invariant_holds(report.stats));
    const auto ps = writer.producer_stats();
    CHECK(ps.delivered == 25);
    CHECK(ps.failed == 10);
    CHECK(logs.count(jsonlw::LogLevel::warning,
                     "Kafka delivery of 10 kafka test records to topic 'rejected' failed") == 1);
    CHECK(logs.count(jsonlw::LogLevel::warning, "Broker: Message size too large") == 1);
    std::multiset<std::string> keys;
    for (const Message& m : consume_all(cluster, "rejected", 1)) keys.insert(m.key.value_or(""));
    CHECK(keys.size() == 25);
    CHECK(keys.count("rejected") == 0);
}

TEST_CASE("With every broker down, deliveries time out as write_error and resume when the "
          "brokers return",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("outage", 2);
    LogCapture logs;
    IoRunner io;
    auto ko = kafka_options(cluster, "outage");
    ko.delivery_timeout = 1000ms;
    KafkaJsonWriter writer(io.executor(), writer_options(logs), ko);
    writer.start();
    io.start();

    for (int i = 0; i < 10; ++i) writer.submit(line("before", i));
    flush(writer);
    CHECK(writer.stats().written == 10);

    cluster.set_all(false);
    for (int i = 0; i < 10; ++i) writer.submit(line("during", i));
    flush(writer);
    auto s = writer.stats();
    CHECK(s.written == 10);
    CHECK(s.dropped.write_error == 10);
    CHECK(s.unknown == 0);
    CHECK(invariant_holds(s));

    cluster.set_all(true);
    for (int i = 0; i < 10; ++i) writer.submit(line("after", i));
    const auto report = close(writer);
    INFO(logs.dump());
    CHECK(report.drained);
    CHECK(report.stats.written == 20);
    CHECK(report.stats.dropped.write_error == 10);
    CHECK(report.stats.unknown == 0);
    CHECK(invariant_holds(report.stats));
    CHECK(logs.count(jsonlw::LogLevel::warning, "Message timed out") >= 1);
    // Exactly the acknowledged records are in the topic.
    std::multiset<std::string> keys;
    for (const Message& m : consume_all(cluster, "outage", 2)) keys.insert(m.key.value_or(""));
    CHECK(keys.size() == 20);
    CHECK(keys.count("before") == 10);
    CHECK(keys.count("after") == 10);
}

TEST_CASE("Brokers down for less than the delivery timeout cost no record: librdkafka retries",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("blip", 2);
    LogCapture logs;
    IoRunner io;
    KafkaJsonWriter writer(io.executor(), writer_options(logs),
                           kafka_options(cluster, "blip"));
    writer.start();
    io.start();
    for (int i = 0; i < 10; ++i) writer.submit(line("warm", i));
    flush(writer);

    cluster.set_all(false);
    for (int i = 0; i < 20; ++i) writer.submit(line("blip", i));
    // Every record of the batch is with librdkafka (and unacknowledged) before the brokers
    // come back.
    REQUIRE(wait_until([&] { return writer.producer_stats().produced == 30; }));
    CHECK(writer.stats().written == 10);
    cluster.set_all(true);
    const auto report = close(writer);
    INFO(logs.dump());
    CHECK(report.drained);
    CHECK(report.stats.written == 30);
    CHECK(report.stats.dropped.total() == 0);
    CHECK(invariant_holds(report.stats));
    CHECK(consume_all(cluster, "blip", 2).size() == 30);
}

TEST_CASE("A full librdkafka queue is waited on while deliveries free room", "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("small-queue", 1);
    LogCapture logs;
    IoRunner io;
    auto ko = kafka_options(cluster, "small-queue");
    ko.max_queued_messages = 5;
    KafkaJsonWriter writer(io.executor(), writer_options(logs, 50), ko);
    for (int i = 0; i < 50; ++i) writer.submit(line("q", i));  // one batch of 50
    writer.start();
    io.start();
    const auto report = close(writer);
    INFO(logs.dump());
    CHECK(report.stats.written == 50);
    CHECK(invariant_holds(report.stats));
    CHECK(writer.producer_stats().queue_full_waits > 0);
    CHECK(consume_all(cluster, "small-queue", 1).size() == 50);
}

TEST_CASE("With the brokers down librdkafka holds at most max_queued_messages; the rest of the "
          "batch is write_error after queue_full_wait",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("bounded", 1);
    cluster.set_all(false);
    LogCapture logs;
    IoRunner io;
    auto ko = kafka_options(cluster, "bounded");
    ko.max_queued_messages = 5;
    ko.queue_full_wait = 200ms;
    ko.delivery_timeout = 500ms;
    KafkaJsonWriter writer(io.executor(), writer_options(logs, 50), ko);
    for (int i = 0; i < 20; ++i) writer.submit(line("q", i));  // one batch of 20
    writer.start();
    io.start();
    const auto report = close(writer);
    INFO(logs.dump());
    CHECK(report.drained);
    CHECK(report.stats.written == 0);
    CHECK(report.stats.dropped.write_error == 20);  // 15 never queued, 5 timed out
    CHECK(report.stats.unknown == 0);
    CHECK(invariant_holds(report.stats));
    const auto ps = writer.producer_stats();
    CHECK(ps.produced == 5);
    CHECK(ps.failed == 20);
    CHECK(ps.queue_full_waits == 1);
}

TEST_CASE("A close that runs out of time counts the batch awaiting delivery as unknown, and the "
          "destructor does not wait for the brokers",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("stuck", 1);
    cluster.set_all(false);
    LogCapture logs;
    IoRunner io;
    auto wo = writer_options(logs);
    wo.shutdown_timeout = 300ms;
    {
        KafkaJsonWriter writer(io.executor(), wo, kafka_options(cluster, "stuck"));
        writer.start();
        io.start();
        for (int i = 0; i < 10; ++i) writer.submit(line("stuck", i));
        REQUIRE(wait_until([&] { return writer.producer_stats().produced == 10; }));
        const auto report = close(writer);
        CHECK_FALSE(report.drained);
        CHECK(report.stats.written == 0);
        CHECK(report.stats.unknown == 10);
        CHECK(invariant_holds(report.stats));
    }  // the destructor: stops the wait (delivery_timeout is 10 s), purges, returns
    CHECK(logs.count(jsonlw::LogLevel::warning, "Timed out flushing kafka test JSONL") == 1);
}

TEST_CASE("Without brokers the writer is inert; a property librdkafka rejects disables it with "
          "one error",
          "[kafka][unit]")
{
    LogCapture logs;
    IoRunner io;
    {
        KafkaJsonWriter writer(io.executor(), writer_options(logs), KafkaOptions{.topic = "t"});
        writer.start();
        CHECK_FALSE(writer.enabled());
        CHECK(writer.submit("{}") == SubmitResult::disabled);
        CHECK(writer.stats() == jsonlw::WriterStats{});
        CHECK(logs.size() == 0);
    }
    {
        KafkaJsonWriter writer(
            io.executor(), writer_options(logs),
            KafkaOptions{.brokers = "127.0.0.1:9", .topic = "t", .config = {{"no.such.property", "1"}}});
        writer.start();
        CHECK_FALSE(writer.enabled());
        CHECK(writer.submit("{}") == SubmitResult::disabled);
        CHECK(logs.count(jsonlw::LogLevel::error, "Disabling kafka test Kafka output") == 1);
        CHECK(logs.count_any("no.such.property") == 1);
    }
    {
        KafkaJsonWriter writer(io.executor(), writer_options(logs),
                               KafkaOptions{.brokers = "127.0.0.1:9"});
        CHECK_FALSE(writer.enabled());
        CHECK(logs.count(jsonlw::LogLevel::error, "no topic") == 1);
    }
}

TEST_CASE("Any writer goes to Kafka: a PerfMetricsWriter teed to its file and a KafkaSink "
          "sends every line of the file as one message keyed by its request_id",
          "[kafka][integration]")
{
    MockCluster cluster;
    cluster.create_topic("perf", 2);
    LogCapture logs;
    jsonlw_test::TempDir dir;
    IoRunner io;
    auto file = std::make_shared<jsonlw::FileSink>();
    auto kafka = std::make_shared<jsonlw::KafkaSink>(kafka_options(cluster, "perf"));
    auto tee = std::make_shared<jsonlw::TeeSink>(
        std::vector<std::shared_ptr<jsonlw::LineSink>>{file, kafka});
    jsonlw::PerfMetricsOptions po;
    po.log = logs.sink();
    po.sink = tee;
    jsonlw::PerfMetricsWriter w(io.executor(), dir.path(), "server", po);
    w.start();
    io.start();
    for (int i = 0; i < 50; ++i)
        REQUIRE(w.submit(jsonlw::worker_record(std::to_string(1000 + i), {})) ==
                SubmitResult::accepted);
    const auto report = close(w);
    INFO(logs.dump());
    CHECK(report.stats.written == 50);
    CHECK(invariant_holds(report.stats));
    const auto k = tee->branch(1);
    CHECK(k.written == 50);
    CHECK(k.failed == 0);
    CHECK(k.unknown == 0);
    CHECK(kafka->stats().delivered == 50);

    REQUIRE(file->files().size() == 1);
    std::vector<std::string> lines = jsonlw_test::read_lines(file->files().front());
    REQUIRE(lines.size() == 50);
    CHECK(k.bytes == jsonlw_test::read_file(file->files().front()).size());
    std::vector<std::string> values;
    for (const Message& m : consume_all(cluster, "perf", 2)) {
        values.push_back(m.value);
        // The key is the line's request_id.
        REQUIRE(m.key.has_value());
        CHECK(m.value.starts_with("{\"request_id\":" + *m.key + ","));
    }
    std::sort(lines.begin(), lines.end());
    std::sort(values.begin(), values.end());
    CHECK(values == lines);
}
