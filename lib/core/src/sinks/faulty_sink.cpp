// FaultySink (see jsonlw/sinks/faulty_sink.hpp): armed faults, consumed one call at a time.
#include <jsonlw/sinks/faulty_sink.hpp>

#include <algorithm>

namespace jsonlw {

FaultySink::FaultySink(std::shared_ptr<LineSink> inner) : SinkDecorator(std::move(inner)) {}

void FaultySink::fail_appends(std::error_code ec, std::size_t times, std::size_t landed)
{
    std::lock_guard lk(mu_);
    append_ec_ = ec ? ec : std::make_error_code(std::errc::io_error);
    appends_left_ = times;
    landed_ = landed;
}

void FaultySink::fail_syncs(std::error_code ec, std::size_t times)
{
    std::lock_guard lk(mu_);
    sync_ec_ = ec ? ec : std::make_error_code(std::errc::io_error);
    syncs_left_ = times;
}

FaultySink::Counts FaultySink::counts() const
{
    std::lock_guard lk(mu_);
    return counts_;
}

AppendResult FaultySink::append(std::string_view key, const Lines& lines) noexcept
{
    std::error_code ec;
    std::size_t landed = 0;
    {
        std::lock_guard lk(mu_);
        ++counts_.appends;
        if (appends_left_ > 0 && lines.records > 0) {
            --appends_left_;
            ++counts_.appends_failed;
            ec = append_ec_;
            landed = landed_;
        }
    }
    if (!ec) return inner_->append(key, lines);

    // The lines that still go on: the first `landed` (all of one OTLP line, or none).
    Lines head{};
    if (landed > 0 && lines.log_records) {
        head = lines;
    } else if (landed > 0) {
        std::size_t take = 0, n = 0;
        while (n < landed && n < lines.records && take < lines.bytes.size()) {
            const std::size_t nl = lines.bytes.find('\n', take);
            take = nl == std::string_view::npos ? lines.bytes.size() : nl + 1;
            ++n;
        }
        head = Lines{lines.bytes.substr(0, take), n, std::min(lines.sanitized, n)};
    }
    AppendResult r;
    if (head.records > 0) r = inner_->append(key, head);
    // What the wrapped sink got counts as it says; the rest of the group failed here.
    const std::uint64_t kept = lines.records - head.records;
    r.records_failed += kept;
    if (!r.ec) r.ec = ec;
    {
        std::lock_guard lk(mu_);
        counts_.records_failed += kept;
    }
    return r;
}

std::error_code FaultySink::sync() noexcept
{
    {
        std::lock_guard lk(mu_);
        ++counts_.syncs;
        if (syncs_left_ > 0) {
            --syncs_left_;
            ++counts_.syncs_failed;
            return sync_ec_;
        }
    }
    return inner_->sync();
}

}  // namespace jsonlw
