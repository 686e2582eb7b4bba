// OtlpSink (see jsonlw/sinks/otlp_sink.hpp): encode the group, hand the one line on.
#include <jsonlw/sinks/otlp_sink.hpp>

#include "../otlp/otlp_logs_encoder.hpp"

#include <new>

namespace jsonlw {

OtlpSink::OtlpSink(std::shared_ptr<LineSink> inner, OtlpOptions opts)
    : SinkDecorator(std::move(inner)), opts_(std::move(opts))
{
}

OtlpSink::~OtlpSink() = default;

std::error_code OtlpSink::start(const SinkContext& ctx)
{
    encoder_ = std::make_unique<detail::OtlpLogsEncoder>(opts_, ctx.host, ctx.pid);
    return inner_->start(ctx);
}

AppendResult OtlpSink::append(std::string_view key, const Lines& lines) noexcept
{
    // A line the engine wrote as LogsData already (lines.hpp) goes on as it is.
    if (lines.records == 0 || lines.log_records) return inner_->append(key, lines);
    try {
        buf_.clear();
        encoder_->encode(lines.bytes, buf_);
    } catch (const std::bad_alloc&) {
        AppendResult r;
        r.ec = std::make_error_code(std::errc::not_enough_memory);
        r.records_failed = lines.records;
        return r;
    }
    // One line now holds the group's records: the sink under it counts them all or none.
    return inner_->append(key, Lines{std::string_view(buf_.data(), buf_.size()), lines.records,
                                     lines.sanitized, true});
}

std::uint64_t OtlpSink::malformed_bodies() const noexcept
{
    return encoder_ ? encoder_->malformed_bodies() : 0;
}

}  // namespace jsonlw
