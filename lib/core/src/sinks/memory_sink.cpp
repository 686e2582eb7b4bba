// MemorySink: lines in a vector under a mutex, with armed faults.
#include <jsonlw/sinks/memory_sink.hpp>

#include <algorithm>

namespace jsonlw {

AppendResult MemorySink::append(std::string_view key, const Lines& lines) noexcept
{
    AppendResult r;
    r.attempted = true;
    try {
        std::lock_guard lk(mu_);
        ++appends_;
        std::uint64_t keep = lines.records;
        const bool fail = fail_left_ > 0;
        if (fail) {
            --fail_left_;
            keep = std::min<std::uint64_t>(fail_landed_, lines.records);
            // One OTLP line holds every record of the group (lines.hpp): all land or none.
            if (lines.log_records && keep < lines.records) keep = 0;
        }
        std::string_view rest = lines.bytes;
        for (std::uint64_t i = 0; i < keep && !rest.empty(); ++i) {
            const std::size_t nl = std::min(rest.find('\n'), rest.size());
            lines_.push_back({std::string(key), std::string(rest.substr(0, nl))});
            r.landed += std::min(nl + 1, rest.size());
            rest.remove_prefix(std::min(nl + 1, rest.size()));
        }
        r.records_written = keep;
        if (fail) {
            r.ec = fail_ec_;
            r.records_unknown =
                fail_torn_ && keep < lines.records ? (lines.log_records ? lines.records : 1) : 0;
            r.records_failed = lines.records - keep - r.records_unknown;
        }
    } catch (...) {
        r = AppendResult{};
        r.ec = std::make_error_code(std::errc::not_enough_memory);
        r.records_failed = lines.records;
    }
    return r;
}

std::error_code MemorySink::sync() noexcept
{
    std::lock_guard lk(mu_);
    ++syncs_;
    return {};
}

std::error_code MemorySink::reopen() noexcept
{
    std::lock_guard lk(mu_);
    ++reopens_;
    return {};
}

void MemorySink::close(bool) noexcept
{
    std::lock_guard lk(mu_);
    closed_ = true;
}

void MemorySink::fail_next(std::error_code ec, std::size_t appends, std::uint64_t landed, bool torn)
{
    std::lock_guard lk(mu_);
    fail_ec_ = ec;
    fail_left_ = appends;
    fail_landed_ = landed;
    fail_torn_ = torn;
}

std::vector<MemorySink::Line> MemorySink::lines() const
{
    std::lock_guard lk(mu_);
    return lines_;
}

std::string MemorySink::text() const
{
    std::lock_guard lk(mu_);
    std::string out;
    for (const Line& l : lines_) out.append(l.text).push_back('\n');
    return out;
}

std::size_t MemorySink::appends() const
{
    std::lock_guard lk(mu_);
    return appends_;
}
std::size_t MemorySink::syncs() const
{
    std::lock_guard lk(mu_);
    return syncs_;
}
std::size_t MemorySink::reopens() const
{
    std::lock_guard lk(mu_);
    return reopens_;
}
bool MemorySink::closed() const
{
    std::lock_guard lk(mu_);
    return closed_;
}

}  // namespace jsonlw
