// The raw-output record's W3C trace context (docs/writers.md, "Trace context on records"): the
// exact line with and without one, and the hook keeping the context of an output's first
// chunk into its record — final, partial or evicted.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/raw_output_writer.hpp>

#include "raw_output_support.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

using namespace jsonlw_test;
using namespace raw_output_test;
using jsonlw::RawOutputRecord;
using jsonlw::TraceContext;

namespace {

constexpr std::string_view first_tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
constexpr std::string_view second_tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

TraceContext parsed(std::string_view header)
{
    auto tc = TraceContext::parse_traceparent(header);
    REQUIRE(tc);
    return *tc;
}

std::string line_of(const RawOutputRecord& r)
{
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine line(buf);
    jsonlw::serialize_raw_output(r, line);
    return std::string(line.view());
}

// Two frames, three ids, at 2026-11-04T05:06:07Z and one second later.
RawOutputRecord record()
{
    using namespace std::chrono;
    RawOutputRecord r;
    r.request_id = 5;
    r.started_at = sys_days{year{2026} / November / 4} + hours{5} + minutes{6} + seconds{7};
    r.finished_at = r.started_at + seconds{1};
    r.frames_text = "ab c";
    r.frame_ends = {2, 4};
    r.token_ids = {1, 2, 3};
    return r;
}

constexpr std::string_view golden =
    R"({"event":"raw_output","request_id":"5","disagg_request_id":null,"output_index":0,)"
    R"("started_at":"2026-11-04T05:06:07.000000+00:00","finished_at":"2026-11-04T05:06:08.000000+00:00",)"
    R"("streaming":false,"aborted":false,"text":"ab c","frames":["ab"," c"],"token_ids":[1,2,3],)"
    R"("num_output_tokens":3,"frames_consistent":true})";

// Every line under `dir`, by its request_id.
std::map<std::string, std::string> lines_by_request(const std::filesystem::path& dir)
{
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        for (const auto& line : read_lines(e.path())) {
            simdjson::dom::parser parser;
            std::string_view id;
            REQUIRE(parser.parse(line)["request_id"].get(id) == simdjson::SUCCESS);
            out[std::string(id)] = line;
        }
    }
    return out;
}

// One chunk of one token with text `text` of request `req`.
void chunk(jsonlw::RawOutputWriter& w, std::uint64_t req, std::string_view text, bool final_,
           std::optional<TraceContext> tc)
{
    const std::int32_t id = 100;
    jsonlw::OutputChunk c;
    c.request_id = req;
    c.text_diff = text;
    c.token_ids_diff = std::span<const std::int32_t>(&id, 1);
    c.is_final = final_;
    c.trace_context = tc;
    w.on_chunk(c);
}

std::string tail_of(std::string_view traceparent)
{
    return R"(,"traceparent":")" + std::string(traceparent) + "\"}";
}

}  // namespace

TEST_CASE("A raw-output line without a trace context is the line as before; with one it ends "
          "with one traceparent key",
          "[raw_output][trace_context]")
{
    RawOutputRecord r = record();
    CHECK(line_of(r) == golden);

    r.trace_context = parsed(first_tp);
    CHECK(line_of(r) ==
          std::string(golden.substr(0, golden.size() - 1)) +
              R"(,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})");

    // After partial and end_reason, which keep their place.
    r.end_reason = "evicted";
    r.frames_consistent = false;
    const std::string partial = line_of(r);
    CHECK(partial.ends_with(
        R"("frames_consistent":false,"partial":true,"end_reason":"evicted",)"
        R"("traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})"));
}

TEST_CASE("The hook keeps the first trace context an output's chunks carry, into its final, "
          "partial or one-chunk record",
          "[raw_output][trace_context]")
{
    Harness h;
    jsonlw::RawOutputWriter w(h.executor(), options(h));
    w.start();
    h.loop.start();
    const TraceContext a = parsed(first_tp), b = parsed(second_tp);

    chunk(w, 1, "x", false, a);  // the request starts with its context
    chunk(w, 1, "y", false, b);  // a later one does not replace it
    chunk(w, 1, "", true, std::nullopt);
    chunk(w, 2, "x", false, std::nullopt);  // none at all: no key
    chunk(w, 2, "y", true, std::nullopt);
    chunk(w, 3, "x", false, std::nullopt);  // the first chunk that carries one
    chunk(w, 3, "y", true, b);
    chunk(w, 4, "x", false, a);  // ended by an error: partial, still joined
    w.on_request_end(4, "error");
    chunk(w, 5, "x", true, b);  // a one-chunk output
    close(w);

    const auto lines = lines_by_request(h.dir.path());
    REQUIRE(lines.size() == 5);
    CHECK(lines.at("1").ends_with(R"("frames_consistent":true)" + tail_of(first_tp)));
    CHECK(lines.at("2").find("traceparent") == std::string::npos);
    CHECK(lines.at("2").ends_with(R"("frames_consistent":true})"));
    CHECK(lines.at("3").ends_with(tail_of(second_tp)));
    CHECK(lines.at("4").ends_with(R"("partial":true,"end_reason":"error")" + tail_of(first_tp)));
    CHECK(lines.at("5").ends_with(tail_of(second_tp)));
    CHECK(w.counters().finished == 4);
    CHECK(w.counters().partial == 1);
}
