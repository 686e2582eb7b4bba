// The jsonlw rows of the overload scenario: RawJsonWriter under each overflow policy, producers
// at full speed into a small queue; every count read back and checked to be exact.
#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"
#include "writer_harness.hpp"
#include "producers.hpp"

#include <boost/asio/use_future.hpp>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>

namespace bench {

using jsonlw::Overflow;
using jsonlw::SubmitResult;

namespace {

long max_rss_kib()
{
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

void set_problem(OverloadResult& r, const std::string& what)
{
    std::strncpy(r.problem, what.c_str(), sizeof r.problem - 1);
}

Overflow policy_of(OverloadVariant v)
{
    switch (v) {
    case OverloadVariant::drop_oldest: return Overflow::drop_oldest;
    case OverloadVariant::block: return Overflow::block;
    default: return Overflow::drop_newest;
    }
}

OverloadResult jsonlw_overload(Overflow policy, const OverloadSpec& s)
{
    OverloadResult r;
    r.rss_start_kib = max_rss_kib();
    LogTally logs;
    std::filesystem::path file;
    std::optional<jsonlw::CloseReport> report;
    std::atomic<std::uint64_t> calls{0}, accepted{0}, refused{0}, other{0};
    {
        Loop loop;
        // A small queue; block waits the default 100 ms before it gives up on a record.
        jsonlw::RawJsonWriter w(loop.executor(), jsonlw::WriterOptions{
                                                     .directory = s.dir,
                                                     .stem = "overload",
                                                     .subject = "bench",
                                                     .queue_capacity = s.queue_capacity,
                                                     .overflow = policy,
                                                     .shutdown_timeout = std::chrono::seconds(60),
                                                     .log = logs.sink(),
                                                 });
        w.start();
        SteadyClock::time_point t0;
        run_producers_for(s.producers, s.seconds, t0, [&](int k, const std::atomic<bool>& stop) {
            std::uint64_t n = 0, ok = 0, full = 0, bad = 0;
            std::size_t i = static_cast<std::size_t>(k);
            while (!stop.load(std::memory_order_relaxed)) {
                const SubmitResult res = w.submit(std::string(s.pool->at(i++)));
                ++n;
                if (res == SubmitResult::accepted) ++ok;
                else if (res == SubmitResult::dropped_queue_full) ++full;
                else ++bad;
            }
            calls += n;
            accepted += ok;
            refused += full;
            other += bad;
        });
        report = w.async_close(asio::use_future).get();
        r.seconds = seconds_since(t0);
        file = w.file_path();
    }
    r.rss_peak_kib = max_rss_kib();
    const jsonlw::WriterStats& st = report->stats;
    r.calls = calls;
    r.accepted = accepted;
    r.refused = refused;
    r.submitted = st.submitted;
    r.written = st.written;
    r.drop_queue_full = st.dropped.queue_full;
    r.drop_oldest_evicted = st.dropped.oldest_evicted;
    r.drop_malformed = st.dropped.malformed;
    r.drop_write_error = st.dropped.write_error;
    r.drop_shutdown = st.dropped.shutdown;
    r.drop_unexpected = st.dropped.unexpected;
    r.drop_closed = st.dropped.closed;
    r.dropped_total = st.dropped.total();
    r.unknown = st.unknown;
    r.pending = st.pending;
    const FileCheck c = check_file(file);
    r.lines = c.lines;
    // Exact: the invariant holds with nothing pending, the writer saw every call, it refused
    // exactly the calls that were told so, and the file holds exactly what it counts as written.
    r.counts_exact = st.submitted == st.written + st.dropped.total() + st.unknown &&
                     st.pending == 0 && st.submitted == r.calls &&
                     st.dropped.queue_full == r.refused && c.lines == st.written &&
                     other.load() == 0 && c.bytes == c.lines * s.pool->line_bytes;
    if (!r.counts_exact)
        set_problem(r, fmt::format("counts differ: calls {} submitted {} written {} dropped {} "
                                   "unknown {} pending {} refused {} lines {}",
                                   r.calls, st.submitted, st.written, st.dropped.total(),
                                   st.unknown, st.pending, r.refused, c.lines));
    else if (!report->drained)
        set_problem(r, "close did not drain");
    empty_dir(s.dir);
    return r;
}

}  // namespace

OverloadResult run_overload(OverloadVariant v, const OverloadSpec& s)
{
    switch (v) {
    case OverloadVariant::spdlog_overrun_oldest: return spdlog_overload(s, false);
    case OverloadVariant::spdlog_block: return spdlog_overload(s, true);
    default: return jsonlw_overload(policy_of(v), s);
    }
}

}  // namespace bench
