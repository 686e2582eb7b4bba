#include <jsonlw/kafka_writer.hpp>

#include <jsonlw/path_component.hpp>

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <cerrno>
#include <string_view>

namespace jsonlw {
namespace {

using clock = std::chrono::steady_clock;


// First occurrence, then every 1000th: the project's rule for repeated log lines.
bool log_worthy(std::uint64_t n) noexcept { return n == 1 || n % 1000 == 0; }


}  // namespace

struct KafkaJsonWriter::Producer {
    enum : std::uint8_t { waiting, delivered, failed, not_produced };

    rd_kafka_t* rk = nullptr;
    rd_kafka_topic_t* rkt = nullptr;
    LogSink log_sink;
    std::string subject;
    std::atomic<bool> stopping{false};

    // serialize(): validation, minification and the key of the last record (I/O thread).
    simdjson::dom::parser parser;
    std::vector<char> minified;
    std::string key;
    bool has_key = false;

    // The running batch (I/O thread; delivery reports are served on it, inside flush/poll).
    std::uint64_t next_seq = 0;
    std::uint64_t batch_base = 0;
    std::vector<std::uint8_t> status;   // per produced line of the batch
    std::string lines;                  // the batch's lines, each ending with '\n'
    std::vector<std::size_t> ends;      // end offset of each line in `lines`
    std::size_t outstanding = 0;
    rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;

    std::atomic<std::uint64_t> produced{0}, delivered_n{0}, failed_n{0}, late{0}, full_waits{0};
    std::atomic<std::uint64_t> librdkafka_logs{0};
    std::uint64_t failed_batches = 0;

    ~Producer()
    {
        if (!rk) return;
        // Nothing waits for these reports any more: they are served and ignored.
        batch_base = next_seq;
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(rk, 0);
        if (rkt) rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
    }

    void log(LogLevel level, std::string_view text) const noexcept
    {
        try {
            if (log_sink) log_sink(level, text);
            else log_to_stderr(level, text);
        } catch (...) {
        }
    }

    static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque)
    {
        auto& p = *static_cast<Producer*>(opaque);
        const auto seq = reinterpret_cast<std::uintptr_t>(m->_private);
        const bool ok = m->err == RD_KAFKA_RESP_ERR_NO_ERROR;
        if (seq < p.batch_base || seq - p.batch_base >= p.status.size() ||
            p.status[seq - p.batch_base] != waiting) {
            p.late.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        p.status[seq - p.batch_base] = ok ? delivered : failed;
        --p.outstanding;
        if (ok) {
            p.delivered_n.fetch_add(1, std::memory_order_relaxed);
        } else {
            p.failed_n.fetch_add(1, std::memory_order_relaxed);
            if (p.first_error == RD_KAFKA_RESP_ERR_NO_ERROR) p.first_error = m->err;
        }
    }

    // librdkafka's own log lines and errors, from its threads (log) or the I/O thread
    // (errors, served by poll): rate-limited together.
    static void on_log(const rd_kafka_t* rk, int level, const char* fac, const char* buf)
    {
        auto& p = *static_cast<Producer*>(rd_kafka_opaque(rk));
        if (level > 4 || !log_worthy(p.librdkafka_logs.fetch_add(1) + 1)) return;
        p.log(level <= 3 ? LogLevel::error : LogLevel::warning,
              fmt::format("librdkafka ({} writer): {}: {}", p.subject, fac, buf));
    }
    static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque)
    {
        auto& p = *static_cast<Producer*>(opaque);
        const bool fatal = err == RD_KAFKA_RESP_ERR__FATAL;
        if (!fatal && !log_worthy(p.librdkafka_logs.fetch_add(1) + 1)) return;
        std::string text = reason;
        if (fatal) {
            char buf[512];
            rd_kafka_fatal_error(rk, buf, sizeof buf);
            text = fmt::format("fatal error, every later record fails: {}", buf);
        }
        p.log(fatal ? LogLevel::error : LogLevel::warning,
              fmt::format("Kafka producer of {} records: {}", p.subject, text));
    }

    rd_kafka_resp_err_t produce(std::string_view line, std::uint64_t seq)
    {
        return rd_kafka_producev(
            rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_VALUE(const_cast<char*>(line.data()), line.size()),
            RD_KAFKA_V_KEY(has_key ? key.data() : nullptr, has_key ? key.size() : 0),
            RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<std::uintptr_t>(seq))),
            RD_KAFKA_V_END);
    }
};

struct KafkaJsonWriter::Prepared {
    WriterOptions opts;
    std::unique_ptr<Producer> producer;
};

KafkaJsonWriter::Prepared KafkaJsonWriter::prepare(WriterOptions opts, const KafkaOptions& kafka)
{
    Prepared out;
    opts.directory.clear();  // inert unless the producer is made below
    opts.file_io.reset();
    if (kafka.brokers.empty()) {
        out.opts = std::move(opts);
        return out;
    }
    auto p = std::make_unique<Producer>();
    p->log_sink = opts.log;
    p->subject = opts.subject;
    const auto fail = [&](std::string_view why) {
        p->log(LogLevel::error,
               fmt::format("Disabling {} Kafka output (topic '{}'): {}", opts.subject,
                           kafka.topic, why));
        out.opts = std::move(opts);
        return std::move(out);
    };
    if (kafka.topic.empty()) return fail("no topic");

    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    const auto set = [&](const std::string& name, const std::string& value) {
        if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) ==
            RD_KAFKA_CONF_OK)
            return true;
        rd_kafka_conf_destroy(conf);
        return false;
    };
    const std::pair<std::string, std::string> props[] = {
        {"bootstrap.servers", kafka.brokers},
        {"message.timeout.ms", std::to_string(std::max<std::int64_t>(kafka.delivery_timeout.count(), 1))},
        {"queue.buffering.max.messages", std::to_string(std::max<std::size_t>(kafka.max_queued_messages, 1))},
        {"queue.buffering.max.kbytes", std::to_string(std::max<std::size_t>(kafka.max_queued_kbytes, 1))},
        {"linger.ms", std::to_string(kafka.linger.count())},
        {"enable.idempotence", kafka.idempotent ? "true" : "false"},
    };
    for (const auto& [name, value] : props)
        if (!set(name, value)) return fail(err);
    for (const auto& [name, value] : kafka.config)
        if (!set(name, value)) return fail(err);
    rd_kafka_conf_set_opaque(conf, p.get());
    rd_kafka_conf_set_dr_msg_cb(conf, &Producer::on_delivery);
    rd_kafka_conf_set_log_cb(conf, &Producer::on_log);
    rd_kafka_conf_set_error_cb(conf, &Producer::on_error);

    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);  // owns conf on success
    if (!p->rk) {
        rd_kafka_conf_destroy(conf);
        return fail(err);
    }
    p->rkt = rd_kafka_topic_new(p->rk, kafka.topic.c_str(), nullptr);
    if (!p->rkt) return fail(rd_kafka_err2str(rd_kafka_last_error()));

    // A writer without a directory is inert: "/" (which exists) enables this one. The base
    // resolves a file_path() under it that nothing ever opens: write_batch settles every
    // batch itself.
    opts.directory = "/";
    out.opts = std::move(opts);
    out.producer = std::move(p);
    return out;
}

KafkaJsonWriter::KafkaJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                                 KafkaOptions kafka)
    : KafkaJsonWriter(std::move(ex), prepare(std::move(opts), kafka), std::move(kafka))
{
}

// `kafka` by reference: prepare() reads it before it is moved from, whatever the order in
// which the arguments above are evaluated.
KafkaJsonWriter::KafkaJsonWriter(boost::asio::any_io_executor ex, Prepared prepared,
                                 KafkaOptions&& kafka)
    : JsonlRecordWriter<std::string>(std::move(ex), std::move(prepared.opts)),
      kafka_(std::move(kafka)),
      producer_(std::move(prepared.producer))
{
}

KafkaJsonWriter::~KafkaJsonWriter()
{
    // A batch waiting for deliveries stops at its next slice (at most 100 ms).
    if (producer_) producer_->stopping.store(true, std::memory_order_release);
    shutdown();
    producer_.reset();
}

KafkaProducerStats KafkaJsonWriter::producer_stats() const noexcept
{
    if (!producer_) return {};
    const Producer& p = *producer_;
    return {p.produced.load(std::memory_order_relaxed), p.delivered_n.load(std::memory_order_relaxed),
            p.failed_n.load(std::memory_order_relaxed), p.late.load(std::memory_order_relaxed),
            p.full_waits.load(std::memory_order_relaxed)};
}

void KafkaJsonWriter::serialize(const std::string& text, JsonLine& line)
{
    Producer& p = *producer_;
    p.has_key = false;
    const bool padded = text.capacity() - text.size() >= simdjson::SIMDJSON_PADDING;
    simdjson::dom::element root;
    if (const auto err = p.parser.parse(text.data(), text.size(), !padded).get(root))
        throw MalformedRecord(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    simdjson::dom::object obj;
    if (root.get(obj) != simdjson::SUCCESS) throw MalformedRecord("not a JSON object");
    if (!kafka_.key_field.empty()) {
        simdjson::dom::element v;
        if (obj.at_key(kafka_.key_field).get(v) == simdjson::SUCCESS) {
            switch (v.type()) {
            case simdjson::dom::element_type::STRING:
                p.key = std::string_view(v);
                p.has_key = true;
                break;
            case simdjson::dom::element_type::INT64:
            case simdjson::dom::element_type::UINT64:
            case simdjson::dom::element_type::DOUBLE:
            case simdjson::dom::element_type::BOOL:
                p.key = simdjson::to_string(v);
                p.has_key = true;
                break;
            default:  // null, an object, an array: no key
                break;
            }
        }
    }
    p.minified.resize(text.size());
    std::size_t len = 0;
    if (const auto err = simdjson::minify(text.data(), text.size(), p.minified.data(), len))
        throw MalformedRecord(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    line.raw({p.minified.data(), len});
}

void KafkaJsonWriter::write_batch(std::span<const std::string> batch)
{
    Producer& p = *producer_;
    p.batch_base = p.next_seq;
    p.status.clear();
    p.lines.clear();
    p.ends.clear();
    p.outstanding = 0;
    p.first_error = RD_KAFKA_RESP_ERR_NO_ERROR;

    // Produce line by line: one serialize_batch() per record keeps its key next to its line
    // (and the malformed accounting shared). librdkafka copies each message.
    std::optional<clock::time_point> full_deadline;
    bool full_given_up = false;
    for (const std::string& rec : batch) {
        const Lines one = serialize_batch(std::span<const std::string>(&rec, 1));
        if (one.records != 1) continue;  // malformed or unexpected: counted by the base
        const std::string_view text = one.bytes.substr(0, one.bytes.size() - 1);
        p.lines.append(one.bytes);
        p.ends.push_back(p.lines.size());
        const std::uint64_t seq = p.next_seq++;
        p.status.push_back(Producer::waiting);
        rd_kafka_resp_err_t err = full_given_up ? RD_KAFKA_RESP_ERR__QUEUE_FULL
                                                : p.produce(text, seq);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && !full_given_up) {
            // Room comes back as deliveries are served; wait for it at most queue_full_wait
            // per batch, then give up on the rest of the batch.
            p.full_waits.fetch_add(1, std::memory_order_relaxed);
            if (!full_deadline) full_deadline = clock::now() + kafka_.queue_full_wait;
            while (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && clock::now() < *full_deadline &&
                   !p.stopping.load(std::memory_order_acquire)) {
                rd_kafka_flush(p.rk, 10);
                err = p.produce(text, seq);
            }
            full_given_up = err == RD_KAFKA_RESP_ERR__QUEUE_FULL;
        }
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            p.produced.fetch_add(1, std::memory_order_relaxed);
            ++p.outstanding;
        } else {
            p.status.back() = Producer::not_produced;
            p.failed_n.fetch_add(1, std::memory_order_relaxed);
            if (p.first_error == RD_KAFKA_RESP_ERR_NO_ERROR) p.first_error = err;
        }
    }

    // Wait for this batch's delivery reports: librdkafka fails a message itself after
    // message.timeout.ms (its timeout scan runs about once a second, hence the margin).
    const auto deadline = clock::now() + kafka_.delivery_timeout + std::chrono::seconds(2);
    while (p.outstanding > 0 && !p.stopping.load(std::memory_order_acquire)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - clock::now());
        if (left.count() <= 0) break;
        rd_kafka_flush(p.rk, static_cast<int>(std::min<std::int64_t>(left.count(), 100)));
    }

    // Count the batch: delivered (and their bytes), failed, no report yet (unknown).
    std::size_t counts[3] = {0, 0, 0};
    std::uint64_t delivered_bytes = 0;
    for (std::size_t i = 0, begin = 0; i < p.status.size(); begin = p.ends[i], ++i) {
        const auto st = p.status[i];
        ++counts[st == Producer::delivered ? 0 : st == Producer::waiting ? 2 : 1];
        if (st == Producer::delivered) delivered_bytes += p.ends[i] - begin;
    }
    // Reports that come after this are late: they find no slot and are only counted.
    p.status.clear();
    p.batch_base = p.next_seq;

    if (counts[1] > 0 || counts[2] > 0) {
        if (log_worthy(++p.failed_batches))
            p.log(LogLevel::warning,
                  fmt::format("Kafka delivery of {} {} records to topic '{}' failed ({} not "
                              "acknowledged in time): {} ({} batches so far)",
                              counts[1] + counts[2], p.subject, kafka_.topic, counts[2],
                              p.first_error ? rd_kafka_err2str(p.first_error)
                                            : "no delivery report",
                              p.failed_batches));
    }
    settle(Lines{p.lines, counts[0] + counts[1] + counts[2], 0}, counts[0], counts[1],
           delivered_bytes);
}

}  // namespace jsonlw
