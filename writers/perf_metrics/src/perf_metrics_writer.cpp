#include <jsonlw/perf_metrics_writer.hpp>

#include <memory>
#include <stdexcept>
#include <utility>

namespace jsonlw {
namespace {

const std::string& checked_kind(const std::string& kind)
{
    const bool ok = !kind.empty() &&
                    kind.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789._-") == std::string::npos;
    if (!ok)
        throw std::invalid_argument("PerfMetricsWriter: kind must be non-empty [A-Za-z0-9._-], got '" +
                                    kind + "'");
    return kind;
}

// Rough line sizes (bytes), so a batch of records with long step lists stays near batch_bytes.
constexpr std::size_t phase_bytes = 512;
constexpr std::size_t step_bytes = 256;

std::size_t phase_size(const std::optional<PhaseRecord>& p) noexcept
{
    if (!p) return 0;
    std::size_t n = phase_bytes;
    if (const auto& tb = p->time_breakdown_metrics)
        n += step_bytes * (tb->step_metrics.size() + tb->ctx_chunk_metrics.size());
    return n;
}

}  // namespace

WriterOptions PerfMetricsWriter::writer_options(std::filesystem::path directory,
                                                const std::string& kind, PerfMetricsOptions extra)
{
    WriterOptions o = std::move(extra);
    o.directory = std::move(directory);
    o.stem = "perf_metrics-" + checked_kind(kind);
    o.subject = subject;
    o.queue_capacity = queue_capacity;
    o.batch_records = batch_records;
    o.shutdown_timeout = shutdown_timeout;
    // The OTLP form (docs/otlp.md): the record's time is its completion (steady seconds).
    using K = OtlpTimeField::Kind;
    o.otlp = OtlpOptions::merged(
        std::move(o.otlp),
        {.event_name = "jsonlw.perf_metrics",
         .time_fields = {{"/perf_metrics/timing_metrics/last_token_time", K::steady_seconds},
                         {"/perf_metrics/timing_metrics/arrival_time", K::steady_seconds},
                         {"/gen_perf_metrics/perf_metrics/timing_metrics/last_token_time",
                          K::steady_seconds},
                         {"/disagg_server_arrival_time", K::steady_seconds}}});
    return o;
}

PerfMetricsWriter::PerfMetricsWriter(boost::asio::any_io_executor ex,
                                     std::filesystem::path directory, std::string kind,
                                     PerfMetricsOptions extra)
    : JsonlRecordWriter<PerfMetricsRecord>(
          std::move(ex), writer_options(std::move(directory), kind, std::move(extra)),
          std::make_shared<PerfMetricsEncoder>()),
      kind_(std::move(kind))
{
}

void PerfMetricsEncoder::serialize(const PerfMetricsRecord& rec, JsonLine& line)
{
    serialize_perf_metrics(rec, line);
}

std::size_t PerfMetricsEncoder::record_bytes(const PerfMetricsRecord& rec) const noexcept
{
    return phase_size(rec.server) + phase_size(rec.ctx) + phase_size(rec.gen) +
           (rec.disagg ? phase_bytes : 0);
}

}  // namespace jsonlw
