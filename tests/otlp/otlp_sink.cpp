// Scenarios: a writer whose format is otlp hands its sink one OTLP LogsData JSON line per group
// of records — resource, scope, one log record per record, the record as a structured body —
// and counts exactly what its sink reports for that line (docs/otlp.md).
#include "common.hpp"

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/otlp_sink.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

using namespace jsonlw;
using namespace jsonlw_test;

namespace {

std::uint64_t unix_now_ns()
{
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

// The value of the first "observedTimeUnixNano" in `line` (every record of a line has the
// same one), checked to lie within [lo, hi].
std::string observed(const std::string& line, std::uint64_t lo, std::uint64_t hi)
{
    const std::string key = "\"observedTimeUnixNano\":\"";
    const auto at = line.find(key);
    REQUIRE(at != std::string::npos);
    const auto end = line.find('"', at + key.size());
    const std::string v = line.substr(at + key.size(), end - at - key.size());
    const std::uint64_t ns = std::stoull(v);
    CHECK(ns >= lo);
    CHECK(ns <= hi);
    return v;
}

std::string host()
{
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

std::string prefix(std::string_view service)
{
    return "{\"resourceLogs\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":"
           "{\"stringValue\":\"" + std::string(service) + "\"}},{\"key\":\"host.name\",\"value\":"
           "{\"stringValue\":\"" + host() + "\"}},{\"key\":\"process.pid\","
           "\"value\":{\"intValue\":\"" + std::to_string(::getpid()) + "\"}}]},\"scopeLogs\":[{"
           "\"scope\":{\"name\":\"jsonlw\",\"version\":\"" + std::string(version_string) +
           "\"},\"logRecords\":[";
}

// A writer's surroundings whose options send OTLP lines to a MemorySink.
struct OtlpToMemory {
    WriterOptions options() const
    {
        WriterOptions o = h.options();
        o.sink = mem;
        o.format = LineFormat::otlp;
        return o;
    }

    // Starts the writer with its records queued, so they go as one batch, and flushes: the one
    // line the sink got, and its observedTimeUnixNano, checked to lie within the flush.
    template <class W>
    std::pair<std::string, std::string> start_for_one_line(W& w)
    {
        const std::uint64_t before = unix_now_ns();
        h.start(w);
        flush(w);
        const std::uint64_t after = unix_now_ns();
        const auto lines = mem->lines();
        REQUIRE(lines.size() == 1);
        std::string line = lines[0].text;
        std::string t = observed(line, before, after);
        return {std::move(line), std::move(t)};
    }

    Harness h;
    std::shared_ptr<MemorySink> mem = std::make_shared<MemorySink>();
};

// Queues rec(0) .. rec(first - 1) before the writer starts, so they go as one batch (one OTLP
// line), flushes, then submits rec(first) .. rec(total - 1).
template <class W>
void two_batches(Harness& h, W& w, int first, int total)
{
    for (int i = 0; i < first; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.start(w);
    flush(w);
    for (int i = first; i < total; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
}

// The writer's one file, read whole.
template <class W>
std::string only_file(const W& w)
{
    const auto files = w.files();
    REQUIRE(files.size() == 1);
    return read_file(files[0]);
}

}  // namespace

TEST_CASE("A writer with format otlp hands its sink one LogsData line per batch, a log record per record")
{
    OtlpToMemory otlp;
    WriterOptions o = otlp.options();
    o.otlp.service_name = "svc";
    o.otlp.event_name = "test.event";
    TestWriter w(otlp.h.executor(), o);
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    const auto [line, t] = otlp.start_for_one_line(w);
    std::string want = prefix("svc");
    for (int i = 0; i < 3; ++i) {
        if (i) want += ",";
        want += "{\"observedTimeUnixNano\":\"" + t +
                "\",\"severityNumber\":9,\"severityText\":\"INFO\",\"body\":{\"kvlistValue\":{"
                "\"values\":[{\"key\":\"id\",\"value\":{\"intValue\":\"" + std::to_string(i) +
                "\"}},{\"key\":\"text\",\"value\":{\"stringValue\":\"r" + std::to_string(i) +
                "\"}},{\"key\":\"value\",\"value\":{\"doubleValue\":0.0}}]}},"
                "\"eventName\":\"test.event\"}";
    }
    want += "]}]}]}";
    CHECK(line == want);
    const WriterStats st = w.stats();
    CHECK(st.written == 3);
    CHECK(st.bytes == line.size() + 1);
    CHECK(st.batches == 1);
}

TEST_CASE("Every JSON type of a record becomes its AnyValue; traceparent becomes traceId, spanId and flags")
{
    OtlpToMemory otlp;
    WriterOptions o = otlp.options();
    o.otlp = {.service_name = "s\"q",
              .event_name = "e",
              .event_name_field = "kind",
              .time_fields = {{"/missing", OtlpTimeField::Kind::iso8601_utc},
                              {"/t", OtlpTimeField::Kind::iso8601_utc}},
              .attributes = {{"gen_ai.request.model", "/nested/model"},
                             {"absent", "/nope"},
                             {"null.one", "/z"}}};
    RawJsonWriter w(otlp.h.executor(), o);
    REQUIRE(w.submit(RawJsonText(
                R"({"kind":"request","t":"2026-11-04T05:06:08.623456+00:00","i":-7,"u":18446744073709551615,)"
                R"("d":1.5,"b":true,"z":null,"s":"a\"\\\n\u00e9\ud83d\ude00","arr":[1,"x",[],{}],)"
                R"("nested":{"model":"m1","k":[false]},)"
                R"("traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})")) ==
            SubmitResult::accepted);
    REQUIRE(w.submit(RawJsonText(R"({"t":"2000-02-29T23:59:59.123456789Z","traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"})")) ==
            SubmitResult::accepted);
    // RawJsonWriter compacts what it is given (whitespace gone, \u00e9 decoded, \/ kept).
    REQUIRE(w.submit(RawJsonText(R"({ "kind" : "response", "s" : "é\/", "n" : [ 1 , 2.5 ] ,)"
                                 R"( "nested" : { "model" : "m2" }, "traceparent" : "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" })")) ==
            SubmitResult::accepted);
    const auto [line, t] = otlp.start_for_one_line(w);
    const std::string want =
        prefix("s\\\"q") +
        R"({"observedTimeUnixNano":")" + t +
        R"(","severityNumber":9,"severityText":"INFO","body":{"kvlistValue":{"values":[)"
        R"({"key":"kind","value":{"stringValue":"request"}},)"
        R"({"key":"t","value":{"stringValue":"2026-11-04T05:06:08.623456+00:00"}},)"
        R"({"key":"i","value":{"intValue":"-7"}},)"
        R"({"key":"u","value":{"stringValue":"18446744073709551615"}},)"
        R"({"key":"d","value":{"doubleValue":1.5}},)"
        R"({"key":"b","value":{"boolValue":true}},)"
        R"({"key":"z","value":{}},)"
        // Strings keep the writer's escaping (copied, not re-encoded).
        R"({"key":"s","value":{"stringValue":"a\"\\\n\u00e9\ud83d\ude00"}},)"
        R"({"key":"arr","value":{"arrayValue":{"values":[{"intValue":"1"},{"stringValue":"x"},)"
        R"({"arrayValue":{"values":[]}},{"kvlistValue":{"values":[]}}]}}},)"
        R"({"key":"nested","value":{"kvlistValue":{"values":[{"key":"model","value":{"stringValue":"m1"}},)"
        R"({"key":"k","value":{"arrayValue":{"values":[{"boolValue":false}]}}}]}}}]}},)"
        R"("timeUnixNano":"1793768768623456000",)"
        R"("attributes":[{"key":"gen_ai.request.model","value":{"stringValue":"m1"}}],)"
        R"("flags":1,"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",)"
        R"("eventName":"e.request"},)"
        // An invalid traceparent (all-zero trace id) stays in the body; no kind: the bare name.
        R"({"observedTimeUnixNano":")" + t +
        R"(","severityNumber":9,"severityText":"INFO","body":{"kvlistValue":{"values":[)"
        R"({"key":"t","value":{"stringValue":"2000-02-29T23:59:59.123456789Z"}},)"
        R"({"key":"traceparent","value":{"stringValue":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}}]}},)"
        R"("timeUnixNano":"951868799123456789","eventName":"e"},)"
        R"({"observedTimeUnixNano":")" + t +
        R"(","severityNumber":9,"severityText":"INFO","body":{"kvlistValue":{"values":[)"
        R"({"key":"kind","value":{"stringValue":"response"}},)"
        R"({"key":"s","value":{"stringValue":")" "\xc3\xa9" R"(\/"}},)"
        R"({"key":"n","value":{"arrayValue":{"values":[{"intValue":"1"},{"doubleValue":2.5}]}}},)"
        R"({"key":"nested","value":{"kvlistValue":{"values":[{"key":"model","value":{"stringValue":"m2"}}]}}}]}},)"
        R"("attributes":[{"key":"gen_ai.request.model","value":{"stringValue":"m2"}}],)"
        R"("flags":0,"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",)"
        R"("eventName":"e.response"}]}]}]})";
    CHECK(line == want);
    CHECK(w.stats().written == 3);
}

TEST_CASE("A record time that cannot be read leaves timeUnixNano out; steady seconds become Unix time")
{
    OtlpToMemory otlp;
    WriterOptions o = otlp.options();
    o.otlp = {.service_name = "s",
              .time_fields = {{"/iso", OtlpTimeField::Kind::iso8601_utc},
                              {"/steady", OtlpTimeField::Kind::steady_seconds},
                              {"/unix", OtlpTimeField::Kind::unix_seconds}}};
    RawJsonWriter w(otlp.h.executor(), o);
    const double steady_now =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    const std::uint64_t wall_at_steady = unix_now_ns();
    for (const std::string bad : {R"({"iso":"2026-11-04 05:06:08+00:00"})",
                                  R"({"iso":"2026-11-04T05:06:08+01:00"})",
                                  R"({"iso":"2026-02-30T05:06:08Z"})", R"({"iso":"1969-12-31T23:59:59Z"})",
                                  R"({"iso":"2026-11-04T05:06:08.1234567891Z"})", R"({"steady":0})",
                                  R"({"steady":-1.5})", R"({"unix":"12"})", R"({"iso":12})"})
        REQUIRE(w.submit(RawJsonText(bad)) == SubmitResult::accepted);
    REQUIRE(w.submit(RawJsonText(R"({"steady":)" + fmt::format("{}", steady_now) + "}")) ==
            SubmitResult::accepted);
    REQUIRE(w.submit(RawJsonText(R"({"unix":1700000000.25})")) == SubmitResult::accepted);
    otlp.h.start(w);
    flush(w);
    const std::string text = otlp.mem->text();
    std::size_t count = 0, at = 0;
    std::vector<std::uint64_t> times;
    while ((at = text.find("\"timeUnixNano\":\"", at)) != std::string::npos) {
        at += 16;
        times.push_back(std::stoull(text.substr(at, text.find('"', at) - at)));
        ++count;
    }
    REQUIRE(count == 2);  // only the last two records have a usable time
    // The steady reading and the wall reading were taken microseconds apart.
    CHECK(times[0] + 50'000'000 > wall_at_steady);
    CHECK(times[0] < wall_at_steady + 50'000'000);
    CHECK(times[1] == 1700000000250000000ull);
}

TEST_CASE("An OtlpSink given a line that is not a JSON object keeps it as a string body and counts it")
{
    auto mem = std::make_shared<MemorySink>();
    OtlpSink otlp(mem, OtlpOptions{.service_name = "s"});
    SinkContext ctx;
    ctx.host = "h";
    ctx.pid = 7;
    REQUIRE(!otlp.start(ctx));
    // A line with whitespace takes the general (DOM) path: strings re-escaped as JsonLine does.
    const std::string lines = "[1,2]\n{\"a\":1}\n{\"b\":\n"
                              "{ \"s\" : \"\\u00e9\\/\" , \"traceparent\" : "
                              "\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\" }\n";
    const AppendResult r = otlp.append("", Lines{lines, 4, 0});
    CHECK(r.records_written == 4);
    const std::string text = mem->text();
    CHECK(text ==
          R"({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}},)"
          R"({"key":"host.name","value":{"stringValue":"h"}},{"key":"process.pid","value":{"intValue":"7"}}]},)"
          R"("scopeLogs":[{"scope":{"name":"jsonlw","version":")" + std::string(version_string) +
              R"("},"logRecords":[)"
              R"({"observedTimeUnixNano":")" + observed(text, 1, ~0ull) +
              R"(","severityNumber":9,"severityText":"INFO","body":{"stringValue":"[1,2]"}},)"
              R"({"observedTimeUnixNano":")" + observed(text, 1, ~0ull) +
              R"(","severityNumber":9,"severityText":"INFO","body":{"kvlistValue":{"values":[{"key":"a","value":{"intValue":"1"}}]}}},)"
              R"({"observedTimeUnixNano":")" + observed(text, 1, ~0ull) +
              R"(","severityNumber":9,"severityText":"INFO","body":{"stringValue":"{\"b\":"}},)"
              R"({"observedTimeUnixNano":")" + observed(text, 1, ~0ull) +
              R"(","severityNumber":9,"severityText":"INFO","body":{"kvlistValue":{"values":[)"
              R"({"key":"s","value":{"stringValue":")" "\xc3\xa9/" R"("}}]}},)"
              R"("flags":1,"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7"}]}]}]})"
              "\n");
    CHECK(otlp.malformed_bodies() == 2);
}

TEST_CASE("An OTLP line that fails to land counts every record of its group failed")
{
    OtlpToMemory otlp;
    otlp.mem->fail_next(std::make_error_code(std::errc::no_space_on_device), 1);
    TestWriter w(otlp.h.executor(), otlp.options());
    two_batches(otlp.h, w, 4, 6);
    flush(w);
    const WriterStats st = w.stats();
    CHECK(st.dropped.write_error == 4);
    CHECK(st.written == 2);
    CHECK(otlp.mem->lines().size() == 1);
}

TEST_CASE("With the default FileSink the file holds the OTLP lines and the byte count is the file's size")
{
    Harness h;
    WriterOptions o = h.options();
    o.format = LineFormat::otlp;
    TestWriter w(h.executor(), o);
    two_batches(h, w, 5, 7);
    const CloseReport report = close(w);
    const std::string content = only_file(w);
    CHECK(report.stats.written == 7);
    CHECK(report.stats.bytes == content.size());
    CHECK(std::count(content.begin(), content.end(), '\n') == 2);
    std::size_t records = 0, at = 0;
    while ((at = content.find("\"observedTimeUnixNano\"", at)) != std::string::npos) ++records, ++at;
    CHECK(records == 7);
}

TEST_CASE("With a hash chain too, each OTLP line is sealed whole and every record counts written")
{
    Harness h;
    WriterOptions o = h.options();
    o.format = LineFormat::otlp;
    o.chain = ChainMode::sha256;
    TestWriter w(h.executor(), o);
    two_batches(h, w, 5, 8);
    const CloseReport report = close(w);
    CHECK(report.stats.written == 8);
    CHECK(report.stats.dropped.total() == 0);
    const std::string content = only_file(w);
    CHECK(report.stats.bytes == content.size());
    CHECK(std::count(content.begin(), content.end(), '\n') == 2);
    std::istringstream in(content);
    std::string prev(64, '0');
    CHECK_FALSE(verify_chain(in, ChainMode::sha256, std::nullopt, prev).has_value());
    CHECK(prev != std::string(64, '0'));
    // The key follows the LogsData's one member: {"resourceLogs":[…],"chain":"<64 hex>"}.
    CHECK(content.rfind("]}]}],\"chain\":\"", content.find('\n')) != std::string::npos);
}
