// The perf-metrics line shapes, without a writer: the two hand-built examples (an aggregated
// worker's, and docs/writers.md's "Disagg-server line") byte for byte, and each transformation
// rule of _jsonl_record in tensorrt_llm/serve/perf_metrics.py (ids, unknown times, KV stamps,
// speculative decoding, time breakdown, malformed records). Every line is parsed back with
// simdjson and its fields checked.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/perf_metrics_record.hpp>

#include "perf_metrics_reference.hpp"

#include <simdjson.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

using jsonlw::PerfMetricsRecord;
using jsonlw::PhaseRecord;
using jsonlw::StepMetrics;

namespace {

namespace ref = perf_metrics_reference;
using ref::line_of;

std::string malformed_what(const PerfMetricsRecord& rec)
{
    try {
        line_of(rec);
    } catch (const jsonlw::MalformedRecord& e) {
        return e.what();
    }
    return "(not malformed)";
}

// One parser per line checked; the element stays valid while the parser lives.
struct Parsed {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;

    explicit Parsed(const std::string& line)
    {
        REQUIRE(line.find('\n') == std::string::npos);
        INFO(line);
        REQUIRE(parser.parse(line).get(doc) == simdjson::SUCCESS);
        REQUIRE(doc.is_object());
    }
    bool has(std::string_view ptr) const
    {
        simdjson::dom::element e;
        return doc.at_pointer(ptr).get(e) == simdjson::SUCCESS;
    }
    bool is_null(std::string_view ptr) const
    {
        simdjson::dom::element e;
        return doc.at_pointer(ptr).get(e) == simdjson::SUCCESS && e.is_null();
    }
    double num(std::string_view ptr) const
    {
        INFO(ptr);
        double v = 0;
        REQUIRE(doc.at_pointer(ptr).get_double().get(v) == simdjson::SUCCESS);
        return v;
    }
    std::int64_t integer(std::string_view ptr) const
    {
        INFO(ptr);
        std::int64_t v = 0;
        REQUIRE(doc.at_pointer(ptr).get_int64().get(v) == simdjson::SUCCESS);
        return v;
    }
    std::uint64_t uinteger(std::string_view ptr) const
    {
        INFO(ptr);
        std::uint64_t v = 0;
        REQUIRE(doc.at_pointer(ptr).get_uint64().get(v) == simdjson::SUCCESS);
        return v;
    }
    std::string str(std::string_view ptr) const
    {
        INFO(ptr);
        std::string_view v;
        REQUIRE(doc.at_pointer(ptr).get_string().get(v) == simdjson::SUCCESS);
        return std::string(v);
    }
    std::size_t size(std::string_view ptr) const
    {
        INFO(ptr);
        simdjson::dom::element e;
        REQUIRE(doc.at_pointer(ptr).get(e) == simdjson::SUCCESS);
        if (e.is_array()) return simdjson::dom::array(e).size();
        return simdjson::dom::object(e).size();
    }
};

// The disagg-server example (docs/writers.md, "Disagg-server line"): the "12 distinct non-zero
// spans" stamps of TensorRT-LLM's perf-metrics unit test, its timing keys in the order that
// example gives them.
PerfMetricsRecord disagg_example()
{
    PerfMetricsRecord r;
    r.request_id = "1";
    r.disagg_request_id = "1";
    r.disagg = ref::disagg_server_phase();
    using K = jsonlw::TimingKey;
    // The order the example's dicts give (kept as given, as TensorRT-LLM's writer does).
    PhaseRecord ctx;
    ctx.request_id = "ctx-1";
    ctx.timing_metrics = ref::ctx_worker_timing();
    ctx.timing_metrics.order = {K::server_arrival_time, K::arrival_time, K::first_scheduled_time,
                                K::first_token_time, K::last_token_time,
                                K::server_first_token_time};
    r.ctx = ctx;
    PhaseRecord gen;
    gen.request_id = "gen-1";
    gen.timing_metrics = ref::gen_worker_timing();
    gen.timing_metrics.order = {K::server_arrival_time, K::arrival_time,
                                K::kv_cache_transfer_start, K::kv_cache_transfer_end,
                                K::first_scheduled_time, K::first_token_time, K::last_token_time,
                                K::server_first_token_time};
    r.gen = gen;
    return r;
}

PerfMetricsRecord minimal_worker(std::string id = "7")
{
    PerfMetricsRecord r;
    r.request_id = std::move(id);
    PhaseRecord p;
    p.timing_metrics.arrival_time = 10.5;
    p.timing_metrics.last_token_time = 11.0;
    r.server = p;
    return r;
}

}  // namespace

TEST_CASE("The aggregated worker example of the reference serializes byte for byte to one line",
          "[perf_metrics][golden]")
{
    // ref::seed_worker_line: Python's json.dumps(..., separators=(",", ":")) of the example.
    const std::string line = line_of(ref::seed_worker_record());
    CHECK(line == ref::seed_worker_line);

    const Parsed p(line);
    CHECK(p.size("") == 4);
    CHECK(p.integer("/request_id") == 42);
    CHECK(p.num("/perf_metrics/timing_metrics/arrival_time") == 1000.0021);
    CHECK(p.num("/perf_metrics/timing_metrics/first_scheduled_time") == 1000.0053);
    CHECK(p.num("/perf_metrics/timing_metrics/first_token_time") == 1000.0250);
    CHECK(p.num("/perf_metrics/timing_metrics/last_token_time") == 1000.4100);
    CHECK(p.num("/perf_metrics/timing_metrics/server_arrival_time") == 1000.0);
    CHECK(p.num("/perf_metrics/timing_metrics/server_first_token_time") == 1000.0270);
    CHECK(p.size("/perf_metrics/timing_metrics") == 6);
    CHECK(p.integer("/perf_metrics/first_iter") == 812);
    CHECK(p.integer("/perf_metrics/last_iter") == 860);
    CHECK(p.integer("/perf_metrics/kv_cache_metrics/num_total_allocated_blocks") == 5);
    CHECK(p.integer("/perf_metrics/kv_cache_metrics/num_new_allocated_blocks") == 3);
    CHECK(p.integer("/perf_metrics/kv_cache_metrics/num_reused_blocks") == 2);
    CHECK(p.integer("/perf_metrics/kv_cache_metrics/num_missed_blocks") == 3);
    CHECK_FALSE(p.has("/perf_metrics/kv_cache_metrics/kv_cache_hit_rate"));
    CHECK_FALSE(p.has("/perf_metrics/speculative_decoding"));
    CHECK(p.size("/time_breakdown_metrics/ctx_chunk_metrics") == 1);
    CHECK(p.num("/time_breakdown_metrics/ctx_chunk_metrics/0/gpu_forward_time") == 3.0);
    CHECK(p.num("/time_breakdown_metrics/ctx_chunk_metrics/0/gpu_sample_time") == 0.25);
    CHECK(p.num("/time_breakdown_metrics/ctx_chunk_metrics/0/token_time") == 5310.106);
    CHECK_FALSE(p.has("/time_breakdown_metrics/ctx_chunk_metrics/0/iter"));
    CHECK(p.size("/time_breakdown_metrics/step_metrics") == 1);
    CHECK(p.integer("/time_breakdown_metrics/step_metrics/0/iter") == 1);
    CHECK(p.num("/time_breakdown_metrics/step_metrics/0/forward_start_time") == 5310.110);
    CHECK(p.num("/time_breakdown_metrics/step_metrics/0/sample_end_time") == 5310.113);
    CHECK(p.str("/status") == "complete");
    CHECK_FALSE(p.has("/ctx_request_id"));
    CHECK_FALSE(p.has("/disagg_request_id"));
}

TEST_CASE("The disagg-server example of the reference serializes byte for byte to one line",
          "[perf_metrics][golden]")
{
    const std::string expected =
        R"({"ctx_server":"http://ctx0:8001","gen_server":"http://gen0:8002",)"
        R"("disagg_server_arrival_time":1000.0,"disagg_ctx_dispatch_time":1000.0005,)"
        R"("disagg_server_first_token_time":1000.078,"status":"complete",)"
        R"("ctx_perf_metrics":{"request_id":"ctx-1","perf_metrics":{"timing_metrics":{)"
        R"("server_arrival_time":1000.001,"arrival_time":1000.003,"first_scheduled_time":1000.006,)"
        R"("first_token_time":1000.01,"last_token_time":1000.01,"server_first_token_time":1000.015}}},)"
        R"("gen_perf_metrics":{"request_id":"gen-1","perf_metrics":{"timing_metrics":{)"
        R"("server_arrival_time":1000.021,"arrival_time":1000.028,"kv_cache_transfer_start":1000.036,)"
        R"("kv_cache_transfer_end":1000.045,"first_scheduled_time":1000.055,"first_token_time":1000.066,)"
        R"("last_token_time":1000.2,"server_first_token_time":1000.066}}},"disagg_request_id":1})";
    const std::string line = line_of(disagg_example());
    CHECK(line == expected);

    const Parsed p(line);
    CHECK_FALSE(p.has("/request_id"));
    CHECK(p.str("/ctx_server") == "http://ctx0:8001");
    CHECK(p.str("/gen_server") == "http://gen0:8002");
    CHECK(p.num("/disagg_server_arrival_time") == 1000.0);
    CHECK(p.num("/disagg_ctx_dispatch_time") == 1000.0005);
    CHECK(p.num("/disagg_server_first_token_time") == 1000.078);
    CHECK(p.str("/status") == "complete");
    CHECK(p.integer("/disagg_request_id") == 1);
    CHECK(p.str("/ctx_perf_metrics/request_id") == "ctx-1");
    CHECK(p.str("/gen_perf_metrics/request_id") == "gen-1");
    CHECK(p.size("/ctx_perf_metrics/perf_metrics/timing_metrics") == 6);
    CHECK(p.size("/gen_perf_metrics/perf_metrics/timing_metrics") == 8);

    // The 12 spans time_breakdown.py computes are 1..12 ms.
    const double d_arr = p.num("/disagg_server_arrival_time");
    const double d_ftt = p.num("/disagg_server_first_token_time");
    auto c = [&](const char* k) { return p.num(std::string("/ctx_perf_metrics/perf_metrics/timing_metrics/") + k); };
    auto g = [&](const char* k) { return p.num(std::string("/gen_perf_metrics/perf_metrics/timing_metrics/") + k); };
    const double edges[] = {d_arr,
                            c("server_arrival_time"),
                            c("arrival_time"),
                            c("first_scheduled_time"),
                            c("first_token_time"),
                            c("server_first_token_time"),
                            g("server_arrival_time"),
                            g("arrival_time"),
                            g("kv_cache_transfer_start"),
                            g("kv_cache_transfer_end"),
                            g("first_scheduled_time"),
                            g("server_first_token_time"),
                            d_ftt};
    for (int k = 1; k <= 12; ++k)
        CHECK((edges[k] - edges[k - 1]) * 1000 == Approx(k).margin(1e-6));
}

TEST_CASE("A request id made of digits is written as an integer and any other id as a string",
          "[perf_metrics][rules]")
{
    SECTION("request_id")
    {
        CHECK(Parsed(line_of(minimal_worker("42"))).integer("/request_id") == 42);
        // As Python's int(): leading zeros go.
        CHECK(line_of(minimal_worker("007")).rfind(R"({"request_id":7,)", 0) == 0);
        const Parsed max(line_of(minimal_worker("18446744073709551615")));
        CHECK(max.uinteger("/request_id") == std::numeric_limits<std::uint64_t>::max());
        CHECK(Parsed(line_of(minimal_worker("18446744073709551616"))).str("/request_id") ==
              "18446744073709551616");
        CHECK(Parsed(line_of(minimal_worker("-5"))).str("/request_id") == "-5");
        CHECK(Parsed(line_of(minimal_worker(" 5"))).str("/request_id") == " 5");
        CHECK(Parsed(line_of(minimal_worker("chatcmpl-9f"))).str("/request_id") == "chatcmpl-9f");
        CHECK(Parsed(line_of(minimal_worker(""))).str("/request_id") == "");
    }
    SECTION("ctx_request_id and disagg_request_id on a worker line")
    {
        PerfMetricsRecord r = minimal_worker("5");
        r.ctx_request_id = "123";
        r.disagg_request_id = "d-9";
        const std::string line = line_of(r);
        const Parsed p(line);
        CHECK(p.integer("/ctx_request_id") == 123);
        CHECK(p.str("/disagg_request_id") == "d-9");
        // Key order of the worker line.
        CHECK(line.find(R"("perf_metrics")") < line.find(R"("ctx_request_id")"));
        CHECK(line.find(R"("ctx_request_id")") < line.find(R"("status")"));
        CHECK(line.find(R"("status")") < line.find(R"("disagg_request_id")"));
    }
    SECTION("a worker's ctx_request_id may come from its server phase")
    {
        PerfMetricsRecord r = minimal_worker("5");
        r.server->ctx_request_id = "77";
        CHECK(Parsed(line_of(r)).integer("/ctx_request_id") == 77);
        r.ctx_request_id = "78";
        CHECK(Parsed(line_of(r)).integer("/ctx_request_id") == 78);
    }
}

TEST_CASE("Ctx and gen sub-records take their request id from the phase, else from the record",
          "[perf_metrics][rules]")
{
    PerfMetricsRecord r = disagg_example();
    r.request_id = "900";
    r.ctx->request_id = std::nullopt;
    r.gen->request_id = "901";
    r.gen->ctx_request_id = "55";
    r.ctx_request_id = "56";  // a worker-line field: not copied into the sub-records
    const Parsed p(line_of(r));
    CHECK(p.integer("/ctx_perf_metrics/request_id") == 900);
    CHECK(p.integer("/gen_perf_metrics/request_id") == 901);
    CHECK_FALSE(p.has("/ctx_perf_metrics/ctx_request_id"));
    CHECK(p.integer("/gen_perf_metrics/ctx_request_id") == 55);
    CHECK_FALSE(p.has("/request_id"));
    CHECK_FALSE(p.has("/ctx_request_id"));

    SECTION("a disagg record without worker phases has no sub-records")
    {
        r.ctx.reset();
        r.gen.reset();
        r.disagg_request_id.reset();
        const Parsed q(line_of(r));
        CHECK(q.size("") == 6);
        CHECK_FALSE(q.has("/ctx_perf_metrics"));
        CHECK_FALSE(q.has("/gen_perf_metrics"));
    }
}

TEST_CASE("An unknown optional time is left out and an unknown required time is null, never 0",
          "[perf_metrics][rules]")
{
    SECTION("worker line")
    {
        PerfMetricsRecord r;
        r.request_id = "3";
        PhaseRecord p;
        p.timing_metrics.arrival_time = std::nullopt;    // required, unknown
        p.timing_metrics.last_token_time = 0.0;          // required, "unset"
        p.timing_metrics.first_scheduled_time = std::nullopt;
        p.timing_metrics.first_token_time = -1.0;        // <= 0: unknown
        p.timing_metrics.server_arrival_time = 0.0;
        p.timing_metrics.server_first_token_time = 12.5;
        r.server = p;
        const std::string line = line_of(r);
        CHECK(line ==
              R"({"request_id":3,"perf_metrics":{"timing_metrics":{"arrival_time":null,)"
              R"("last_token_time":null,"server_first_token_time":12.5}},"status":"complete"})");
        const Parsed q(line);
        CHECK(q.is_null("/perf_metrics/timing_metrics/arrival_time"));
        CHECK(q.is_null("/perf_metrics/timing_metrics/last_token_time"));
        CHECK_FALSE(q.has("/perf_metrics/timing_metrics/first_scheduled_time"));
        CHECK_FALSE(q.has("/perf_metrics/timing_metrics/first_token_time"));
        CHECK_FALSE(q.has("/perf_metrics/timing_metrics/server_arrival_time"));
        CHECK(q.num("/perf_metrics/timing_metrics/server_first_token_time") == 12.5);
        CHECK_FALSE(q.has("/perf_metrics/first_iter"));
        CHECK_FALSE(q.has("/perf_metrics/kv_cache_metrics"));
        CHECK_FALSE(q.has("/time_breakdown_metrics"));
    }
    SECTION("disagg line")
    {
        PerfMetricsRecord r = disagg_example();
        r.disagg->timing_metrics.ctx_dispatch_time = std::nullopt;
        r.disagg->timing_metrics.server_first_token_time = 0.0;
        r.ctx->timing_metrics.server_arrival_time = std::nullopt;
        r.ctx->timing_metrics.server_first_token_time = 0.0;
        r.gen->timing_metrics.arrival_time = std::nullopt;
        const Parsed q(line_of(r));
        CHECK(q.num("/disagg_server_arrival_time") == 1000.0);
        CHECK(q.is_null("/disagg_ctx_dispatch_time"));
        CHECK(q.is_null("/disagg_server_first_token_time"));
        CHECK_FALSE(q.has("/ctx_perf_metrics/perf_metrics/timing_metrics/server_arrival_time"));
        CHECK_FALSE(q.has("/ctx_perf_metrics/perf_metrics/timing_metrics/server_first_token_time"));
        CHECK(q.num("/ctx_perf_metrics/perf_metrics/timing_metrics/arrival_time") == 1000.003);
        CHECK(q.is_null("/gen_perf_metrics/perf_metrics/timing_metrics/arrival_time"));
        CHECK(q.num("/gen_perf_metrics/perf_metrics/timing_metrics/kv_cache_transfer_end") ==
              1000.045);
    }
}

TEST_CASE("KV transfer stamps are kept without kv_cache_size and left out only when unknown or 0",
          "[perf_metrics][rules]")
{
    PerfMetricsRecord r = minimal_worker("8");
    auto& t = r.server->timing_metrics;
    SECTION("stamps without a size (a header-derived record) are kept")
    {
        t.kv_cache_transfer_start = 20.25;
        t.kv_cache_transfer_end = 20.5;
        const std::string line = line_of(r);
        CHECK(line ==
              R"({"request_id":8,"perf_metrics":{"timing_metrics":{"arrival_time":10.5,)"
              R"("last_token_time":11.0,"kv_cache_transfer_start":20.25,)"
              R"("kv_cache_transfer_end":20.5}},"status":"complete"})");
        const Parsed q(line);
        CHECK_FALSE(q.has("/perf_metrics/timing_metrics/kv_cache_size"));
        CHECK(q.num("/perf_metrics/timing_metrics/kv_cache_transfer_start") == 20.25);
        CHECK(q.num("/perf_metrics/timing_metrics/kv_cache_transfer_end") == 20.5);
    }
    SECTION("a size is written after its transfer stamps and before the server stamps")
    {
        // build_request_metrics_record's order, the worker's default.
        t.server_arrival_time = 10.0;
        t.kv_cache_size = 4096;
        t.kv_cache_transfer_start = 20.25;
        t.kv_cache_transfer_end = 20.5;
        const std::string line = line_of(r);
        CHECK(line.find(R"("kv_cache_transfer_start":20.25,"kv_cache_transfer_end":20.5,)"
                        R"("kv_cache_size":4096,"server_arrival_time":10.0})") !=
              std::string::npos);
        CHECK(Parsed(line).integer("/perf_metrics/timing_metrics/kv_cache_size") == 4096);
    }
    SECTION("null and 0 stamps, and a 0 size, are left out")
    {
        t.kv_cache_size = 0;
        t.kv_cache_transfer_start = 0.0;
        t.kv_cache_transfer_end = std::nullopt;
        const Parsed q(line_of(r));
        CHECK(q.size("/perf_metrics/timing_metrics") == 2);
        CHECK_FALSE(q.has("/perf_metrics/timing_metrics/kv_cache_size"));
        CHECK_FALSE(q.has("/perf_metrics/timing_metrics/kv_cache_transfer_start"));
        CHECK_FALSE(q.has("/perf_metrics/timing_metrics/kv_cache_transfer_end"));
    }
}

TEST_CASE("Speculative decoding is written only when draft tokens were proposed",
          "[perf_metrics][rules]")
{
    PerfMetricsRecord r = minimal_worker("9");
    r.server->first_iter = 3;
    r.server->last_iter = 4;
    SECTION("with drafts")
    {
        r.server->speculative_decoding = jsonlw::SpeculativeDecoding{
            .acceptance_rate = 0.75, .total_accepted_draft_tokens = 3, .total_draft_tokens = 4};
        const std::string line = line_of(r);
        CHECK(line.find(R"("last_iter":4,"speculative_decoding":{"acceptance_rate":0.75,)"
                        R"("total_accepted_draft_tokens":3,"total_draft_tokens":4}})") !=
              std::string::npos);
        const Parsed q(line);
        CHECK(q.num("/perf_metrics/speculative_decoding/acceptance_rate") == 0.75);
        CHECK(q.integer("/perf_metrics/speculative_decoding/total_accepted_draft_tokens") == 3);
        CHECK(q.integer("/perf_metrics/speculative_decoding/total_draft_tokens") == 4);
    }
    SECTION("without drafts, even with the 0/0 acceptance rate")
    {
        r.server->speculative_decoding = jsonlw::SpeculativeDecoding{
            .acceptance_rate = std::numeric_limits<double>::quiet_NaN(),
            .total_accepted_draft_tokens = 0,
            .total_draft_tokens = 0};
        const Parsed q(line_of(r));
        CHECK_FALSE(q.has("/perf_metrics/speculative_decoding"));
        CHECK(q.integer("/perf_metrics/last_iter") == 4);
    }
}

TEST_CASE("kv_cache_metrics is written as given, without kv_cache_hit_rate",
          "[perf_metrics][rules]")
{
    PerfMetricsRecord r = minimal_worker("10");
    r.server->kv_cache_metrics = jsonlw::KvCacheMetrics{};
    r.server->kv_cache_metrics->kv_cache_hit_rate = std::numeric_limits<double>::quiet_NaN();
    const std::string line = line_of(r);
    CHECK(line.find(R"("kv_cache_metrics":{"num_total_allocated_blocks":0,)"
                    R"("num_new_allocated_blocks":0,"num_reused_blocks":0,"num_missed_blocks":0}})") !=
          std::string::npos);
    const Parsed q(line);
    CHECK(q.size("/perf_metrics/kv_cache_metrics") == 4);
    CHECK_FALSE(q.has("/perf_metrics/kv_cache_metrics/kv_cache_hit_rate"));
}

TEST_CASE("kv_cache_metrics carries only the counts it holds, and is {} with none of them",
          "[perf_metrics][rules]")
{
    // TensorRT-LLM strips kv_cache_hit_rate from the dict it was given and writes the rest,
    // an empty dict included (_jsonl_record, tensorrt_llm/serve/perf_metrics.py).
    using jsonlw::KvCacheCounts;
    PerfMetricsRecord r = minimal_worker("10");
    const auto line_with = [&](std::string_view kv) {
        return R"({"request_id":10,"perf_metrics":{"timing_metrics":{"arrival_time":10.5,)"
               R"("last_token_time":11.0},"kv_cache_metrics":)" +
               std::string(kv) + R"(},"status":"complete"})";
    };
    SECTION("none of the counts: an empty dict")
    {
        r.server->kv_cache_metrics = jsonlw::KvCacheMetrics{.num_total_allocated_blocks = 5,
                                                            .counts = KvCacheCounts::none};
        CHECK(line_of(r) == line_with("{}"));
    }
    SECTION("only kv_cache_hit_rate: an empty dict")
    {
        r.server->kv_cache_metrics =
            jsonlw::KvCacheMetrics{.kv_cache_hit_rate = 0.5, .counts = KvCacheCounts::none};
        CHECK(line_of(r) == line_with("{}"));
    }
    SECTION("some of the counts: those, in the schema's order")
    {
        r.server->kv_cache_metrics = jsonlw::KvCacheMetrics{
            .num_total_allocated_blocks = 5,
            .num_new_allocated_blocks = 99,  // not among the counts: not written
            .num_reused_blocks = 2,
            .kv_cache_hit_rate = 0.4,
            .counts = KvCacheCounts::num_reused_blocks | KvCacheCounts::num_total_allocated_blocks};
        CHECK(line_of(r) == line_with(R"({"num_total_allocated_blocks":5,"num_reused_blocks":2})"));
        r.server->kv_cache_metrics->counts = KvCacheCounts::num_missed_blocks;
        CHECK(line_of(r) == line_with(R"({"num_missed_blocks":0})"));
    }
    SECTION("all four, the default")
    {
        r.server->kv_cache_metrics = jsonlw::KvCacheMetrics{.num_total_allocated_blocks = 5,
                                                            .num_new_allocated_blocks = 3,
                                                            .num_reused_blocks = 2,
                                                            .num_missed_blocks = 3};
        CHECK(r.server->kv_cache_metrics->counts == KvCacheCounts::all);
        CHECK(line_of(r) == line_with(R"({"num_total_allocated_blocks":5,)"
                                      R"("num_new_allocated_blocks":3,"num_reused_blocks":2,)"
                                      R"("num_missed_blocks":3})"));
    }
    CHECK(Parsed(line_of(r)).has("/perf_metrics/kv_cache_metrics"));
}

TEST_CASE("time_breakdown_metrics sits beside perf_metrics, unknown step fields left out",
          "[perf_metrics][rules]")
{
    PerfMetricsRecord r = minimal_worker("11");
    jsonlw::TimeBreakdownMetrics tb;
    StepMetrics s;
    s.iter = 5;
    s.forward_start_time = 1.25;
    s.forward_end_time = 0.0;          // unknown
    s.gpu_forward_time = 0.0;          // a measured zero duration is kept
    s.gpu_sample_time = -1.0;          // negative duration: unknown
    s.token_time = std::nullopt;
    s.scheduled_time = 1.0;
    s.prev_batch_token_time = 0.5;
    s.iter_counter = 17;
    s.iter_batch_size = 8;
    s.num_ctx_requests = 1;
    s.num_gen_requests = 7;
    s.context_token_number = 100;
    s.generation_token_number = 7;
    s.req_generation_token_number = 1;
    s.num_capacity_fitting = 9;
    s.num_scheduled = 8;
    tb.step_metrics.push_back(s);
    tb.ctx_gpu_forward_time = 4.5;
    tb.ctx_gpu_sample_time = std::nullopt;
    r.server->time_breakdown_metrics = tb;
    const std::string line = line_of(r);
    CHECK(line ==
          R"({"request_id":11,"perf_metrics":{"timing_metrics":{"arrival_time":10.5,)"
          R"("last_token_time":11.0}},"time_breakdown_metrics":{"step_metrics":[{"iter":5,)"
          R"("forward_start_time":1.25,"gpu_forward_time":0.0,"scheduled_time":1.0,)"
          R"("prev_batch_token_time":0.5,"iter_counter":17,"iter_batch_size":8,)"
          R"("num_ctx_requests":1,"num_gen_requests":7,"context_token_number":100,)"
          R"("generation_token_number":7,"req_generation_token_number":1,)"
          R"("num_capacity_fitting":9,"num_scheduled":8}],"ctx_gpu_forward_time":4.5},)"
          R"("status":"complete"})");
    const Parsed q(line);
    CHECK_FALSE(q.has("/perf_metrics/time_breakdown_metrics"));
    CHECK_FALSE(q.has("/time_breakdown_metrics/ctx_chunk_metrics"));
    CHECK(q.integer("/time_breakdown_metrics/step_metrics/0/iter") == 5);
    CHECK(q.num("/time_breakdown_metrics/step_metrics/0/gpu_forward_time") == 0.0);
    CHECK_FALSE(q.has("/time_breakdown_metrics/step_metrics/0/forward_end_time"));
    CHECK_FALSE(q.has("/time_breakdown_metrics/step_metrics/0/gpu_sample_time"));
    CHECK_FALSE(q.has("/time_breakdown_metrics/step_metrics/0/token_time"));
    CHECK(q.integer("/time_breakdown_metrics/step_metrics/0/num_scheduled") == 8);
    CHECK(q.num("/time_breakdown_metrics/ctx_gpu_forward_time") == 4.5);
    CHECK_FALSE(q.has("/time_breakdown_metrics/ctx_gpu_sample_time"));
}

TEST_CASE("Status and strings are written as given, with invalid UTF-8 replaced",
          "[perf_metrics][rules]")
{
    PerfMetricsRecord r = minimal_worker("req-\xff\"x");
    r.status = "cancelled";
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    jsonlw::serialize_perf_metrics(r, line);
    CHECK(line.sanitized());
    const Parsed q{std::string(line.view())};
    CHECK(q.str("/request_id") == "req-\xEF\xBF\xBD\"x");
    CHECK(q.str("/status") == "cancelled");
}

TEST_CASE("A record without the server phase is malformed and names the missing phase",
          "[perf_metrics][malformed]")
{
    PerfMetricsRecord r;
    r.request_id = "41";
    CHECK(malformed_what(r) == "'server'");
    // ctx/gen phases without a disagg phase are still a worker record.
    r.ctx = PhaseRecord{};
    r.gen = PhaseRecord{};
    CHECK(malformed_what(r) == "'server'");
}

TEST_CASE("A disagg record without its routed servers is malformed", "[perf_metrics][malformed]")
{
    PerfMetricsRecord r = disagg_example();
    r.disagg->gen_server.clear();
    CHECK(malformed_what(r) == "'gen_server'");
    r.disagg->ctx_server.clear();
    CHECK(malformed_what(r) == "'ctx_server'");
}

TEST_CASE("A non-finite number in a written field makes the record malformed and names the field",
          "[perf_metrics][malformed]")
{
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    constexpr double inf = std::numeric_limits<double>::infinity();
    SECTION("a worker timing stamp")
    {
        PerfMetricsRecord r = ref::seed_worker_record();
        r.server->timing_metrics.first_token_time = nan;
        CHECK(malformed_what(r) == "non-finite number NaN in phases.server.timing_metrics.first_token_time");
    }
    SECTION("-Infinity is not taken for an unknown (<= 0) stamp")
    {
        PerfMetricsRecord r = ref::seed_worker_record();
        r.server->timing_metrics.kv_cache_transfer_end = -inf;
        CHECK(malformed_what(r) ==
              "non-finite number -Infinity in phases.server.timing_metrics.kv_cache_transfer_end");
    }
    SECTION("a step of the time breakdown")
    {
        PerfMetricsRecord r = ref::seed_worker_record();
        r.server->time_breakdown_metrics->step_metrics[0].gpu_sample_time = inf;
        CHECK(malformed_what(r) == "non-finite number Infinity in "
                                   "phases.server.time_breakdown_metrics.step_metrics[0].gpu_sample_time");
        r.server->time_breakdown_metrics->step_metrics[0].gpu_sample_time = 0.5;
        r.server->time_breakdown_metrics->ctx_gpu_sample_time = nan;
        CHECK(malformed_what(r) ==
              "non-finite number NaN in phases.server.time_breakdown_metrics.ctx_gpu_sample_time");
    }
    SECTION("the acceptance rate of proposed drafts")
    {
        PerfMetricsRecord r = ref::seed_worker_record();
        r.server->speculative_decoding = jsonlw::SpeculativeDecoding{
            .acceptance_rate = nan, .total_accepted_draft_tokens = 1, .total_draft_tokens = 2};
        CHECK(malformed_what(r) ==
              "non-finite number NaN in phases.server.speculative_decoding.acceptance_rate");
    }
    SECTION("a stamp of the disagg phase")
    {
        PerfMetricsRecord r = disagg_example();
        r.disagg->timing_metrics.ctx_dispatch_time = -inf;
        CHECK(malformed_what(r) ==
              "non-finite number -Infinity in phases.disagg.timing_metrics.ctx_dispatch_time");
    }
    SECTION("a stamp of the gen phase")
    {
        PerfMetricsRecord r = disagg_example();
        r.gen->timing_metrics.kv_cache_transfer_start = nan;
        CHECK(malformed_what(r) ==
              "non-finite number NaN in phases.gen.timing_metrics.kv_cache_transfer_start");
    }
    SECTION("fields that are never written do not count")
    {
        PerfMetricsRecord r = disagg_example();
        r.disagg->timing_metrics.arrival_time = nan;  // headers only
        r.server = PhaseRecord{};                     // ignored on a disagg record
        r.server->timing_metrics.arrival_time = nan;
        const Parsed q(line_of(r));
        CHECK(q.str("/ctx_server") == "http://ctx0:8001");
    }
}
