// What a server gets from the writers after closing them, async_close_all, and the
// perf-metrics clock helpers (docs/writers.md, "Shutting down").
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/close_all.hpp>
#include <jsonlw/perf_metrics_clock.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_json_writer.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/request_trace_writer.hpp>

#include "harness.hpp"

#include <boost/asio/use_future.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

jsonlw::LogSink quiet()
{
    return [](jsonlw::LogLevel, std::string_view) {};
}

std::size_t lines_under(const std::filesystem::path& dir)
{
    std::size_t n = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
        if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line);) ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("async_close_all closes the three writers at once and hands back each one's report",
          "[writers][close_all]")
{
    jsonlw_test::Harness h;
    jsonlw::PerfMetricsWriter perf(h.executor(), h.dir.path() / "perf", "server", {.log = quiet()});
    jsonlw::RawOutputWriter raw(h.executor(), {.directory = h.dir.path() / "raw", .log = quiet()});
    jsonlw::RequestTraceWriter trace(h.executor(),
                                     {.directory = h.dir.path() / "trace", .log = quiet()});
    perf.start(), raw.start(), trace.start();
    h.loop.start();

    perf.submit(jsonlw::worker_record("1", {}));
    const std::int32_t id = 5;
    raw.on_chunk({.request_id = 1, .text_diff = "a", .token_ids_diff = {&id, 1}, .is_final = true});
    trace.record_request({.trace_id = "tr_1", .route = "/"});
    trace.record_response({.trace_id = "tr_1"});

    auto done = jsonlw::async_close_all(boost::asio::use_future, perf, raw, trace);
    const std::array<jsonlw::CloseReport, 3> reports = done.get();
    CHECK(reports[0].stats.written == 1);
    CHECK(reports[1].stats.written == 1);
    CHECK(reports[2].stats.written == 2);
    for (const jsonlw::CloseReport& r : reports) {
        CHECK(r.drained);
        CHECK(r.stats.pending == 0);
    }
    CHECK(lines_under(h.dir.path()) == 4);
}

TEST_CASE("async_close_all with a callback completes on the loop once, after the last writer",
          "[writers][close_all]")
{
    jsonlw_test::TempDir dir;
    boost::asio::io_context io;
    jsonlw::RawJsonWriter a(io.get_executor(), {.directory = dir.path(), .stem = "a", .log = quiet()});
    jsonlw::RawJsonWriter b(io.get_executor(), {.directory = dir.path(), .stem = "b", .log = quiet()});
    a.start(), b.start();
    a.submit(R"({"x":1})");
    b.submit(R"({"x":2})");
    b.submit(R"({"x":3})");
    int calls = 0;
    std::array<std::uint64_t, 2> written{};
    jsonlw::async_close_all([&](jsonlw::error_code ec, std::array<jsonlw::CloseReport, 2> r) {
        ++calls;
        CHECK(!ec);
        written = {r[0].stats.written, r[1].stats.written};
    }, a, b);
    io.run();  // returns only once the completion has run: it kept the loop busy
    CHECK(calls == 1);
    CHECK(written == std::array<std::uint64_t, 2>{1, 2});
}

TEST_CASE("after close, submit and record_* refuse the record as closed and count it",
          "[writers][after_close]")
{
    jsonlw_test::Harness h;
    jsonlw::PerfMetricsWriter perf(h.executor(), h.dir.path() / "perf", "server", {.log = quiet()});
    jsonlw::RequestTraceWriter trace(h.executor(),
                                     {.directory = h.dir.path() / "trace", .log = quiet()});
    perf.start(), trace.start();
    h.loop.start();
    jsonlw::async_close_all(boost::asio::use_future, perf, trace).get();

    CHECK(perf.submit(jsonlw::worker_record("1", {})) == jsonlw::SubmitResult::closed);
    CHECK(trace.record_request({.trace_id = "tr_1"}) == jsonlw::SubmitResult::closed);
    CHECK(trace.record_response({.trace_id = "tr_1"}) == jsonlw::SubmitResult::closed);
    CHECK(perf.stats().dropped.closed == 1);
    CHECK(trace.stats().dropped.closed == 2);
    CHECK(perf.stats().submitted == 1);  // counted: the accounting invariant still holds
    CHECK(perf.stats().written == 0);
}

TEST_CASE("after close, on_chunk writes nothing: a final chunk's record is counted as closed",
          "[writers][after_close]")
{
    jsonlw_test::Harness h;
    jsonlw::RawOutputWriter raw(h.executor(), {.directory = h.dir.path(), .log = quiet()});
    raw.start();
    h.loop.start();
    const std::int32_t id = 5;
    raw.on_chunk({.request_id = 1, .text_diff = "a", .token_ids_diff = {&id, 1}});  // in flight
    const jsonlw::CloseReport report = raw.async_close(boost::asio::use_future).get();
    CHECK(report.stats.written == 1);  // the output in flight, written as partial "shutdown"
    CHECK(raw.counters().partial == 1);

    // A new output after close is not kept (it could never be written), so nothing of it
    // waits in memory; its final chunk is refused by the closed queue and counted.
    raw.on_chunk({.request_id = 4, .text_diff = "c", .token_ids_diff = {&id, 1}});
    CHECK(raw.counters().chunks_after_close == 1);
    CHECK(raw.pending_outputs() == 0);
    raw.on_chunk({.request_id = 2, .text_diff = "b", .token_ids_diff = {&id, 1}, .is_final = true});
    raw.on_request_end(3, "error");  // unknown request: harmless
    CHECK(raw.stats().dropped.closed == 1);
    CHECK(raw.stats().written == 1);
    CHECK(raw.counters().finished == 1);
    CHECK(lines_under(h.dir.path()) == 1);
}

TEST_CASE("steady_seconds gives steady-clock seconds, and nullopt for an unset time point",
          "[writers][perf_metrics]")
{
    using namespace std::chrono_literals;
    const std::chrono::steady_clock::time_point t(1500ms);
    CHECK(jsonlw::steady_seconds(t) == 1.5);
    CHECK_FALSE(jsonlw::steady_seconds({}).has_value());

    const jsonlw::PerfMetricsRecord rec = jsonlw::worker_record("7", {.arrival = t, .last_token = t + 250ms});
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    jsonlw::serialize_perf_metrics(rec, line);
    CHECK(line.view() == R"({"request_id":7,"perf_metrics":{"timing_metrics":{"arrival_time":1.5,)"
                         R"("last_token_time":1.75}},"status":"complete"})");
}
