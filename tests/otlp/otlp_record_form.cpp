// Scenarios: a writer whose format is otlp writes each record straight as an OTLP log record
// (OtlpRecordForm, JsonLine's OTLP mode) — and what it writes is, byte for byte, what the
// OtlpSink's conversion of the same record's JSON Lines makes, for every JsonLine call, every
// JSON type, the traceparent rules, the time, attribute and event-name pointers (inside arrays,
// containers and raw JSON too), and records that are not one object built call by call.
// Misuse in that mode is a counted malformed record; serializer threads and a per-key layout's
// append(path) get OTLP too (docs/otlp.md).
#include "common.hpp"

#include <jsonlw/detail/otlp_record_form.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/otlp_sink.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <regex>
#include <string>
#include <vector>

using namespace jsonlw;
using namespace jsonlw::literals;
using namespace jsonlw_test;

namespace {

using Write = std::function<void(JsonLine&)>;

// Every record's observedTimeUnixNano set to 0: the two ways read the clock at other moments.
std::string without_observed(const std::string& s)
{
    static const std::regex observed(R"re("observedTimeUnixNano":"[0-9]+")re");
    return std::regex_replace(s, observed, R"("observedTimeUnixNano":"0")");
}

struct BothWays {
    std::string converted;  // JSON Lines, converted by the OtlpSink
    std::string direct;     // the LogsData line written by the form (the OtlpSink passes it on)
    std::vector<bool> sanitized_converted, sanitized_direct;
    std::uint64_t malformed_converted = 0, malformed_direct = 0;
};

BothWays both_ways(const OtlpOptions& opts, const std::vector<Write>& records)
{
    SinkContext ctx;
    ctx.host = "h";
    ctx.pid = 7;
    BothWays out;

    LineBuffer lines;
    for (const Write& w : records) {
        JsonLine l(lines);
        w(l);
        out.sanitized_converted.push_back(l.sanitized());
        lines.push_back('\n');
    }
    auto converted = std::make_shared<MemorySink>();
    OtlpSink sink1(converted, opts);
    REQUIRE(!sink1.start(ctx));
    REQUIRE(sink1.append("", Lines{{lines.data(), lines.size()}, records.size(), 0}).records_written ==
            records.size());
    out.converted = without_observed(converted->text());
    out.malformed_converted = sink1.malformed_bodies();

    detail::OtlpRecordForm form(opts);
    form.start(ctx.host, ctx.pid);
    LineBuffer log_records;
    form.open_document(log_records);
    for (const Write& w : records) {
        const std::size_t body = log_records.size();
        JsonLine l(log_records, &form);
        w(l);
        form.finish(log_records, body);
        out.sanitized_direct.push_back(l.sanitized());
        log_records.push_back(',');
    }
    form.close_document(log_records, 0, records.size());
    auto direct = std::make_shared<MemorySink>();
    OtlpSink sink2(direct, opts);
    REQUIRE(!sink2.start(ctx));
    REQUIRE(sink2.append("", Lines{{log_records.data(), log_records.size()}, records.size(), 0, true})
                .records_written == records.size());
    out.direct = without_observed(direct->text());
    CHECK(out.direct == without_observed(std::string(log_records.data(), log_records.size())));  // passed on as it is
    out.malformed_direct = form.malformed_bodies();
    return out;
}

// A harness writer's options with format otlp, its lines going to `mem`.
WriterOptions otlp_to(Harness& h, const std::shared_ptr<MemorySink>& mem)
{
    WriterOptions o = h.options();
    o.sink = mem;
    o.format = LineFormat::otlp;
    return o;
}

// How many log records `text` holds.
std::size_t log_records(const std::string& text)
{
    std::size_t n = 0;
    for (std::size_t at = 0; (at = text.find("\"observedTimeUnixNano\"", at)) != std::string::npos; ++at) ++n;
    return n;
}

const char* const valid_tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

}  // namespace

TEST_CASE("Records written in OTLP form are byte for byte what the sink's conversion of their JSON Lines makes")
{
    const OtlpOptions opts{
        .service_name = "svc",
        .event_name = "e",
        .event_name_field = "kind",
        .time_fields = {{"/missing", OtlpTimeField::Kind::iso8601_utc},
                        {"/arr/0/t", OtlpTimeField::Kind::iso8601_utc},  // inside an array: never
                        {"/nested/deep/ts", OtlpTimeField::Kind::unix_seconds},
                        {"/t", OtlpTimeField::Kind::iso8601_utc}},
        .attributes = {{"gen_ai.request.model", "/nested/model"},
                       {"list", "/nested/k"},        // an array: its AnyValue
                       {"obj", "/nested/deep"},      // an object: its AnyValue
                       {"in.raw", "/raw/n"},         // inside raw JSON: looked up there
                       {"raw.whole", "/raw"},
                       {"null.one", "/z"},
                       {"absent", "/nope"},
                       {"odd/key", "/k~1x~0y"},      // RFC 6901 escapes: the key k/x~y
                       {"dup", "/dup"}}};
    const std::vector<Write> records = {
        // Every JsonLine call and JSON type, a valid traceparent in the middle.
        [](JsonLine& l) {
            l.begin_object().field("kind"_key, std::string_view("request"));
            l.field("t", "2026-11-04T05:06:08.5Z").field("i"_key, -7).field("i0", 0);
            l.key("u").value(std::numeric_limits<std::uint64_t>::max());
            l.key("u5").value(std::uint64_t{5}).field("d"_key, 1.5).field("d2", 1000.0);
            l.key("nan").number_or_null(std::nan("")).field("b", true).key("z").null();
            l.field("traceparent", valid_tp);
            l.field("s", std::string_view("a\"\\\n\t\x01 \xc3\xa9 \xf0\x9f\x98\x80"));
            l.field("bad", std::string_view("a\xff" "b\xe2\x82"));  // invalid UTF-8: replaced
            l.key("arr").begin_array().value(1).value("x").begin_array().end_array();
            l.begin_object().end_object().begin_object().field("t", "2001-01-01T00:00:00Z").end_object();
            l.end_array();
            l.key("nested").begin_object().field("model", "m1").key("k").begin_array().value(false).end_array();
            l.key("deep").begin_object().field("ts", 1700000000.25).end_object().end_object();
            l.key("raw").raw(R"({"a":[1,{"b":"c"}],"n":2.5e3})");
            l.key("k/x~y").value(3).key("k\"ey").value(3).key("\xc3\xa9t\xc3\xa9").value(4);
            l.field("dup", 1).field("dup", 2).field("f", 0.1f);
            l.end_object();
        },
        // An invalid traceparent (all-zero trace id) stays in the body, as the first member.
        [](JsonLine& l) {
            l.begin_object().field("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01");
            l.field("t", "2000-02-29T23:59:59.123456789Z").end_object();
        },
        // A traceparent that is not a string stays; a nested one is an ordinary member.
        [](JsonLine& l) {
            l.begin_object().field("traceparent", 5).key("o").begin_object();
            l.field("traceparent", valid_tp).end_object().field("kind", 7).end_object();
        },
        // A valid traceparent as the only member: an empty body.
        [](JsonLine& l) { l.begin_object().field("traceparent", valid_tp).end_object(); },
        [](JsonLine& l) { l.begin_object().end_object(); },
        // A record given as JSON text (RawJsonWriter's way), with whitespace (the DOM path).
        [](JsonLine& l) { l.raw(R"({"kind":"response","t":"2026-01-01T00:00:00Z","traceparent":")" +
                                std::string(valid_tp) + R"("})"); },
        [](JsonLine& l) { l.raw(R"({ "kind" : "x", "s" : "\u00e9\/" })"); },
        // Not an object: a stringValue body, counted.
        [](JsonLine& l) { l.begin_array().value(1).value(2).end_array(); },
        [](JsonLine& l) { l.value("just a string"); },
    };
    const BothWays r = both_ways(opts, records);
    CHECK(r.direct == r.converted);
    CHECK(r.sanitized_direct == r.sanitized_converted);
    CHECK(r.sanitized_direct == std::vector<bool>{true, false, false, false, false, false, false, false, false});
    CHECK(r.malformed_direct == 2);
    CHECK(r.malformed_converted == 2);
    // What both wrote, in part: the first record's tail.
    CHECK(r.direct.find(R"("timeUnixNano":"1700000000250000000","attributes":[)"
                        R"({"key":"gen_ai.request.model","value":{"stringValue":"m1"}},)"
                        R"({"key":"list","value":{"arrayValue":{"values":[{"boolValue":false}]}}},)"
                        R"({"key":"obj","value":{"kvlistValue":{"values":[{"key":"ts","value":{"doubleValue":1700000000.25}}]}}},)"
                        R"({"key":"in.raw","value":{"doubleValue":2.5e3}},)"
                        R"({"key":"raw.whole","value":{"kvlistValue":{"values":[{"key":"a","value":{"arrayValue":{"values":[{"intValue":"1"},{"kvlistValue":{"values":[{"key":"b","value":{"stringValue":"c"}}]}}]}}},{"key":"n","value":{"doubleValue":2.5e3}}]}}},)"
                        R"({"key":"odd/key","value":{"intValue":"3"}},)"
                        R"({"key":"dup","value":{"intValue":"1"}}],)"
                        R"("flags":1,"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",)"
                        R"("eventName":"e.request"})") != std::string::npos);
    CHECK(r.direct.find(R"({"key":"u","value":{"stringValue":"18446744073709551615"}})") != std::string::npos);
    CHECK(r.direct.find(R"({"key":"nan","value":{}})") != std::string::npos);
}

TEST_CASE("In OTLP form an object left open, a second value or a key in an array is a malformed record")
{
    detail::OtlpRecordForm form(OtlpOptions{});
    LineBuffer buf;
    {
        JsonLine l(buf, &form);
        l.begin_object().field("a", 1);
        CHECK_THROWS_AS(form.finish(buf, 0), MalformedRecord);
    }
    buf.clear();
    {
        JsonLine l(buf, &form);
        l.begin_object().end_object();
        CHECK_THROWS_AS(l.begin_object(), MalformedRecord);
    }
    buf.clear();
    {
        JsonLine l(buf, &form);
        l.begin_object().key("a").begin_array();
        CHECK_THROWS_AS(l.key("b"), MalformedRecord);
    }
    buf.clear();
    {
        JsonLine l(buf, &form);
        l.begin_object().key("a").begin_array();
        CHECK_THROWS_AS(l.end_object(), MalformedRecord);
    }
    buf.clear();
    {
        JsonLine l(buf, &form);
        l.begin_object().key("r");
        CHECK_THROWS_AS(l.raw("{\"a\":"), MalformedRecord);
    }
    buf.clear();
    {  // the form is whole again for the next record
        JsonLine l(buf, &form);
        l.begin_object().field("a", 1).end_object();
        form.finish(buf, 0);
        CHECK(std::string(buf.data(), buf.size()).find(R"("body":{"kvlistValue":{"values":[{"key":"a","value":{"intValue":"1"}}]}}})") !=
              std::string::npos);
    }
}

TEST_CASE("A writer in OTLP form drops a malformed record and writes every other one in its batch's line")
{
    Harness h;
    auto mem = std::make_shared<MemorySink>();
    TestWriter w(h.executor(), otlp_to(h, mem));
    for (int i = 0; i < 5; ++i) {
        Rec r = rec(i);
        r.throw_malformed = i == 2;
        REQUIRE(w.submit(r) == SubmitResult::accepted);
    }
    h.start(w);
    flush(w);
    const auto lines = mem->lines();
    REQUIRE(lines.size() == 1);
    const std::string& line = lines[0].text;
    CHECK(log_records(line) == 4);
    for (int i : {0, 1, 3, 4})
        CHECK(line.find(R"({"key":"text","value":{"stringValue":"r)" + std::to_string(i) + "\"}}") != std::string::npos);
    CHECK(line.find("\"r2\"") == std::string::npos);
    const WriterStats st = w.stats();
    CHECK(st.written == 4);
    CHECK(st.dropped.malformed == 1);
}

TEST_CASE("With 3 serializer threads in OTLP form every record is written once, in order")
{
    Harness h;
    auto mem = std::make_shared<MemorySink>();
    WriterOptions o = otlp_to(h, mem);
    o.serializer_threads = 3;
    o.batch_records = 16;
    o.queue_capacity = 600;
    TestWriter w(h.executor(), o);
    w.declare_concurrent();
    w.gate_serialize(3);
    for (int i = 0; i < 600; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.start(w);
    const CloseReport report = close(w);
    CHECK(report.stats.written == 600);
    CHECK(w.serialize_threads().size() == 3);
    const std::string text = mem->text();
    std::size_t at = 0;
    int next = 0;
    const std::string key = R"({"key":"id","value":{"intValue":")";
    while ((at = text.find(key, at)) != std::string::npos) {
        at += key.size();
        CHECK(std::stoi(text.substr(at, text.find('"', at) - at)) == next);
        ++next;
    }
    CHECK(next == 600);
}

TEST_CASE("A per-key layout's append(path) under format otlp writes each group as one OTLP line")
{
    Harness h;
    WriterOptions o = h.options();
    o.format = LineFormat::otlp;
    RoutedWriter w(h.executor(), o, RoutedWriter::by_key(h.dir.path()));
    for (int i = 0; i < 6; ++i) {
        Rec r = rec(i);
        r.key = i % 2 ? "odd" : "even";
        REQUIRE(w.submit(r) == SubmitResult::accepted);
    }
    h.start(w);
    const CloseReport report = close(w);
    CHECK(report.stats.written == 6);
    for (const auto& [key, ids] : {std::pair{std::string("even"), std::vector<int>{0, 2, 4}},
                                   std::pair{std::string("odd"), std::vector<int>{1, 3, 5}}}) {
        const std::string content = read_file(h.dir.path() / key / "part.jsonl");
        INFO(content);
        CHECK(content.rfind("{\"resourceLogs\":[", 0) == 0);
        CHECK(std::count(content.begin(), content.end(), '\n') == 1);
        CHECK(log_records(content) == 3);
        for (int i : ids)
            CHECK(content.find(R"({"key":"id","value":{"intValue":")" + std::to_string(i) + "\"}}") != std::string::npos);
    }
}
