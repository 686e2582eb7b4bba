// The writer's sinks on the I/O thread: every group of lines goes to a LineSink, and what
// the sink reports (records written, failed, unknown) is counted here; reopen, tick and the
// final close reach the sinks from here too.
#include "writer_core_impl.hpp"

namespace jsonlw::detail {

AppendResult WriterCore::Impl::write_to(LineSink& to, std::string_view key,
                                        const Lines& lines) noexcept
{
    if (lines.records == 0 && lines.bytes.empty()) return {};
    AppendResult r = to.append(key, lines);
    // A sink's count that does not add up is clamped: a record is counted once.
    r.records_written = std::min<std::uint64_t>(r.records_written, lines.records);
    r.records_failed = std::min<std::uint64_t>(r.records_failed, lines.records - r.records_written);
    r.records_unknown = lines.records - r.records_written - r.records_failed;
    accounting.count_append(lines, r);
    if (r.records_written > 0 && self.opts_.durability == Durability::fsync_interval &&
        !unsynced) {
        unsynced = true;
        if (last_sync == clock::time_point{}) last_sync = clock::now();
    }
    if (r.records_written < lines.records) accounting.on_write_failure(r.ec, to, key);
    return r;
}

void WriterCore::Impl::reopen_io() noexcept
{
    reopen_ec = {};
    if (!reopen_requested.exchange(false, std::memory_order_acq_rel)) return;
    if (sink) reopen_ec = sink->reopen();
}

void WriterCore::Impl::close_sinks(bool durable) noexcept
{
    if (!sinks_started) return;
    sinks_started = false;
    if (sink) sink->close(durable);
    paths.close(durable);
}

std::optional<clock::time_point> WriterCore::Impl::sink_tick() const noexcept
{
    return sink && sinks_started ? sink->next_tick() : std::nullopt;
}

}  // namespace jsonlw::detail
