// The configured writers' workloads: the seed record (the aggregated worker example of
// support/perf_metrics_reference.hpp, with more decode steps) for
// PerfMetricsWriter, and raw outputs calibrated through RawOutputWriter's real hook.
#include "writer_workloads.hpp"

#include "line_pool.hpp"
#include "perf_metrics_reference.hpp"
#include "runs.hpp"

#include <jsonlw/perf_metrics_writer.hpp>

#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <memory>
#include <span>
#include <string_view>

namespace bench {

using jsonlw::Overflow;

jsonlw::RawOutputRecord raw_output_record(const RawOutputShape& o)
{
    jsonlw::RawOutputRecord rec;
    rec.request_id = raw_output_first_id;
    rec.started_at = rec.finished_at = jsonlw::WallClock::now();
    rec.streaming = true;
    rec.frames_text = o.text;
    for (std::size_t j = 1; j <= 4; ++j)
        if (o.text_at[j] > o.text_at[j - 1]) rec.frame_ends.push_back(o.text_at[j]);
    rec.token_ids = o.tokens;
    return rec;
}

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
    return jsonlw::RawOutputOptions{{.directory = dir,
                                     .overflow = Overflow::block,
                                     .block_timeout = std::chrono::hours(1),
                                     .shutdown_timeout = std::chrono::hours(1),
                                     .log = logs.sink()}};
}

WriterWorkload perf_metrics_workload(std::size_t extra_steps)
{
    auto rec = std::make_shared<jsonlw::PerfMetricsRecord>(
        perf_metrics_reference::seed_worker_record(extra_steps));
    WriterWorkload w;
    w.kind = WriterWorkload::Kind::perf_metrics;
    w.name = "PerfMetricsWriter";
    w.lines.lines.push_back(perf_metrics_reference::line_of(*rec));
    w.lines.line_bytes = w.lines.lines.front().size() + 1;
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

}  // namespace bench
