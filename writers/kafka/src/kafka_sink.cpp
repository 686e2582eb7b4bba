// KafkaSink: a group of lines produced as one message each, its delivery reports served on
// the I/O thread until each message has one (or the deadline), then counted.
#include <jsonlw/detail/log_marks.hpp>
#include <jsonlw/kafka_sink.hpp>

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string_view>

namespace jsonlw {
namespace {

using detail::log_worthy;  // the rule for repeated log lines (detail/log_marks.hpp)
using clock = std::chrono::steady_clock;

}  // namespace

struct KafkaSink::Producer {
    enum : std::uint8_t { waiting, delivered, failed, not_produced };

    rd_kafka_t* rk = nullptr;
    rd_kafka_topic_t* rkt = nullptr;
    SinkContext ctx;
    std::atomic<bool> stopping{false};

    // The key of the line being produced (I/O thread).
    simdjson::dom::parser parser;
    std::string key;
    bool has_key = false;

    // The running group (I/O thread; delivery reports are served on it, inside flush/poll).
    std::uint64_t next_seq = 0;
    std::uint64_t batch_base = 0;
    std::vector<std::uint8_t> status;  // per produced line of the group
    std::vector<std::size_t> sizes;    // its bytes, newline included
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
        p.ctx.write_log(level <= 3 ? LogLevel::error : LogLevel::warning,
                        fmt::format("librdkafka ({} writer): {}: {}", p.ctx.subject, fac, buf));
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
        p.ctx.write_log(fatal ? LogLevel::error : LogLevel::warning,
                        fmt::format("Kafka producer of {} records: {}", p.ctx.subject, text));
    }

    // The message key of `line`: its top-level `field`'s value (see kafka_sink.hpp).
    void find_key(std::string_view line, const std::string& field)
    {
        has_key = false;
        if (field.empty()) return;
        simdjson::dom::element root;
        simdjson::dom::object obj;
        simdjson::dom::element v;
        if (parser.parse(line.data(), line.size(), true).get(root) != simdjson::SUCCESS ||
            root.get(obj) != simdjson::SUCCESS ||
            obj.at_key(field).get(v) != simdjson::SUCCESS)
            return;
        switch (v.type()) {
        case simdjson::dom::element_type::STRING:
            key = std::string_view(v);
            has_key = true;
            break;
        case simdjson::dom::element_type::INT64:
        case simdjson::dom::element_type::UINT64:
        case simdjson::dom::element_type::DOUBLE:
        case simdjson::dom::element_type::BOOL:
            key = simdjson::to_string(v);
            has_key = true;
            break;
        default:  // null, an object, an array: no key
            break;
        }
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

KafkaSink::KafkaSink(KafkaOptions kafka) : kafka_(std::move(kafka)) {}

KafkaSink::~KafkaSink() { stop(); }

void KafkaSink::stop() noexcept
{
    if (producer_) producer_->stopping.store(true, std::memory_order_release);
}

std::error_code KafkaSink::start(const SinkContext& ctx)
{
    auto p = std::make_unique<Producer>();
    p->ctx = ctx;
    const auto fail = [&](std::string_view why) {
        ctx.write_log(LogLevel::error,
                      fmt::format("Disabling {} Kafka output (topic '{}'): {}", ctx.subject,
                                  kafka_.topic, why));
        return std::make_error_code(std::errc::invalid_argument);
    };
    if (kafka_.brokers.empty()) return fail("no brokers");
    if (kafka_.topic.empty()) return fail("no topic");

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
        {"bootstrap.servers", kafka_.brokers},
        {"message.timeout.ms", std::to_string(std::max<std::int64_t>(kafka_.delivery_timeout.count(), 1))},
        {"queue.buffering.max.messages", std::to_string(std::max<std::size_t>(kafka_.max_queued_messages, 1))},
        {"queue.buffering.max.kbytes", std::to_string(std::max<std::size_t>(kafka_.max_queued_kbytes, 1))},
        {"linger.ms", std::to_string(kafka_.linger.count())},
        {"enable.idempotence", kafka_.idempotent ? "true" : "false"},
    };
    for (const auto& [name, value] : props)
        if (!set(name, value)) return fail(err);
    for (const auto& [name, value] : kafka_.config)
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
    p->rkt = rd_kafka_topic_new(p->rk, kafka_.topic.c_str(), nullptr);
    if (!p->rkt) return fail(rd_kafka_err2str(rd_kafka_last_error()));
    producer_ = std::move(p);
    return {};
}

AppendResult KafkaSink::append(std::string_view, const Lines& lines) noexcept
{
    AppendResult r;
    if (!producer_) {
        r.ec = std::make_error_code(std::errc::not_connected);
        r.records_failed = lines.records;
        return r;
    }
    Producer& p = *producer_;
    r.attempted = true;
    try {
        p.batch_base = p.next_seq;
        p.status.clear();
        p.sizes.clear();
        p.outstanding = 0;
        p.first_error = RD_KAFKA_RESP_ERR_NO_ERROR;

        // Produce line by line; librdkafka copies each message.
        std::optional<clock::time_point> full_deadline;
        bool full_given_up = false;
        std::string_view rest = lines.bytes;
        while (!rest.empty()) {
            const std::size_t nl = std::min(rest.find('\n'), rest.size() - 1);
            const std::string_view text = rest.substr(0, rest[nl] == '\n' ? nl : nl + 1);
            p.sizes.push_back(nl + 1);
            rest.remove_prefix(nl + 1);
            p.find_key(text, kafka_.key_field);
            const std::uint64_t seq = p.next_seq++;
            p.status.push_back(Producer::waiting);
            rd_kafka_resp_err_t err =
                full_given_up ? RD_KAFKA_RESP_ERR__QUEUE_FULL : p.produce(text, seq);
            if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && !full_given_up) {
                // Room comes back as deliveries are served; wait for it at most
                // queue_full_wait per group, then give up on the rest of the group.
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

        // Wait for this group's delivery reports: librdkafka fails a message itself after
        // message.timeout.ms (its timeout scan runs about once a second, hence the margin).
        const auto deadline = clock::now() + kafka_.delivery_timeout + std::chrono::seconds(2);
        while (p.outstanding > 0 && !p.stopping.load(std::memory_order_acquire)) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
            if (left.count() <= 0) break;
            rd_kafka_flush(p.rk, static_cast<int>(std::min<std::int64_t>(left.count(), 100)));
        }

        std::uint64_t waiting_n = 0;
        for (std::size_t i = 0; i < p.status.size(); ++i) {
            const auto st = p.status[i];
            if (st == Producer::delivered) {
                ++r.records_written;
                r.landed += p.sizes[i];
            } else if (st == Producer::waiting) {
                ++waiting_n;
            } else {
                ++r.records_failed;
            }
        }
        // Reports that come after this are late: they find no slot and are only counted.
        p.status.clear();
        p.batch_base = p.next_seq;
        // Lines and records match one to one for every encoder; a group that says
        // otherwise has its surplus counted unknown by the writer.
        r.records_unknown = waiting_n;
        if (r.records_failed > 0 || waiting_n > 0) {
            r.ec = std::make_error_code(waiting_n > 0 ? std::errc::timed_out : std::errc::io_error);
            if (log_worthy(++p.failed_batches))
                p.ctx.write_log(
                    LogLevel::warning,
                    fmt::format("Kafka delivery of {} {} records to topic '{}' failed ({} not "
                                "acknowledged in time): {} ({} batches so far)",
                                r.records_failed + waiting_n, p.ctx.subject, kafka_.topic,
                                waiting_n,
                                p.first_error ? rd_kafka_err2str(p.first_error)
                                              : "no delivery report",
                                p.failed_batches));
        }
    } catch (...) {
        // Only an allocation can fail: what was not counted yet is unknown.
        r.ec = std::make_error_code(std::errc::not_enough_memory);
        r.records_written = 0;
        r.records_failed = 0;
        r.records_unknown = lines.records;
        r.landed = 0;
    }
    return r;
}

std::string KafkaSink::describe(std::string_view) const
{
    return fmt::format("Kafka topic '{}'", kafka_.topic);
}

KafkaProducerStats KafkaSink::stats() const noexcept
{
    if (!producer_) return {};
    const Producer& p = *producer_;
    return {p.produced.load(std::memory_order_relaxed), p.delivered_n.load(std::memory_order_relaxed),
            p.failed_n.load(std::memory_order_relaxed), p.late.load(std::memory_order_relaxed),
            p.full_waits.load(std::memory_order_relaxed)};
}

}  // namespace jsonlw
