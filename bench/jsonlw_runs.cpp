// The jsonlw side of every scenario: RawJsonWriter fed pre-serialized lines.
#include "alloc_count.hpp"
#include "clock.hpp"
#include "producers.hpp"
#include "runs.hpp"

#include <jsonlw/jsonlw.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_writer.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <sys/resource.h>
#include <time.h>

#include <array>
#include <chrono>
#include <ctime>
#include <atomic>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

namespace bench {

namespace asio = boost::asio;
using jsonlw::Overflow;
using jsonlw::SubmitResult;

namespace {

// The user's event loop: an io_context run by one thread until the run is over.
class Loop {
public:
    Loop() : guard_(asio::make_work_guard(ctx_)), thread_([this] { ctx_.run(); }) {}
    ~Loop()
    {
        guard_.reset();
        thread_.join();
    }
    asio::any_io_executor executor() { return ctx_.get_executor(); }

private:
    asio::io_context ctx_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_;
    std::thread thread_;
};

// Counts the writer's log lines instead of printing them into the table.
struct LogTally {
    std::atomic<std::uint64_t> warnings{0}, errors{0};
    jsonlw::LogSink sink()
    {
        return [this](jsonlw::LogLevel level, std::string_view) {
            if (level == jsonlw::LogLevel::error) ++errors;
            else if (level == jsonlw::LogLevel::warning) ++warnings;
        };
    }
};

std::string stats_problem(const jsonlw::WriterStats& st, std::uint64_t expect_written)
{
    if (st.written == expect_written && st.dropped.total() == 0 && st.unknown == 0 &&
        st.pending == 0)
        return {};
    return fmt::format("stats: written {} (expected {}), dropped {}, unknown {}, pending {}",
                       st.written, expect_written, st.dropped.total(), st.unknown, st.pending);
}

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

}  // namespace

ThroughputResult jsonlw_raw_throughput(const ThroughputSpec& s, bool trusted)
{
    ThroughputResult r;
    LogTally logs;
    std::filesystem::path file;
    std::optional<jsonlw::CloseReport> report;
    std::atomic<std::uint64_t> refused{0};
    {
        Loop loop;
        // The queue holds as many records as spdlog's (8192); Overflow::block with a timeout
        // no run reaches, so every record is written and none is dropped.
        jsonlw::RawJsonWriter w(loop.executor(), jsonlw::WriterOptions{
                                                     .directory = s.dir,
                                                     .stem = "raw",
                                                     .subject = "bench",
                                                     .queue_capacity = 8192,
                                                     .overflow = Overflow::block,
                                                     .block_timeout = std::chrono::hours(1),
                                                     .shutdown_timeout = std::chrono::hours(1),
                                                     .log = logs.sink(),
                                                     .serializer_threads = s.serializers,
                                                 },
                                 jsonlw::RawJsonOptions{
                                     .validation = trusted ? jsonlw::RawJsonValidation::trusted
                                                           : jsonlw::RawJsonValidation::full});
        w.start();
        SteadyClock::time_point t0;
        run_producers(s.producers, s.records, t0,
                      [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                          std::uint64_t bad = 0;
                          for (std::size_t n = 0; n < count; ++n, i += stride) {
                              const SubmitResult res =
                                  s.submit_view ? w.submit(std::string_view(s.pool->at(i)))
                                                : w.submit(std::string(s.pool->at(i)));
                              if (res != SubmitResult::accepted) ++bad;
                          }
                          refused += bad;
                      });
        report = w.async_close(asio::use_future).get();
        r.seconds = seconds_since(t0);
        file = w.file_path();
    }
    const FileCheck c = check_file(file);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.problem = file_problem(c, s.records, s.records * s.pool->line_bytes);
    if (r.problem.empty()) r.problem = stats_problem(report->stats, s.records);
    if (r.problem.empty() && refused.load() != 0)
        r.problem = fmt::format("{} submits refused", refused.load());
    if (r.problem.empty() && !report->drained) r.problem = "close did not drain";
    empty_dir(s.dir);
    return r;
}

namespace {

// The paced submit loop, one call per step. From another thread the steps run back to back;
// on the loop thread each step is a handler that posts the next, so the drain's own handlers
// run in between (a caller that kept the loop thread would stall the writer).
struct PacedSubmits {
    jsonlw::RawJsonWriter& w;
    const SubmitCostSpec& s;
    SubmitCostResult& r;
    const TickClock& clk = TickClock::get();
    Pacer pacer;
    std::size_t limit;
    std::size_t i = 0;
    SteadyClock::time_point t0 = SteadyClock::now();
    SteadyClock::time_point deadline =
        t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s.seconds));

    PacedSubmits(jsonlw::RawJsonWriter& writer, const SubmitCostSpec& spec, SubmitCostResult& out,
                 std::size_t calls)
        : w(writer), s(spec), r(out), pacer(spec.rate_per_s), limit(calls)
    {
    }

    bool more() const noexcept
    {
        return i < limit && (i % 256 != 0 || SteadyClock::now() < deadline);
    }

    void step()
    {
        pacer.wait();
        using Form = SubmitCostSpec::Form;
        const std::string& line = s.pool->at(i);
        std::string rec;
        if (s.form == Form::moved_string) rec = line;  // built before the timed call
        const auto call = [&] {
            switch (s.form) {
            case Form::moved_string: return w.submit(std::move(rec));
            case Form::string_in_call: return w.submit(std::string(line));
            case Form::view: break;
            }
            return w.submit(std::string_view(line));
        };
        const std::uint64_t a0 = allocations_on_this_thread();
        SubmitResult res;
        if (i >= s.warmup_calls && i % s.sample_every == 0) {
            const std::uint64_t c0 = clk.start();
            res = call();
            const std::uint64_t c1 = clk.stop();
            r.ns.push_back(clk.to_ns(c1 - c0));
        } else {
            res = call();
        }
        (i >= s.warmup_calls ? r.allocations : r.warmup_allocations) +=
            allocations_on_this_thread() - a0;
        if (res != SubmitResult::accepted) ++r.refused;
        ++i;
    }

    void finish()
    {
        r.calls = i;
        r.achieved_rate = static_cast<double>(i) / seconds_since(t0);
    }
};

}  // namespace

SubmitCostResult jsonlw_raw_submit_cost(const SubmitCostSpec& s)
{
    SubmitCostResult r;
    LogTally logs;
    std::filesystem::path file;
    std::optional<jsonlw::CloseReport> report;
    // At most rate x seconds calls, and no longer than `seconds`: a descheduled caller
    // makes fewer calls rather than stretching the run.
    const auto calls = static_cast<std::size_t>(s.rate_per_s * s.seconds);
    r.ns.reserve(calls / s.sample_every + 1);
    {
        Loop loop;
        // The defaults a user gets (queue 1024, batch 64, drop_newest): below saturation the
        // queue never fills.
        jsonlw::RawJsonWriter w(loop.executor(),
                                jsonlw::WriterOptions{
                                    .directory = s.dir,
                                    .stem = "submit",
                                    .subject = "bench",
                                    .flush_interval = std::chrono::milliseconds(s.flush_interval_ms),
                                    .log = logs.sink(),
                                    .idle_poll = std::chrono::microseconds(s.idle_poll_us),
                                });
        w.start();
        PacedSubmits paced(w, s, r, calls);
        if (s.from_loop) {
            // A small handler (two pointers and the executor) that re-posts itself.
            struct Next {
                PacedSubmits* paced;
                std::promise<void>* done;
                asio::any_io_executor ex;
                void operator()() const
                {
                    paced->step();
                    if (paced->more()) asio::post(ex, *this);
                    else done->set_value();
                }
            };
            std::promise<void> done;
            asio::post(loop.executor(), Next{&paced, &done, loop.executor()});
            done.get_future().wait();
        } else {
            while (paced.more()) paced.step();
        }
        paced.finish();
        report = w.async_close(asio::use_future).get();
        file = w.file_path();
    }
    const FileCheck c = check_file(file);
    const std::uint64_t accepted = r.calls - r.refused;
    r.problem = file_problem(c, accepted, accepted * s.pool->line_bytes);
    // Saturated (refusals) is reported, not a failure; the accounting must be exact either way.
    const jsonlw::WriterStats& st = report->stats;
    if (r.problem.empty() && (st.written != accepted || st.dropped.queue_full != r.refused ||
                              st.dropped.total() != r.refused || st.unknown || st.pending))
        r.problem = fmt::format("stats: written {} (accepted {}), dropped {} (refused {})",
                                st.written, accepted, st.dropped.total(), r.refused);
    empty_dir(s.dir);
    return r;
}

namespace {

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

DrainResult jsonlw_raw_drain(const LinePool& pool, std::size_t records,
                             const std::filesystem::path& dir)
{
    DrainResult r;
    LogTally logs;
    std::filesystem::path file;
    std::optional<jsonlw::CloseReport> report;
    {
        asio::io_context ctx;  // not running while the records are queued
        auto guard = asio::make_work_guard(ctx);
        jsonlw::RawJsonWriter w(ctx.get_executor(), jsonlw::WriterOptions{
                                                        .directory = dir,
                                                        .stem = "drain",
                                                        .subject = "bench",
                                                        .queue_capacity = records,
                                                        .shutdown_timeout = std::chrono::hours(1),
                                                        .log = logs.sink(),
                                                    });
        w.start();
        std::uint64_t refused = 0;
        for (std::size_t i = 0; i < records; ++i)
            if (w.submit(std::string(pool.at(i))) != SubmitResult::accepted) ++refused;
        SteadyClock::time_point t1;
        const auto t0 = SteadyClock::now();
        w.async_close([&](jsonlw::error_code, jsonlw::CloseReport rep) {
            t1 = SteadyClock::now();
            report = rep;
            guard.reset();
        });
        ctx.run();
        r.seconds = std::chrono::duration<double>(t1 - t0).count();
        file = w.file_path();
        if (refused) r.problem = fmt::format("{} records refused while queueing", refused);
    }
    const FileCheck c = check_file(file);
    r.lines = c.lines;
    if (r.problem.empty()) r.problem = file_problem(c, records, records * pool.line_bytes);
    if (r.problem.empty() && report) r.problem = stats_problem(report->stats, records);
    if (r.problem.empty() && !report) r.problem = "close never completed";
    empty_dir(dir);
    return r;
}


// --- The configured writers ---

namespace {

// The seed's worker record as PerfMetricsRecord (reference §2.4), plus extra decode steps.
jsonlw::PerfMetricsRecord seed_perf_record(std::size_t extra_steps)
{
    jsonlw::PerfMetricsRecord r;
    r.request_id = "42";
    jsonlw::PhaseRecord p;
    auto& t = p.timing_metrics;
    t.arrival_time = 1000.0021;
    t.first_scheduled_time = 1000.0053;
    t.first_token_time = 1000.0250;
    t.last_token_time = 1000.4100;
    t.server_arrival_time = 1000.0000;
    t.server_first_token_time = 1000.0270;
    p.first_iter = 812;
    p.last_iter = 860;
    p.kv_cache_metrics = jsonlw::KvCacheMetrics{.num_total_allocated_blocks = 5,
                                                .num_new_allocated_blocks = 3,
                                                .num_reused_blocks = 2,
                                                .num_missed_blocks = 3,
                                                .kv_cache_hit_rate = 0.4};
    jsonlw::TimeBreakdownMetrics tb;
    jsonlw::StepMetrics chunk;
    chunk.forward_start_time = 5310.101;
    chunk.forward_end_time = 5310.104;
    chunk.sample_start_time = 5310.104;
    chunk.sample_end_time = 5310.105;
    chunk.gpu_forward_time = 3.0;
    chunk.gpu_sample_time = 0.25;
    chunk.token_time = 5310.106;
    tb.ctx_chunk_metrics.push_back(chunk);
    // The seed's step, then more with the same spelling (stamps 4 ms apart, in thousandths).
    for (std::size_t k = 0; k <= extra_steps; ++k) {
        const auto ms = [k](int at) { return (5310110.0 + 4.0 * static_cast<double>(k) + at) / 1000; };
        jsonlw::StepMetrics step;
        step.iter = static_cast<std::int64_t>(k + 1);
        step.forward_start_time = ms(0);
        step.forward_end_time = ms(2);
        step.sample_start_time = ms(2);
        step.sample_end_time = ms(3);
        step.gpu_forward_time = 1.5;
        step.gpu_sample_time = 0.5;
        step.token_time = ms(4);
        tb.step_metrics.push_back(step);
    }
    p.time_breakdown_metrics = std::move(tb);
    r.server = std::move(p);
    return r;
}

// One output of the raw-output workload: its text, token ids and where the 4 chunks split.
struct RawOutputShape {
    std::string text;
    std::vector<std::int32_t> tokens;
    std::array<std::size_t, 5> text_at{};
    std::array<std::size_t, 5> token_at{};
};

constexpr std::uint64_t raw_output_first_id = 1'000'000'000;  // fixed-width ids

// The hook calls one output takes: 3 chunks, then the final one.
void feed_output(jsonlw::RawOutputWriter& w, const RawOutputShape& o, std::uint64_t id)
{
    for (std::size_t j = 0; j < 4; ++j) {
        jsonlw::OutputChunk c;
        c.request_id = id;
        c.text_diff = std::string_view(o.text).substr(o.text_at[j], o.text_at[j + 1] - o.text_at[j]);
        c.token_ids_diff = std::span<const std::int32_t>(o.tokens).subspan(
            o.token_at[j], o.token_at[j + 1] - o.token_at[j]);
        c.is_final = j == 3;
        c.streaming = true;
        w.on_chunk(c);
    }
}

jsonlw::RawOutputOptions raw_output_options(const std::filesystem::path& dir, LogTally& logs)
{
    // Overflow::block with a timeout no run reaches: nothing is dropped.
    return jsonlw::RawOutputOptions{.directory = dir,
                                    .overflow = Overflow::block,
                                    .block_timeout = std::chrono::hours(1),
                                    .shutdown_timeout = std::chrono::hours(1),
                                    .log = logs.sink()};
}

// RawOutputWriter::serialize, reachable (the writer is not final).
struct RawOutputProbe final : jsonlw::RawOutputWriter {
    using RawOutputWriter::RawOutputWriter;
    using RawOutputWriter::serialize;
};

}  // namespace

WriterWorkload perf_metrics_workload(std::size_t extra_steps)
{
    auto rec = std::make_shared<jsonlw::PerfMetricsRecord>(seed_perf_record(extra_steps));
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    jsonlw::serialize_perf_metrics(*rec, line);
    WriterWorkload w;
    w.kind = WriterWorkload::Kind::perf_metrics;
    w.name = "PerfMetricsWriter";
    w.lines.lines.emplace_back(line.view());
    w.lines.line_bytes = line.view().size() + 1;
    w.lines.label = extra_steps == 0
                        ? fmt::format("seed worker {} B", w.lines.line_bytes)
                        : fmt::format("{} B (seed + {} step{})", w.lines.line_bytes, extra_steps,
                                      extra_steps > 1 ? "s" : "");
    w.records = rec;
    return w;
}

WriterWorkload raw_output_workload(std::size_t line_bytes, const std::filesystem::path& dir)
{
    auto o = std::make_shared<RawOutputShape>();
    // The line carries the text twice (text and frames) and about 6 bytes per token id, on
    // top of about 300 bytes of fixed fields.
    const std::size_t room = line_bytes > 500 ? line_bytes - 300 : 200;
    const std::size_t text_bytes = room * 3 / 10;
    const std::size_t token_count = room * 4 / 10 / 6;
    static constexpr std::string_view words = "the model wrote this sentence, token by token. ";
    for (std::size_t i = 0; i < text_bytes; ++i)
        o->text += (i % 80 == 79) ? '\n' : words[i % words.size()];
    for (std::size_t k = 0; k < token_count; ++k)
        o->tokens.push_back(static_cast<std::int32_t>(10000 + (k * 7919) % 90000));
    for (std::size_t j = 0; j <= 4; ++j) {
        o->text_at[j] = text_bytes * j / 4;
        o->token_at[j] = token_count * j / 4;
    }
    WriterWorkload w;
    w.kind = WriterWorkload::Kind::raw_output;
    w.name = "RawOutputWriter";
    w.calls_per_record = 4;
    w.records = o;
    // Calibration: 64 outputs through the real hook; their lines are what every run writes
    // (ids and timestamps are fixed-width, so every line has the same length).
    const auto calib = dir / "calibration";
    {
        LogTally logs;
        Loop loop;
        jsonlw::RawOutputWriter writer(loop.executor(), raw_output_options(calib, logs));
        writer.start();
        for (std::uint64_t i = 0; i < 64; ++i) feed_output(writer, *o, raw_output_first_id + i);
        writer.async_close(asio::use_future).get();
    }
    w.lines.lines = read_tree_lines(calib);
    empty_dir(dir);
    if (w.lines.lines.size() != 64) {
        w.problem = fmt::format("calibration wrote {} lines, expected 64", w.lines.lines.size());
        return w;
    }
    w.lines.line_bytes = w.lines.lines.front().size() + 1;
    for (const std::string& l : w.lines.lines)
        if (l.size() + 1 != w.lines.line_bytes) w.problem = "calibration lines differ in length";
    w.lines.label = fmt::format("{} B", w.lines.line_bytes);
    return w;
}

namespace {

// A double as the seed spells it (Python's repr): fmt's shortest round-trip form, with ".0"
// when that has neither a fraction nor an exponent.
void py_double(fmt::memory_buffer& b, double d)
{
    const std::size_t at = b.size();
    fmt::format_to(fmt::appender(b), FMT_COMPILE("{}"), d);
    const std::string_view v(b.data() + at, b.size() - at);
    if (v.find_first_of(".en") == std::string_view::npos) b.append(std::string_view(".0"));
}

void py_field(fmt::memory_buffer& b, std::string_view key, const std::optional<double>& d,
              bool comma = true)
{
    if (!d) return;
    if (comma) b.push_back(',');
    b.push_back('"');
    b.append(key);
    b.append(std::string_view("\":"));
    py_double(b, *d);
}

void fmt_steps(fmt::memory_buffer& b, std::string_view key,
               const std::vector<jsonlw::StepMetrics>& steps)
{
    b.push_back('"');
    b.append(key);
    b.append(std::string_view("\":["));
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const jsonlw::StepMetrics& m = steps[i];
        b.append(std::string_view(i ? ",{" : "{"));
        bool first = true;
        if (m.iter) {
            fmt::format_to(fmt::appender(b), FMT_COMPILE("\"iter\":{}"), *m.iter);
            first = false;
        }
        py_field(b, "forward_start_time", m.forward_start_time, !first);
        py_field(b, "forward_end_time", m.forward_end_time);
        py_field(b, "sample_start_time", m.sample_start_time);
        py_field(b, "sample_end_time", m.sample_end_time);
        py_field(b, "gpu_forward_time", m.gpu_forward_time);
        py_field(b, "gpu_sample_time", m.gpu_sample_time);
        py_field(b, "token_time", m.token_time);
        b.push_back('}');
    }
    b.push_back(']');
}

}  // namespace

// What a user writes by hand for the seed's worker record: compiled fmt::format_to of the
// fields it has, keys appended as literals, in the seed's order and spelling (the same bytes
// as PerfMetricsWriter's line).
void format_perf_by_hand(const jsonlw::PerfMetricsRecord& r, fmt::memory_buffer& b)
{
    const jsonlw::PhaseRecord& p = *r.server;
    const jsonlw::TimingMetrics& t = p.timing_metrics;
    fmt::format_to(fmt::appender(b), FMT_COMPILE(R"({{"request_id":{},"perf_metrics":{{"timing_metrics":{{)"),
                   r.request_id);
    py_field(b, "arrival_time", t.arrival_time, false);
    py_field(b, "first_scheduled_time", t.first_scheduled_time);
    py_field(b, "first_token_time", t.first_token_time);
    py_field(b, "last_token_time", t.last_token_time);
    py_field(b, "server_arrival_time", t.server_arrival_time);
    py_field(b, "server_first_token_time", t.server_first_token_time);
    b.push_back('}');
    if (p.first_iter) fmt::format_to(fmt::appender(b), FMT_COMPILE(",\"first_iter\":{}"), *p.first_iter);
    if (p.last_iter) fmt::format_to(fmt::appender(b), FMT_COMPILE(",\"last_iter\":{}"), *p.last_iter);
    if (const auto& kv = p.kv_cache_metrics)
        fmt::format_to(fmt::appender(b),
                       FMT_COMPILE(R"(,"kv_cache_metrics":{{"num_total_allocated_blocks":{},)"
                                   R"("num_new_allocated_blocks":{},"num_reused_blocks":{},)"
                                   R"("num_missed_blocks":{}}})"),
                       kv->num_total_allocated_blocks, kv->num_new_allocated_blocks,
                       kv->num_reused_blocks, kv->num_missed_blocks);
    b.push_back('}');
    if (const auto& tb = p.time_breakdown_metrics) {
        b.append(std::string_view(R"(,"time_breakdown_metrics":{)"));
        fmt_steps(b, "ctx_chunk_metrics", tb->ctx_chunk_metrics);
        b.push_back(',');
        fmt_steps(b, "step_metrics", tb->step_metrics);
        b.push_back('}');
    }
    fmt::format_to(fmt::appender(b), FMT_COMPILE(R"(,"status":"{}"}})"), r.status);
}

ThroughputResult perf_fmt_throughput(const WriterWorkload& wl, const ThroughputSpec& s)
{
    ThroughputResult r;
    const auto& rec = *static_cast<const jsonlw::PerfMetricsRecord*>(wl.records.get());
    {
        fmt::memory_buffer check;
        format_perf_by_hand(rec, check);
        if (std::string_view(check.data(), check.size()) != wl.lines.lines.front()) {
            r.problem = "the hand-formatted line differs from PerfMetricsWriter's: " +
                        fmt::to_string(check);
            return r;
        }
    }
    const auto path = s.dir / "fmt.jsonl";
    std::FILE* f = std::fopen(path.c_str(), "w");  // default (full) buffering
    if (!f) {
        r.problem = fmt::format("fopen: {}", std::strerror(errno));
        return r;
    }
    std::mutex mu;
    std::atomic<std::uint64_t> failed{0};
    SteadyClock::time_point t0;
    run_producers(s.producers, s.records, t0, [&](int, std::size_t count, std::size_t, std::size_t) {
        fmt::memory_buffer b;  // per producer, reused
        std::uint64_t bad = 0;
        for (std::size_t n = 0; n < count; ++n) {
            b.clear();
            format_perf_by_hand(rec, b);
            std::lock_guard lk(mu);
            if (std::fprintf(f, "%.*s\n", static_cast<int>(b.size()), b.data()) < 0) ++bad;
        }
        failed += bad;
    });
    if (std::fflush(f) != 0) ++failed;
    if (std::fclose(f) != 0) ++failed;
    r.seconds = seconds_since(t0);
    const FileCheck c = check_file(path);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.problem = file_problem(c, s.records, s.records * wl.lines.line_bytes);
    if (r.problem.empty() && failed.load())
        r.problem = fmt::format("{} fprintf/fflush/fclose calls failed", failed.load());
    empty_dir(s.dir);
    return r;
}

namespace {

// JSON string escaping as a user writes it (no UTF-8 check: the text here is ASCII).
void escape_to(fmt::memory_buffer& b, std::string_view t)
{
    b.push_back('"');
    std::size_t run = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(t[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        b.append(t.substr(run, i - run));
        run = i + 1;
        switch (c) {
        case '"': b.append(std::string_view("\\\"")); break;
        case '\\': b.append(std::string_view("\\\\")); break;
        case '\n': b.append(std::string_view("\\n")); break;
        case '\r': b.append(std::string_view("\\r")); break;
        case '\t': b.append(std::string_view("\\t")); break;
        default: fmt::format_to(fmt::appender(b), FMT_COMPILE("\\u{:04x}"), c);
        }
    }
    b.append(t.substr(run));
    b.push_back('"');
}

void iso8601_to(fmt::memory_buffer& b, std::chrono::system_clock::time_point tp)
{
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    fmt::format_to(fmt::appender(b), FMT_COMPILE("\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00\""),
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                   tm.tm_sec, us % 1000000);
}

// An output as a user accumulates and formats it by hand: the 4 chunks' text and token ids
// appended (what the hook does), then one line with the same fields as RawOutputWriter's.
struct ByHandOutput {
    std::string text;
    std::vector<std::size_t> frame_ends;
    std::vector<std::int32_t> tokens;
    std::chrono::system_clock::time_point started_at, finished_at;
};

void format_output_by_hand(const RawOutputShape& o, std::uint64_t id, ByHandOutput& acc,
                           fmt::memory_buffer& b)
{
    acc.text.clear();
    acc.frame_ends.clear();
    acc.tokens.clear();
    for (std::size_t j = 0; j < 4; ++j) {
        if (j == 0) acc.started_at = std::chrono::system_clock::now();
        acc.text.append(std::string_view(o.text).substr(o.text_at[j], o.text_at[j + 1] - o.text_at[j]));
        acc.frame_ends.push_back(acc.text.size());
        acc.tokens.insert(acc.tokens.end(), o.tokens.begin() + static_cast<std::ptrdiff_t>(o.token_at[j]),
                          o.tokens.begin() + static_cast<std::ptrdiff_t>(o.token_at[j + 1]));
    }
    acc.finished_at = std::chrono::system_clock::now();
    fmt::format_to(fmt::appender(b),
                   FMT_COMPILE(R"({{"event":"raw_output","request_id":"{}","disagg_request_id":null,)"
                               R"("output_index":0,"started_at":)"),
                   id);
    iso8601_to(b, acc.started_at);
    b.append(std::string_view(R"(,"finished_at":)"));
    iso8601_to(b, acc.finished_at);
    b.append(std::string_view(R"(,"streaming":true,"aborted":false,"text":)"));
    escape_to(b, acc.text);
    b.append(std::string_view(R"(,"frames":[)"));
    std::size_t from = 0;
    for (std::size_t k = 0; k < acc.frame_ends.size(); ++k) {
        if (k) b.push_back(',');
        escape_to(b, std::string_view(acc.text).substr(from, acc.frame_ends[k] - from));
        from = acc.frame_ends[k];
    }
    b.append(std::string_view(R"(],"token_ids":[)"));
    for (std::size_t k = 0; k < acc.tokens.size(); ++k)
        fmt::format_to(fmt::appender(b), FMT_COMPILE("{}{}"), k ? "," : "", acc.tokens[k]);
    fmt::format_to(fmt::appender(b),
                   FMT_COMPILE(R"(],"num_output_tokens":{},"frames_consistent":true}})"),
                   acc.tokens.size());
}

// The calibration line with its two timestamps blanked, to compare with a by-hand line.
std::string without_stamps(std::string line)
{
    for (const char* key : {"\"started_at\":\"", "\"finished_at\":\""}) {
        const std::size_t at = line.find(key);
        if (at == std::string::npos) continue;
        const std::size_t from = at + std::strlen(key);
        const std::size_t to = line.find('"', from);
        if (to != std::string::npos) line.replace(from, to - from, to - from, '#');
    }
    return line;
}

}  // namespace

ThroughputResult raw_output_fmt_throughput(const WriterWorkload& wl, const ThroughputSpec& s)
{
    ThroughputResult r;
    const auto& o = *static_cast<const RawOutputShape*>(wl.records.get());
    {
        ByHandOutput acc;
        fmt::memory_buffer check;
        format_output_by_hand(o, raw_output_first_id, acc, check);
        const std::string mine = without_stamps(fmt::to_string(check));
        bool found = false;
        for (const std::string& l : wl.lines.lines) found = found || without_stamps(l) == mine;
        if (!found) {
            r.problem = "the hand-formatted line matches no RawOutputWriter line: " + mine;
            return r;
        }
    }
    const auto path = s.dir / "fmt-raw-output.jsonl";
    std::FILE* f = std::fopen(path.c_str(), "w");  // default (full) buffering
    if (!f) {
        r.problem = fmt::format("fopen: {}", std::strerror(errno));
        return r;
    }
    std::mutex mu;
    std::atomic<std::uint64_t> failed{0};
    SteadyClock::time_point t0;
    run_producers(s.producers, s.records, t0,
                  [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                      ByHandOutput acc;        // per producer, reused
                      fmt::memory_buffer b;
                      std::uint64_t bad = 0;
                      for (std::size_t n = 0; n < count; ++n, i += stride) {
                          b.clear();
                          format_output_by_hand(o, raw_output_first_id + i, acc, b);
                          std::lock_guard lk(mu);
                          if (std::fprintf(f, "%.*s\n", static_cast<int>(b.size()), b.data()) < 0)
                              ++bad;
                      }
                      failed += bad;
                  });
    if (std::fflush(f) != 0) ++failed;
    if (std::fclose(f) != 0) ++failed;
    r.seconds = seconds_since(t0);
    const FileCheck c = check_file(path);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.problem = file_problem(c, s.records, s.records * wl.lines.line_bytes);
    if (r.problem.empty() && failed.load())
        r.problem = fmt::format("{} fprintf/fflush/fclose calls failed", failed.load());
    empty_dir(s.dir);
    return r;
}

ThroughputResult writer_throughput(const WriterWorkload& wl, const ThroughputSpec& s)
{
    ThroughputResult r;
    LogTally logs;
    std::optional<jsonlw::CloseReport> report;
    std::atomic<std::uint64_t> retries{0}, bad{0};
    std::uint64_t hook_failures = 0;
    {
        Loop loop;
        SteadyClock::time_point t0;
        if (wl.kind == WriterWorkload::Kind::perf_metrics) {
            // The writer's constants are TensorRT-LLM's (queue 1024, drop_newest): a producer
            // that must not lose a record retries it after a refusal (counted).
            const auto& tmpl = *static_cast<const jsonlw::PerfMetricsRecord*>(wl.records.get());
            jsonlw::PerfMetricsWriter w(loop.executor(), s.dir, "bench",
                                        jsonlw::PerfMetricsOptions{
                                            .log = logs.sink(),
                                            .serializer_threads = s.serializers});
            w.start();
            run_producers(s.producers, s.records, t0,
                          [&](int, std::size_t count, std::size_t, std::size_t) {
                              std::uint64_t again = 0, failed = 0;
                              for (std::size_t n = 0; n < count; ++n) {
                                  for (;;) {
                                      const SubmitResult res = w.submit(jsonlw::PerfMetricsRecord(tmpl));
                                      if (res == SubmitResult::accepted) break;
                                      if (res != SubmitResult::dropped_queue_full) {
                                          ++failed;
                                          break;
                                      }
                                      // Back off for about half a batch's worth of
                                      // serialization, rather than spin against the I/O
                                      // thread for the same cores.
                                      ++again;
                                      std::this_thread::sleep_for(std::chrono::microseconds(50));
                                  }
                              }
                              retries += again;
                              bad += failed;
                          });
            report = w.async_close(asio::use_future).get();
        } else {
            const auto& shape = *static_cast<const RawOutputShape*>(wl.records.get());
            jsonlw::RawOutputWriter w(loop.executor(), raw_output_options(s.dir, logs));
            w.start();
            run_producers(s.producers, s.records, t0,
                          [&](int, std::size_t count, std::size_t i, std::size_t stride) {
                              for (std::size_t n = 0; n < count; ++n, i += stride)
                                  feed_output(w, shape, raw_output_first_id + i);
                          });
            report = w.async_close(asio::use_future).get();
            hook_failures = w.counters().hook_failures;
        }
        r.seconds = seconds_since(t0);
    }
    const FileCheck c = check_tree(s.dir);
    r.lines = c.lines;
    r.bytes = c.bytes;
    r.lost = retries;  // refusals retried (PerfMetricsWriter), not records lost
    r.problem = file_problem(c, s.records, s.records * wl.lines.line_bytes);
    const jsonlw::WriterStats& st = report->stats;
    if (r.problem.empty() && (st.written != s.records || st.dropped.queue_full != retries ||
                              st.dropped.total() != retries || st.unknown || st.pending))
        r.problem = fmt::format("stats: written {} of {}, dropped {} (retried refusals {})",
                                st.written, s.records, st.dropped.total(), retries.load());
    if (r.problem.empty() && (bad.load() || hook_failures))
        r.problem = fmt::format("{} submits refused as closed/disabled, {} hook failures",
                                bad.load(), hook_failures);
    empty_dir(s.dir);
    return r;
}

[[gnu::noinline]] void serialize_loop_perf(const jsonlw::PerfMetricsRecord& rec,
                                           std::size_t iterations, jsonlw::LineBuffer& buf)
{
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        jsonlw::JsonLine line(buf);
        jsonlw::serialize_perf_metrics(rec, line);
        buf.push_back('\n');
    }
}

[[gnu::noinline]] void serialize_loop_raw_output(RawOutputProbe& w,
                                                 const jsonlw::RawOutputRecord& rec,
                                                 std::size_t iterations, jsonlw::LineBuffer& buf)
{
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        jsonlw::JsonLine line(buf);
        w.serialize(rec, line);
        buf.push_back('\n');
    }
}

// --- Serialization ---

namespace {

// CPU time of the calling thread: a single-threaded loop's cost without the time other
// processes on a shared machine took from it.
double thread_cpu_seconds() noexcept
{
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Names RawJsonWriter::serialize through a pointer to member of its base: the bench times the
// writer's own code (RawJsonWriter is final, so it cannot be subclassed to expose it).
struct SerializeAccess : jsonlw::JsonlRecordWriter<jsonlw::RawJsonText> {
    static constexpr auto serialize_fn() { return &SerializeAccess::serialize; }
};

}  // namespace
}  // namespace bench

// RawJsonWriter's batch path (what write_batch() does before the append), for the bench.
struct jsonlw::RawJsonWriterProbe {
    static void begin_batch(RawJsonWriter& w, std::span<const RawJsonText> b) { w.begin_batch(b); }
    static void end_batch(RawJsonWriter& w) noexcept { w.end_batch(); }
    static void serialize(RawJsonWriter& w, const RawJsonText& r, JsonLine& l) { w.serialize(r, l); }
};

namespace bench {
namespace {

// The seed's aggregated worker record (reference/trtllm-writers.md §2.4) as a typed struct.
struct StepMetrics {
    std::optional<int> iter;
    double forward_start_time, forward_end_time, sample_start_time, sample_end_time;
    double gpu_forward_time, gpu_sample_time, token_time;
};
struct SeedWorker {
    long request_id = 42;
    double arrival_time = 1000.0021, first_scheduled_time = 1000.0053,
           first_token_time = 1000.025, last_token_time = 1000.41, server_arrival_time = 1000.0,
           server_first_token_time = 1000.027;
    int first_iter = 812, last_iter = 860;
    int num_total_allocated_blocks = 5, num_new_allocated_blocks = 3, num_reused_blocks = 2,
        num_missed_blocks = 3;
    std::vector<StepMetrics> ctx_chunks{
        {std::nullopt, 5310.101, 5310.104, 5310.104, 5310.105, 3.0, 0.25, 5310.106}};
    std::vector<StepMetrics> steps{{1, 5310.110, 5310.112, 5310.112, 5310.113, 1.5, 0.5, 5310.114}};
};

void write_steps(jsonlw::JsonLine& l, std::string_view name, const std::vector<StepMetrics>& v)
{
    l.key(name).begin_array();
    for (const StepMetrics& s : v) {
        l.begin_object();
        if (s.iter) l.field("iter", *s.iter);
        l.field("forward_start_time", s.forward_start_time)
            .field("forward_end_time", s.forward_end_time)
            .field("sample_start_time", s.sample_start_time)
            .field("sample_end_time", s.sample_end_time)
            .field("gpu_forward_time", s.gpu_forward_time)
            .field("gpu_sample_time", s.gpu_sample_time)
            .field("token_time", s.token_time);
        l.end_object();
    }
    l.end_array();
}

void build_seed(jsonlw::JsonLine& l, const SeedWorker& r)
{
    l.begin_object().field("request_id", r.request_id);
    l.key("perf_metrics").begin_object();
    l.key("timing_metrics").begin_object();
    l.field("arrival_time", r.arrival_time)
        .field("first_scheduled_time", r.first_scheduled_time)
        .field("first_token_time", r.first_token_time)
        .field("last_token_time", r.last_token_time)
        .field("server_arrival_time", r.server_arrival_time)
        .field("server_first_token_time", r.server_first_token_time);
    l.end_object();
    l.field("first_iter", r.first_iter).field("last_iter", r.last_iter);
    l.key("kv_cache_metrics").begin_object();
    l.field("num_total_allocated_blocks", r.num_total_allocated_blocks)
        .field("num_new_allocated_blocks", r.num_new_allocated_blocks)
        .field("num_reused_blocks", r.num_reused_blocks)
        .field("num_missed_blocks", r.num_missed_blocks);
    l.end_object().end_object();
    l.key("time_breakdown_metrics").begin_object();
    write_steps(l, "ctx_chunk_metrics", r.ctx_chunks);
    write_steps(l, "step_metrics", r.steps);
    l.end_object();
    l.field("status", "complete").end_object();
}

const SeedWorker& seed_record()
{
    static const SeedWorker r;
    return r;
}

}  // namespace

// The callgrind entry points: one record per iteration, a batch buffer cleared every 64
// records as serialize_batch() does. Not inlined, so --toggle-collect can name them.
[[gnu::noinline]] void serialize_loop_raw(jsonlw::JsonlRecordWriter<jsonlw::RawJsonText>& w,
                                          const std::vector<jsonlw::RawJsonText>& recs,
                                          std::size_t iterations, jsonlw::LineBuffer& buf)
{
    constexpr auto fn = SerializeAccess::serialize_fn();
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        jsonlw::JsonLine line(buf);
        (w.*fn)(recs[i % recs.size()], line);
        buf.push_back('\n');
    }
}

// The batch path: records in batches of 64 (the writer's default), each batch validated as
// one document stream first, as RawJsonWriter::write_batch() does.
[[gnu::noinline]] void serialize_loop_raw_batch(jsonlw::RawJsonWriter& w,
                                                const std::vector<jsonlw::RawJsonText>& recs,
                                                std::size_t iterations, jsonlw::LineBuffer& buf)
{
    using P = jsonlw::RawJsonWriterProbe;
    for (std::size_t i = 0; i < iterations;) {
        buf.clear();
        const std::size_t n = std::min<std::size_t>({64, iterations - i, recs.size()});
        i += n;
        const std::span<const jsonlw::RawJsonText> batch(recs.data(), n);
        P::begin_batch(w, batch);
        for (const jsonlw::RawJsonText& r : batch) {
            jsonlw::JsonLine line(buf);
            P::serialize(w, r, line);
            buf.push_back('\n');
        }
        P::end_batch(w);
    }
}

[[gnu::noinline]] void serialize_loop_memcpy(const std::vector<std::string>& recs,
                                             std::size_t iterations, jsonlw::LineBuffer& buf)
{
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        const std::string& s = recs[i % recs.size()];
        buf.append(s.data(), s.data() + s.size());
        buf.push_back('\n');
    }
}

[[gnu::noinline]] void serialize_loop_jsonline(const SeedWorker& rec, std::size_t iterations,
                                               jsonlw::LineBuffer& buf)
{
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        jsonlw::JsonLine line(buf);
        build_seed(line, rec);
        buf.push_back('\n');
    }
}

[[gnu::noinline]] void serialize_loop_fmt(const SeedWorker& r, std::size_t iterations,
                                          jsonlw::LineBuffer& buf)
{
    const StepMetrics& c = r.ctx_chunks.front();
    const StepMetrics& s = r.steps.front();
    for (std::size_t i = 0; i < iterations; ++i) {
        if (i % 64 == 0) buf.clear();
        fmt::format_to(
            fmt::appender(buf),
            FMT_COMPILE(R"({{"request_id":{},"perf_metrics":{{"timing_metrics":{{"arrival_time":{},)"
            R"("first_scheduled_time":{},"first_token_time":{},"last_token_time":{},)"
            R"("server_arrival_time":{},"server_first_token_time":{}}},"first_iter":{},)"
            R"("last_iter":{},"kv_cache_metrics":{{"num_total_allocated_blocks":{},)"
            R"("num_new_allocated_blocks":{},"num_reused_blocks":{},"num_missed_blocks":{}}}}},)"
            R"("time_breakdown_metrics":{{"ctx_chunk_metrics":[{{"forward_start_time":{},)"
            R"("forward_end_time":{},"sample_start_time":{},"sample_end_time":{},)"
            R"("gpu_forward_time":{},"gpu_sample_time":{},"token_time":{}}}],)"
            R"("step_metrics":[{{"iter":{},"forward_start_time":{},"forward_end_time":{},)"
            R"("sample_start_time":{},"sample_end_time":{},"gpu_forward_time":{},)"
            R"("gpu_sample_time":{},"token_time":{}}}]}},"status":"complete"}})"
            "\n"),
            r.request_id, r.arrival_time, r.first_scheduled_time, r.first_token_time,
            r.last_token_time, r.server_arrival_time, r.server_first_token_time, r.first_iter,
            r.last_iter, r.num_total_allocated_blocks, r.num_new_allocated_blocks,
            r.num_reused_blocks, r.num_missed_blocks, c.forward_start_time, c.forward_end_time,
            c.sample_start_time, c.sample_end_time, c.gpu_forward_time, c.gpu_sample_time,
            c.token_time, *s.iter, s.forward_start_time, s.forward_end_time, s.sample_start_time,
            s.sample_end_time, s.gpu_forward_time, s.gpu_sample_time, s.token_time);
    }
}

double raw_serialize_seconds(const LinePool& pool, std::size_t iterations, RawPath path)
{
    asio::io_context ctx;
    // No directory: an inert writer, used only for its serialize() (and its validator).
    jsonlw::RawJsonWriter w(ctx.get_executor(), jsonlw::WriterOptions{},
                            jsonlw::RawJsonOptions{.validation = path == RawPath::trusted
                                                                     ? jsonlw::RawJsonValidation::trusted
                                                                     : jsonlw::RawJsonValidation::full});
    std::vector<jsonlw::RawJsonText> recs;
    // The batch path takes batches of 64 consecutive records: a smaller pool is repeated.
    const std::size_t count = path == RawPath::batch ? std::max<std::size_t>(64, pool.lines.size())
                                                     : pool.lines.size();
    for (std::size_t i = 0; i < count; ++i) {
        const std::string& l = pool.lines[i % pool.lines.size()];
        if (path == RawPath::batch) {  // as submit(std::string_view) queues it: in the record
            recs.emplace_back(std::string_view(l));
            continue;
        }
        // A moved-in string (submit(std::string&&)): spare capacity for simdjson's padding
        // lets it parse in place instead of copying.
        std::string s;
        if (path == RawPath::alone_padded) s.reserve(l.size() + simdjson::SIMDJSON_PADDING);
        s.assign(l);
        recs.emplace_back(std::move(s));
    }
    jsonlw::LineBuffer buf;
    const auto loop = [&](std::size_t n) {
        if (path == RawPath::batch) serialize_loop_raw_batch(w, recs, n, buf);
        else serialize_loop_raw(w, recs, n, buf);
    };
    loop(64);  // warm the parser's buffers
    const double t0 = thread_cpu_seconds();
    loop(iterations);
    return thread_cpu_seconds() - t0;
}

double memcpy_line_seconds(const LinePool& pool, std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    serialize_loop_memcpy(pool.lines, 64, buf);
    const double t0 = thread_cpu_seconds();
    serialize_loop_memcpy(pool.lines, iterations, buf);
    return thread_cpu_seconds() - t0;
}

double jsonline_seed_seconds(std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    serialize_loop_jsonline(seed_record(), 64, buf);
    const double t0 = thread_cpu_seconds();
    serialize_loop_jsonline(seed_record(), iterations, buf);
    return thread_cpu_seconds() - t0;
}

double fmt_seed_seconds(std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    serialize_loop_fmt(seed_record(), 64, buf);
    const double t0 = thread_cpu_seconds();
    serialize_loop_fmt(seed_record(), iterations, buf);
    return thread_cpu_seconds() - t0;
}

std::string jsonline_seed_line()
{
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    build_seed(line, seed_record());
    return std::string(line.view());
}

double writer_serialize_seconds(const WriterWorkload& wl, std::size_t iterations)
{
    jsonlw::LineBuffer buf;
    if (wl.kind == WriterWorkload::Kind::perf_metrics) {
        const auto& rec = *static_cast<const jsonlw::PerfMetricsRecord*>(wl.records.get());
        serialize_loop_perf(rec, 64, buf);
        const double t0 = thread_cpu_seconds();
        serialize_loop_perf(rec, iterations, buf);
        return thread_cpu_seconds() - t0;
    }
    const auto& o = *static_cast<const RawOutputShape*>(wl.records.get());
    // The record the hook builds from the workload's 4 chunks.
    jsonlw::RawOutputRecord rec;
    rec.request_id = raw_output_first_id;
    rec.started_at = rec.finished_at = jsonlw::WallClock::now();
    rec.streaming = true;
    rec.frames_text = o.text;
    for (std::size_t j = 1; j <= 4; ++j)
        if (o.text_at[j] > o.text_at[j - 1]) rec.frame_ends.push_back(o.text_at[j]);
    rec.token_ids = o.tokens;
    asio::io_context ctx;
    LogTally logs;  // no directory: one warning, swallowed
    RawOutputProbe probe(ctx.get_executor(), jsonlw::RawOutputOptions{.log = logs.sink()});
    serialize_loop_raw_output(probe, rec, 64, buf);
    const double t0 = thread_cpu_seconds();
    serialize_loop_raw_output(probe, rec, iterations, buf);
    return thread_cpu_seconds() - t0;
}

}  // namespace bench
