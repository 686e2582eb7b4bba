// jsonlw demo --kafka: the demo's lines shipped through a KafkaSink, teed with each writer's
// files, to librdkafka's in-process mock cluster, read back by a consumer and compared with
// the files.
#include "demo_kafka.hpp"

#include <jsonlw/writer_stats.hpp>

#if JSONLW_HAVE_KAFKA
#include <jsonlw/kafka_sink.hpp>
#include <jsonlw/sinks/tee_sink.hpp>

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace jsonlw::tools {

using Clock = std::chrono::steady_clock;

#if JSONLW_HAVE_KAFKA
namespace {
// --- --kafka: the same lines, shipped ----------------------------------------------------

void quiet_kafka_log(const rd_kafka_t*, int, const char*, const char*) {}

// A librdkafka configuration that logs nothing (the mock cluster's handle and the consumer:
// their chatter would drown the demo's report; the producers log through their writers).
rd_kafka_conf_t* quiet_kafka_conf(std::initializer_list<std::pair<const char*, std::string>> props)
{
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, &quiet_kafka_log);
    char err[512];
    for (const auto& [name, value] : props)
        if (rd_kafka_conf_set(conf, name, value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(conf);
            throw std::runtime_error(fmt::format("kafka: {}: {}", name, err));
        }
    return conf;
}

rd_kafka_t* new_kafka_handle(rd_kafka_type_t type, rd_kafka_conf_t* conf)
{
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk) {
        rd_kafka_conf_destroy(conf);  // owned by the handle only when one was made
        throw std::runtime_error(fmt::format("kafka: {}", err));
    }
    return rk;
}

// An in-process Kafka cluster (librdkafka's mock brokers on localhost ports): the demo's
// producers and its consumer talk to it over TCP like to real brokers.
class MockKafkaCluster {
public:
    static constexpr int brokers = 3;

    MockKafkaCluster() : rk_(new_kafka_handle(RD_KAFKA_PRODUCER, quiet_kafka_conf({})))
    {
        mc_ = rd_kafka_mock_cluster_new(rk_, brokers);
        if (!mc_) {
            rd_kafka_destroy(rk_);
            throw std::runtime_error("kafka: rd_kafka_mock_cluster_new failed");
        }
    }
    ~MockKafkaCluster()
    {
        rd_kafka_mock_cluster_destroy(mc_);
        rd_kafka_destroy(rk_);
    }
    MockKafkaCluster(const MockKafkaCluster&) = delete;
    MockKafkaCluster& operator=(const MockKafkaCluster&) = delete;

    std::string bootstraps() const { return rd_kafka_mock_cluster_bootstraps(mc_); }
    void create_topic(const std::string& topic, int partitions)
    {
        if (const auto err = rd_kafka_mock_topic_create(mc_, topic.c_str(), partitions, 1))
            throw std::runtime_error(
                fmt::format("kafka: cannot create topic {}: {}", topic, rd_kafka_err2str(err)));
    }

private:
    rd_kafka_t* rk_;
    rd_kafka_mock_cluster_t* mc_ = nullptr;
};

// Reads every partition of some topics from the beginning, on a thread of its own, while
// they are being written. Why along and not after: the mock brokers keep about 5 MB per
// partition (they emulate retention and drop the oldest message sets past it), so a reader
// that started at the end of a large demo would find the first messages gone.
class TopicReader {
public:
    TopicReader(const std::string& bootstraps, std::vector<std::string> topics, int partitions)
        : topics_(std::move(topics)), partitions_(partitions)
    {
        rk_ = new_kafka_handle(RD_KAFKA_CONSUMER,
                               quiet_kafka_conf({{"bootstrap.servers", bootstraps},
                                                 {"group.id", "jsonlw-demo"},
                                                 {"enable.auto.commit", "false"},
                                                 {"enable.partition.eof", "true"},
                                                 {"fetch.wait.max.ms", "50"}}));
        rd_kafka_topic_partition_list_t* list =
            rd_kafka_topic_partition_list_new(int(topics_.size()) * partitions_);
        for (const auto& t : topics_)
            for (int p = 0; p < partitions_; ++p)
                rd_kafka_topic_partition_list_add(list, t.c_str(), p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        const auto err = rd_kafka_assign(rk_, list);
        rd_kafka_topic_partition_list_destroy(list);
        if (err) {
            rd_kafka_destroy(rk_);
            throw std::runtime_error(fmt::format("kafka: assign: {}", rd_kafka_err2str(err)));
        }
        thread_ = std::thread([this] { run(); });
    }
    ~TopicReader()
    {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        rd_kafka_consumer_close(rk_);
        rd_kafka_destroy(rk_);
    }
    TopicReader(const TopicReader&) = delete;
    TopicReader& operator=(const TopicReader&) = delete;

    // Call once nothing more is produced: reads on up to the partitions' current ends (30 s at
    // most), then returns each topic's messages as hashes of their values (comparing them is
    // enough, and holds no copy of the data). `complete`: every end was reached, and every
    // partition was read from offset 0 (nothing had been dropped before it was read).
    std::map<std::string, std::vector<std::size_t>> finish(bool& complete)
    {
        finish_ = true;
        thread_.join();
        complete = complete_;
        return std::move(values_);
    }

private:
    struct Position {
        std::int64_t first = -1;  // the first offset read
        std::int64_t next = 0;    // the offset after the last one read, or the end seen
    };

    void run()
    {
        std::map<std::pair<std::string, int>, std::int64_t> ends;  // once finishing
        std::optional<Clock::time_point> deadline;
        while (!stop_) {
            if (finish_ && !deadline) {
                deadline = Clock::now() + std::chrono::seconds(30);
                if (!query_ends(ends)) break;
            }
            if (deadline && (caught_up(ends) || Clock::now() > *deadline)) break;
            rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 50);
            if (!m) continue;
            if (m->rkt && (m->err == RD_KAFKA_RESP_ERR_NO_ERROR ||
                           m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)) {
                const std::string topic = rd_kafka_topic_name(m->rkt);
                Position& at = positions_[{topic, m->partition}];
                if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                    if (at.first < 0) at.first = m->offset;
                    at.next = std::max(at.next, m->offset + 1);
                    values_[topic].push_back(std::hash<std::string_view>{}(
                        std::string_view(static_cast<const char*>(m->payload), m->len)));
                } else {
                    at.next = std::max(at.next, m->offset);  // the end it reached
                }
            }
            rd_kafka_message_destroy(m);
        }
        complete_ = deadline && caught_up(ends);
        for (const auto& [where, at] : positions_)
            if (at.first > 0) complete_ = false;  // offsets before it were gone
    }

    // The partitions' high watermarks: what the reader must reach.
    bool query_ends(std::map<std::pair<std::string, int>, std::int64_t>& ends)
    {
        for (const auto& t : topics_)
            for (int p = 0; p < partitions_; ++p) {
                std::int64_t low = 0, high = 0;
                if (rd_kafka_query_watermark_offsets(rk_, t.c_str(), p, &low, &high, 10000))
                    return false;
                ends[{t, p}] = high;
            }
        return true;
    }

    bool caught_up(const std::map<std::pair<std::string, int>, std::int64_t>& ends)
    {
        if (ends.empty()) return false;
        for (const auto& [where, end] : ends)
            if (end > 0 && positions_[where].next < end) return false;
        return true;
    }

    rd_kafka_t* rk_ = nullptr;
    std::vector<std::string> topics_;
    int partitions_;
    std::atomic<bool> stop_{false};    // the destructor: stop now
    std::atomic<bool> finish_{false};  // finish(): read on to the ends, then stop
    // The reader thread's until finish() joins it:
    std::map<std::pair<std::string, int>, Position> positions_;
    std::map<std::string, std::vector<std::size_t>> values_;
    bool complete_ = false;
    std::thread thread_;
};

// --kafka: a KafkaSink per record kind, each producing to its own topic of the mock cluster,
// teed with that kind's file sink; a TopicReader reads every topic back meanwhile, and the
// summary compares what it read with the files.
}  // namespace

class KafkaShip::Impl {
public:
    static constexpr int partitions = 4;

    Impl()
    {
        // Keyed so that one request's records share a partition (traces by their trace_id).
        const char* key_fields[] = {"request_id", "trace_id", "request_id"};
        for (std::size_t i = 0; i < std::size(demo_kinds); ++i) {
            auto t = std::make_unique<Topic>();
            t->kind = demo_kinds[i];
            t->name = std::string("jsonlw.") + demo_kinds[i];
            cluster_.create_topic(t->name, partitions);
            t->kafka = std::make_shared<KafkaSink>(
                KafkaOptions{.brokers = cluster_.bootstraps(), .topic = t->name,
                             .key_field = key_fields[i],
                             .delivery_timeout = std::chrono::seconds(10)});
            topics_.push_back(std::move(t));
        }
    }

    std::shared_ptr<LineSink> sink(std::string_view kind, std::shared_ptr<LineSink> files)
    {
        for (const auto& t : topics_)
            if (t->kind == kind) {
                t->tee = std::make_shared<TeeSink>(
                    std::vector<std::shared_ptr<LineSink>>{std::move(files), t->kafka});
                return t->tee;
            }
        return files;
    }

    void start()
    {
        std::vector<std::string> names;
        for (const auto& t : topics_) names.push_back(t->name);
        reader_.emplace(cluster_.bootstraps(), std::move(names), partitions);
    }

    // Prints a row per topic; false when a line was lost on the way (or a topic holds
    // something else than the files).
    bool summarize(const std::filesystem::path& out)
    {
        std::printf("\nkafka: %d mock brokers in process (%s), a topic per writer with %d "
                    "partitions, keyed by request, teed with the files:\n",
                    MockKafkaCluster::brokers, cluster_.bootstraps().c_str(), partitions);
        std::printf("%-22s %10s %10s %8s %10s %9s\n", "topic", "sent", "delivered", "failed",
                    "consumed", "as files");
        bool read_all = false;
        auto consumed = reader_ ? reader_->finish(read_all)
                                : std::map<std::string, std::vector<std::size_t>>{};
        if (!read_all)
            std::printf("  (the consumer did not read every partition from start to end)\n");
        bool ok = read_all;
        for (const auto& t : topics_) ok = summarize(*t, consumed[t->name], out) && ok;
        if (!ok) std::printf("kafka: records were lost between the files and the topics\n");
        return ok;
    }

private:
    struct Topic {
        std::string kind;
        std::string name;
        std::shared_ptr<KafkaSink> kafka;
        std::shared_ptr<TeeSink> tee;  // files first, Kafka second
    };

    bool summarize(const Topic& t, std::vector<std::size_t>& consumed,
                   const std::filesystem::path& out) const
    {
        const TeeSink::BranchCounts k = t.tee ? t.tee->branch(1) : TeeSink::BranchCounts{};
        const std::uint64_t failed = k.failed + k.unknown;
        const std::uint64_t sent = k.written + failed;
        std::vector<std::size_t> files = file_lines(out / t.kind);
        // The same lines, as a multiset (the topic's order is per partition).
        std::sort(consumed.begin(), consumed.end());
        std::sort(files.begin(), files.end());
        const bool same = consumed == files;
        std::printf("%-22s %10llu %10llu %8llu %10zu %9s\n", t.name.c_str(),
                    (unsigned long long)sent, (unsigned long long)k.written,
                    (unsigned long long)failed, consumed.size(), same ? "yes" : "NO");
        if (failed)
            std::printf("  failed: write_error %llu, unknown %llu\n",
                        (unsigned long long)k.failed, (unsigned long long)k.unknown);
        return failed == 0 && same && k.written == consumed.size() && sent == files.size();
    }

    // The non-empty lines of the JSON Lines files under `dir`, hashed as consume() does.
    static std::vector<std::size_t> file_lines(const std::filesystem::path& dir)
    {
        std::vector<std::size_t> lines;
        std::error_code ec;
        for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
            if (!e.is_regular_file() ||
                e.path().filename().string().find(".jsonl") == std::string::npos)
                continue;
            std::ifstream in(e.path(), std::ios::binary);
            const std::string text{std::istreambuf_iterator<char>(in), {}};
            std::size_t from = 0;
            for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
                if (nl > from)
                    lines.push_back(std::hash<std::string_view>{}(
                        std::string_view(text).substr(from, nl - from)));
        }
        return lines;
    }

    MockKafkaCluster cluster_;  // outlives the producers and the reader (declared first)
    std::vector<std::unique_ptr<Topic>> topics_;
    std::optional<TopicReader> reader_;  // from start()
};

KafkaShip::KafkaShip() : impl_(std::make_unique<Impl>()) {}
std::shared_ptr<LineSink> KafkaShip::sink(std::string_view kind, std::shared_ptr<LineSink> files)
{
    return impl_->sink(kind, std::move(files));
}
void KafkaShip::start() { impl_->start(); }
bool KafkaShip::summarize(const std::filesystem::path& out) { return impl_->summarize(out); }
#else
// Without librdkafka demo_main() refuses --kafka before a KafkaShip exists.
class KafkaShip::Impl {};
KafkaShip::KafkaShip() {}
std::shared_ptr<LineSink> KafkaShip::sink(std::string_view, std::shared_ptr<LineSink> files)
{
    return files;
}
void KafkaShip::start() {}
bool KafkaShip::summarize(const std::filesystem::path&) { return true; }
#endif
KafkaShip::~KafkaShip() = default;

}  // namespace jsonlw::tools
