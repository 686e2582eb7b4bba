#include <jsonlw/report/detail/report_join.hpp>

#include <jsonlw/trace_context.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <tuple>

namespace jsonlw::tools {

namespace {

constexpr std::uint8_t perf_bit = 1, raw_bit = 2, trace_bit = 4;
constexpr std::uint8_t all_writers = perf_bit | raw_bit | trace_bit;

std::uint8_t writer_bit(RecordKind kind) noexcept
{
    switch (kind) {
    case RecordKind::perf_worker:
    case RecordKind::perf_disagg: return perf_bit;
    case RecordKind::raw_output: return raw_bit;
    case RecordKind::trace_request:
    case RecordKind::trace_response: return trace_bit;
    case RecordKind::other: break;
    }
    return 0;
}

template <std::size_t N>
std::uint64_t big_endian(const std::array<std::uint8_t, N>& bytes, std::size_t from) noexcept
{
    std::uint64_t v = 0;
    for (std::size_t i = from; i < from + 8; ++i) v = (v << 8) | bytes[i];
    return v;
}

}  // namespace

void TraceparentJoin::add(simdjson::dom::object rec, RecordKind kind)
{
    const std::uint8_t bit = writer_bit(kind);
    if (bit == 0) return;
    simdjson::dom::element e;
    if (rec.at_key("traceparent").get(e) != simdjson::SUCCESS) {
        ++lines_without;
        return;
    }
    std::string_view text;
    std::optional<TraceContext> tc;
    if (e.get(text) == simdjson::SUCCESS) tc = TraceContext::parse_traceparent(text);
    if (!tc) {
        ++invalid;
        return;
    }
    ++lines_with;
    entries_.push_back({big_endian(tc->trace_id, 0), big_endian(tc->trace_id, 8),
                        big_endian(tc->span_id, 0), bit});
}

void TraceparentJoin::merge(TraceparentJoin&& o)
{
    lines_with += o.lines_with;
    lines_without += o.lines_without;
    invalid += o.invalid;
    entries_.insert(entries_.end(), o.entries_.begin(), o.entries_.end());
}

void TraceparentJoin::finish()
{
    const auto key = [](const Entry& x) { return std::tie(x.trace_hi, x.trace_lo, x.span); };
    std::sort(entries_.begin(), entries_.end(),
              [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
    requests = joined = missing_perf = missing_raw = missing_trace = 0;
    for (std::size_t i = 0; i < entries_.size();) {
        std::uint8_t seen = 0;
        std::size_t j = i;
        for (; j < entries_.size() && key(entries_[j]) == key(entries_[i]); ++j)
            seen |= entries_[j].writers;
        i = j;
        ++requests;
        if (seen == all_writers) {
            ++joined;
            continue;
        }
        missing_perf += (seen & perf_bit) ? 0 : 1;
        missing_raw += (seen & raw_bit) ? 0 : 1;
        missing_trace += (seen & trace_bit) ? 0 : 1;
    }
    entries_.clear();
    entries_.shrink_to_fit();
}

}  // namespace jsonlw::tools
