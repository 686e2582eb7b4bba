// PerfMetricsWriter as configured: TensorRT-LLM's Python writer's two configuration tests (a
// record without the server phase is dropped as malformed with one warning and no error; 65
// queued records are appended as 64 + 1), the file name and constants, and the bad-input and
// fault paths. Every line written is parsed back with simdjson and its fields checked.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/perf_metrics_writer.hpp>

#include "common.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <limits>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::PerfMetricsRecord;
using jsonlw::PerfMetricsWriter;
using jsonlw::SubmitResult;

namespace {

PerfMetricsRecord worker_record(std::string id, double arrival = 100.25)
{
    PerfMetricsRecord r;
    r.request_id = std::move(id);
    jsonlw::PhaseRecord p;
    p.timing_metrics.arrival_time = arrival;
    p.timing_metrics.first_token_time = arrival + 0.5;
    p.timing_metrics.last_token_time = arrival + 1.0;
    p.first_iter = 1;
    p.last_iter = 2;
    r.server = p;
    return r;
}

PerfMetricsRecord disagg_record(std::string disagg_id)
{
    PerfMetricsRecord r;
    r.request_id = "77";
    r.disagg_request_id = std::move(disagg_id);
    jsonlw::DisaggPhase d;
    d.ctx_server = "http://ctx0:8001";
    d.gen_server = "http://gen0:8002";
    d.timing_metrics.server_arrival_time = 50.0;
    d.timing_metrics.server_first_token_time = 50.5;
    r.disagg = d;
    jsonlw::PhaseRecord gen;
    gen.timing_metrics.arrival_time = 50.125;
    gen.timing_metrics.last_token_time = 51.0;
    r.gen = gen;
    return r;
}

jsonlw::PerfMetricsOptions extra(const LogCapture& logs,
                                 std::shared_ptr<jsonlw::FileIo> io = nullptr)
{
    jsonlw::PerfMetricsOptions o;
    o.log = logs.sink();
    o.file_io = std::move(io);
    return o;
}

struct Line {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    explicit Line(const std::string& text)
    {
        INFO(text);
        REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
        REQUIRE(doc.is_object());
    }
    std::int64_t integer(std::string_view ptr) const
    {
        INFO(ptr);
        std::int64_t v = 0;
        REQUIRE(doc.at_pointer(ptr).get_int64().get(v) == simdjson::SUCCESS);
        return v;
    }
    double num(std::string_view ptr) const
    {
        INFO(ptr);
        double v = 0;
        REQUIRE(doc.at_pointer(ptr).get_double().get(v) == simdjson::SUCCESS);
        return v;
    }
    std::string str(std::string_view ptr) const
    {
        INFO(ptr);
        std::string_view v;
        REQUIRE(doc.at_pointer(ptr).get_string().get(v) == simdjson::SUCCESS);
        return std::string(v);
    }
    bool has(std::string_view ptr) const
    {
        simdjson::dom::element e;
        return doc.at_pointer(ptr).get(e) == simdjson::SUCCESS;
    }
};

// A worker line written from worker_record(id, arrival): every field checked.
void check_worker_line(const std::string& text, std::int64_t id, double arrival = 100.25)
{
    const Line l(text);
    CHECK(l.integer("/request_id") == id);
    CHECK(l.num("/perf_metrics/timing_metrics/arrival_time") == arrival);
    CHECK(l.num("/perf_metrics/timing_metrics/first_token_time") == arrival + 0.5);
    CHECK(l.num("/perf_metrics/timing_metrics/last_token_time") == arrival + 1.0);
    CHECK_FALSE(l.has("/perf_metrics/timing_metrics/first_scheduled_time"));
    CHECK(l.integer("/perf_metrics/first_iter") == 1);
    CHECK(l.integer("/perf_metrics/last_iter") == 2);
    CHECK(l.str("/status") == "complete");
}

std::string hostname()
{
    char buf[HOST_NAME_MAX + 1] = {};
    ::gethostname(buf, sizeof buf - 1);
    return buf;
}

}  // namespace

TEST_CASE("A record without the server phase is dropped as malformed with one warning and no error",
          "[perf_metrics][malformed]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner io;
    PerfMetricsWriter w(io.executor(), dir.path(), "server", extra(logs));
    w.start();
    io.start();

    PerfMetricsRecord empty;  // TensorRT-LLM's test record {"phases": {}}
    empty.request_id = "41";
    CHECK(w.submit(empty) == SubmitResult::accepted);
    CHECK(w.submit(worker_record("42")) == SubmitResult::accepted);
    const auto report = close(w);

    CHECK(report.drained);
    CHECK(report.stats.submitted == 2);
    CHECK(report.stats.written == 1);
    CHECK(report.stats.dropped.malformed == 1);
    CHECK(report.stats.dropped.total() == 1);
    CHECK(invariant_holds(report.stats));

    INFO(logs.dump());
    CHECK(logs.count(LogLevel::warning) == 1);
    CHECK(logs.matching(LogLevel::warning) ==
          std::vector<std::string>{"Dropped malformed performance metrics record: 'server'"});
    CHECK(logs.count(LogLevel::error) == 0);

    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 1);
    check_worker_line(lines[0], 42);
}

TEST_CASE("65 queued records are appended as 64 + 1", "[perf_metrics][batching]")
{
    TempDir dir;
    LogCapture logs;
    auto seam = std::make_shared<SeamFileIo>();
    IoRunner io;  // not running yet: all 65 records are queued before the drain first runs
    PerfMetricsWriter w(io.executor(), dir.path(), "server", extra(logs, seam));
    w.start();
    for (int i = 0; i < 65; ++i)
        REQUIRE(w.submit(worker_record(std::to_string(i), 100.0 + i)) == SubmitResult::accepted);
    CHECK(w.stats().pending == 65);
    io.start();
    flush(w);

    CHECK(seam->successful_write_lines() == std::vector<std::size_t>{64, 1});
    const auto s = w.stats();
    CHECK(s.batches == 2);
    CHECK(s.written == 65);
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));

    const std::string content = read_file(w.file_path());
    CHECK(s.bytes == content.size());
    const auto calls = seam->writev_calls();
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].data + calls[1].data == content);

    const auto lines = split_lines(content);
    REQUIRE(lines.size() == 65);
    for (int i = 0; i < 65; ++i) check_worker_line(lines[i], i, 100.0 + i);
    close(w);
    CHECK(logs.count(LogLevel::warning) == 0);
    CHECK(logs.count(LogLevel::error) == 0);
}

TEST_CASE("The writer runs with TensorRT-LLM's constants and names its file perf_metrics-<kind>",
          "[perf_metrics]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner io;
    io.start();
    PerfMetricsWriter w(io.executor(), dir.path() / "nested" / "out", "disagg", extra(logs));
    CHECK(w.kind() == "disagg");
    const auto& o = w.options();
    CHECK(o.queue_capacity == 1024);
    CHECK(o.batch_records == 64);
    CHECK(o.shutdown_timeout == std::chrono::milliseconds(5000));
    CHECK(o.stem == "perf_metrics-disagg");
    CHECK(o.subject == "performance metrics");
    CHECK(o.durability == jsonlw::Durability::none);
    CHECK(o.overflow == jsonlw::Overflow::drop_newest);

    w.start();
    w.start();  // idempotent
    const std::string name = w.file_path().filename().string();
    const std::regex pattern("perf_metrics-disagg-" + hostname() + "-" +
                             std::to_string(::getpid()) + R"(-\d{8}T\d{6}Z\.jsonl)");
    CHECK(std::regex_match(name, pattern));
    CHECK(w.file_path().parent_path() == dir.path() / "nested" / "out");

    // Both shapes go to the one file, each in its own shape.
    CHECK(w.submit(disagg_record("1234")) == SubmitResult::accepted);
    CHECK(w.submit(worker_record("5")) == SubmitResult::accepted);
    close(w);
    CHECK(files_in(dir.path() / "nested" / "out") == std::vector<std::string>{name});
    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 2);
    {
        const Line l(lines[0]);
        CHECK_FALSE(l.has("/request_id"));
        CHECK(l.str("/ctx_server") == "http://ctx0:8001");
        CHECK(l.str("/gen_server") == "http://gen0:8002");
        CHECK(l.num("/disagg_server_arrival_time") == 50.0);
        CHECK(l.doc["disagg_ctx_dispatch_time"].is_null());
        CHECK(l.num("/disagg_server_first_token_time") == 50.5);
        CHECK(l.integer("/disagg_request_id") == 1234);
        CHECK_FALSE(l.has("/ctx_perf_metrics"));
        CHECK(l.integer("/gen_perf_metrics/request_id") == 77);
        CHECK(l.num("/gen_perf_metrics/perf_metrics/timing_metrics/arrival_time") == 50.125);
        CHECK(l.num("/gen_perf_metrics/perf_metrics/timing_metrics/last_token_time") == 51.0);
    }
    check_worker_line(lines[1], 5);
}

TEST_CASE("A record with a non-finite time is dropped alone and the rest of its batch is written",
          "[perf_metrics]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner io;
    PerfMetricsWriter w(io.executor(), dir.path(), "server", extra(logs));
    w.start();
    auto bad = worker_record("2");
    bad.server->timing_metrics.first_token_time = std::numeric_limits<double>::quiet_NaN();
    auto bad_disagg = disagg_record("3");
    bad_disagg.disagg->timing_metrics.ctx_dispatch_time = std::numeric_limits<double>::infinity();
    w.submit(worker_record("1"));
    w.submit(bad);
    w.submit(bad_disagg);
    w.submit(worker_record("4"));
    io.start();
    const auto report = close(w);

    CHECK(report.stats.written == 2);
    CHECK(report.stats.batches == 1);
    CHECK(report.stats.dropped.malformed == 2);
    CHECK(invariant_holds(report.stats));
    INFO(logs.dump());
    // The first malformed record is logged; later ones only at every 1000th.
    CHECK(logs.matching(LogLevel::warning) ==
          std::vector<std::string>{"Dropped malformed performance metrics record: non-finite "
                                   "number NaN in phases.server.timing_metrics.first_token_time"});
    CHECK(logs.count(LogLevel::error) == 0);
    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 2);
    check_worker_line(lines[0], 1);
    check_worker_line(lines[1], 4);
}

TEST_CASE("Invalid UTF-8 in a record is replaced and counted as sanitized", "[perf_metrics]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner io;
    io.start();
    PerfMetricsWriter w(io.executor(), dir.path(), "server", extra(logs));
    w.start();
    auto r = worker_record("chat-\xC3\x28-1");
    r.status = "complete";
    w.submit(r);
    const auto report = close(w);
    CHECK(report.stats.written == 1);
    CHECK(report.stats.sanitized == 1);
    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 1);
    const Line l(lines[0]);
    CHECK(l.str("/request_id") == "chat-\xEF\xBF\xBD(-1");
    CHECK(l.num("/perf_metrics/timing_metrics/arrival_time") == 100.25);
}

TEST_CASE("A full queue drops the newest records and logs the first drop", "[perf_metrics]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner io;  // not running: nothing leaves the queue until it is full
    PerfMetricsWriter w(io.executor(), dir.path(), "server", extra(logs));
    w.start();
    for (int i = 0; i < 1024; ++i)
        REQUIRE(w.submit(worker_record(std::to_string(i))) == SubmitResult::accepted);
    CHECK(w.submit(worker_record("1024")) == SubmitResult::dropped_queue_full);
    CHECK(w.submit(worker_record("1025")) == SubmitResult::dropped_queue_full);
    io.start();
    const auto report = close(w);
    CHECK(report.stats.written == 1024);
    CHECK(report.stats.batches == 16);
    CHECK(report.stats.dropped.queue_full == 2);
    CHECK(invariant_holds(report.stats));
    INFO(logs.dump());
    CHECK(logs.matching(LogLevel::warning) ==
          std::vector<std::string>{"Dropped 1 performance metrics records"});
    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 1024);
    CHECK(Line(lines.front()).integer("/request_id") == 0);
    CHECK(Line(lines.back()).integer("/request_id") == 1023);
}

TEST_CASE("A failed append drops its batch as write errors and the writer keeps going",
          "[perf_metrics]")
{
    TempDir dir;
    LogCapture logs;
    auto seam = std::make_shared<SeamFileIo>();
    seam->fail_writev(ENOSPC, 1);
    IoRunner io;
    PerfMetricsWriter w(io.executor(), dir.path(), "server", extra(logs, seam));
    w.start();
    w.submit(worker_record("1"));
    w.submit(worker_record("2"));
    io.start();
    flush(w);
    w.submit(worker_record("3"));
    const auto report = close(w);
    CHECK(report.stats.dropped.write_error == 2);
    CHECK(report.stats.written == 1);
    CHECK(invariant_holds(report.stats));
    INFO(logs.dump());
    CHECK(logs.count(LogLevel::warning, "Failed to write performance metrics JSONL") == 1);
    const auto lines = read_lines(w.file_path());
    REQUIRE(lines.size() == 1);
    check_worker_line(lines[0], 3);
}

TEST_CASE("A directory that cannot be created disables the writer with one error log",
          "[perf_metrics]")
{
    TempDir dir;
    write_file(dir / "plain-file", "x");
    LogCapture logs;
    IoRunner io;
    io.start();
    PerfMetricsWriter w(io.executor(), dir / "plain-file" / "sub", "server", extra(logs));
    w.start();
    CHECK(w.submit(worker_record("1")) == SubmitResult::disabled);
    INFO(logs.dump());
    CHECK(logs.count(LogLevel::error) == 1);
    CHECK(logs.count(LogLevel::error, "Disabling performance metrics JSONL output") == 1);
    CHECK(w.file_path().empty());
    CHECK(invariant_holds(w.stats()));
}

TEST_CASE("Without a directory the writer is inert", "[perf_metrics]")
{
    LogCapture logs;
    IoRunner io;
    io.start();
    PerfMetricsWriter w(io.executor(), {}, "server", extra(logs));
    w.start();
    CHECK(w.submit(worker_record("1")) == SubmitResult::disabled);
    close(w);
    CHECK(w.stats() == jsonlw::WriterStats{});
    CHECK(logs.size() == 0);
}

TEST_CASE("A kind that cannot be part of a file name is refused at construction",
          "[perf_metrics]")
{
    IoRunner io;
    for (const char* kind : {"", "a/b", "..\\x", "ser ver"})
        CHECK_THROWS_AS(PerfMetricsWriter(io.executor(), "/tmp/unused", kind),
                        std::invalid_argument);
    CHECK_NOTHROW(PerfMetricsWriter(io.executor(), "/tmp/unused", "gen.rank-0_1"));
}

TEST_CASE("The writer writes kv_cache_metrics with the counts the record holds, {} with none",
          "[perf_metrics]")
{
    TempDir dir;
    LogCapture logs;
    IoRunner io;
    io.start();
    PerfMetricsWriter w(io.executor(), dir.path(), "server", extra(logs));
    w.start();
    using jsonlw::KvCacheCounts;
    const KvCacheCounts cases[] = {KvCacheCounts::none, KvCacheCounts::num_reused_blocks,
                                   KvCacheCounts::all};
    for (int i = 0; i < 3; ++i) {
        PerfMetricsRecord r = worker_record(std::to_string(i));
        r.server->kv_cache_metrics = jsonlw::KvCacheMetrics{1, 2, 3, 4, 0.5};
        r.server->kv_cache_metrics->counts = cases[i];
        REQUIRE(w.submit(r) == SubmitResult::accepted);
    }
    close(w);
    const std::string head = R"(,"perf_metrics":{"timing_metrics":{"arrival_time":100.25,)"
                             R"("first_token_time":100.75,"last_token_time":101.25},)"
                             R"("first_iter":1,"last_iter":2,"kv_cache_metrics":)";
    CHECK(read_file(w.file_path()) ==
          R"({"request_id":0)" + head + R"({}},"status":"complete"})" "\n"
          R"({"request_id":1)" + head + R"({"num_reused_blocks":3}},"status":"complete"})" "\n"
          R"({"request_id":2)" + head +
              R"({"num_total_allocated_blocks":1,"num_new_allocated_blocks":2,)"
              R"("num_reused_blocks":3,"num_missed_blocks":4}},"status":"complete"})" "\n");
    CHECK(logs.count(LogLevel::warning) == 0);
}
