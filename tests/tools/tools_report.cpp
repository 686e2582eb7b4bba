// jsonlw report, called as a library: golden inputs in data/ (JSONLW_TOOLS_DATA).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/report/report.hpp>

#include <fmt/format.h>
#include <simdjson.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace jsonlw::tools;

namespace {

const fs::path data = JSONLW_TOOLS_DATA;

Report run(const fs::path& dir, std::uint64_t part_bytes = std::uint64_t{32} << 20, unsigned jobs = 0)
{
    ReportOptions o;
    o.dir = dir;
    o.part_bytes = part_bytes;
    o.jobs = jobs;
    o.progress.enabled = false;
    return build_report(o);
}

const FileIntegrity& file(const Report& r, std::string_view name)
{
    const auto it = std::find_if(r.files.begin(), r.files.end(), [&](const auto& f) { return f.name == name; });
    REQUIRE(it != r.files.end());
    return *it;
}

const SampleSet& samples(const Report& r, PerfSource src, Span s)
{
    return r.perf.spans[static_cast<std::size_t>(src)][static_cast<std::size_t>(s)];
}

const Summary& summary(const Report& r, PerfSource src, Span s)
{
    return r.perf_summary[static_cast<std::size_t>(src)][static_cast<std::size_t>(s)];
}

std::size_t occurrences(const std::string& hay, std::string_view needle)
{
    std::size_t n = 0;
    for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
    return n;
}

const char* const perf_file = "perf_metrics-server-node1-7-20260101T000000Z.jsonl";

}  // namespace

TEST_CASE("The 12-span disaggregated example gives the 12 time-breakdown spans of exactly 1 to 12 ms",
          "[tools][report]")
{
    const Report r = run(data / "disagg");
    REQUIRE(r.perf.records[0] == 1);
    for (std::size_t k = 0; k < timeline_span_count; ++k) {
        INFO(span_info(static_cast<Span>(k)).name);
        const Summary& s = summary(r, PerfSource::disagg, static_cast<Span>(k));
        CHECK(s.count == 1);
        CHECK(s.median == Approx(static_cast<double>(k + 1)).margin(1e-6));
        CHECK(samples(r, PerfSource::disagg, static_cast<Span>(k)).missing == 0);
    }
    CHECK(summary(r, PerfSource::disagg, Span::ttft).median == Approx(78.0).margin(1e-6));
    CHECK(summary(r, PerfSource::disagg, Span::queue).median == Approx(0.5).margin(1e-6));
    CHECK(summary(r, PerfSource::disagg, Span::e2e).median == Approx(200.0).margin(1e-6));
    // No token count in the record: TPOT is excluded and counted, not 0.
    CHECK(summary(r, PerfSource::disagg, Span::tpot).count == 0);
    CHECK(samples(r, PerfSource::disagg, Span::tpot).missing == 1);
    CHECK_FALSE(r.has_integrity_problems());

    // The JSON output shows the spans rounded to the nanosecond: exactly 1.0 ... 12.0.
    simdjson::dom::parser parser;
    const std::string json = report_json(r);
    simdjson::dom::element doc;
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    double v = 0;
    REQUIRE(doc["perf_metrics"]["disagg"]["disagg_relay"]["median"].get(v) == simdjson::SUCCESS);
    CHECK(v == 6.0);
    REQUIRE(doc["perf_metrics"]["disagg"]["disagg_postprocessing"]["p99"].get(v) == simdjson::SUCCESS);
    CHECK(v == 12.0);
    CHECK(doc["perf_metrics"]["disagg"]["tpot"]["median"].is_null());
}

TEST_CASE("Torn and malformed lines are counted per file with their line numbers, and the lines after them "
          "still count",
          "[tools][report]")
{
    const Report r = run(data / "mixed");
    CHECK(r.files.size() == 5);  // *.jsonl only: notes.txt and the sidecar are not records
    const FileIntegrity& perf = file(r, perf_file);
    CHECK(perf.lines == 6);
    CHECK(perf.valid == 4);
    CHECK(perf.malformed == 2);
    CHECK(perf.torn_tail_bytes == 25);
    REQUIRE(perf.malformed_lines.size() == 2);
    CHECK(perf.malformed_lines[0].line == 3);
    CHECK(perf.malformed_lines[1].line == 5);
    CHECK(perf.malformed_lines[1].error == "empty line");

    const FileIntegrity& raw = file(r, "2026-11-29T15/raw-99.jsonl");
    CHECK(raw.lines == 4);
    CHECK(raw.malformed == 1);  // invalid UTF-8
    REQUIRE(raw.malformed_lines.size() == 1);
    CHECK(raw.malformed_lines[0].line == 3);
    CHECK(raw.kinds[static_cast<std::size_t>(RecordKind::raw_output)] == 3);

    const FileIntegrity& empty = file(r, "empty.jsonl");
    CHECK(empty.lines == 0);
    CHECK(empty.torn_tail_bytes == 0);
    CHECK(r.malformed == 3);
    CHECK(r.torn_tails == 1);
    CHECK(r.has_integrity_problems());
}

TEST_CASE("A span with a missing or inverted end is excluded and counted, never reported as 0",
          "[tools][report]")
{
    const Report r = run(data / "mixed");
    REQUIRE(r.perf.records[1] == 4);
    // Line 1: a full record. Line 2: null first token, last token before arrival. Line 4:
    // wrong types, 1e308, -1, 0. Line 6: perf_metrics is not an object.
    const SampleSet& e2e = samples(r, PerfSource::worker, Span::e2e);
    CHECK(e2e.values.size() == 1);
    CHECK(e2e.inverted == 1);
    CHECK(e2e.missing == 2);
    const SampleSet& ttft = samples(r, PerfSource::worker, Span::ttft);
    CHECK(ttft.values.size() == 1);
    CHECK(ttft.missing == 3);
    CHECK(summary(r, PerfSource::worker, Span::ttft).median == Approx(22.9).margin(1e-6));
    for (const double v : samples(r, PerfSource::worker, Span::queue).values) CHECK(v > 0);
    // TPOT from the iteration range: (410.0 - 25.0) ms over 860 - 812 tokens.
    CHECK(summary(r, PerfSource::worker, Span::tpot).median == Approx(385.0 / 48).margin(1e-6));
    // Step and chunk spans, offset-free (they sit on another clock base).
    CHECK(summary(r, PerfSource::worker, Span::chunk_forward).median == Approx(3.0).margin(1e-6));
    CHECK(summary(r, PerfSource::worker, Span::step_gpu_sample).median == Approx(0.5).margin(1e-9));
    CHECK(r.perf.status.at("complete") == 3);
    CHECK(r.perf.status_other == 1);  // "status": 7
}

TEST_CASE("Raw-output records give outputs, tokens, partial records by end_reason and logprob figures",
          "[tools][report]")
{
    const Report r = run(data / "mixed");
    const auto& raw = r.raw;
    CHECK(raw.outputs == 3);
    CHECK(raw.tokens == 11);
    CHECK(raw.token_count_mismatch == 0);
    CHECK(raw.frames_inconsistent == 2);
    CHECK(raw.partial == 1);
    CHECK(raw.end_reasons.at("error") == 1);
    CHECK(r.frames_per_output.median == 3);
    CHECK(raw.with_logprobs == 2);
    CHECK(raw.logprob_values == 6);
    CHECK(raw.logprob_nulls == 2);
    CHECK(raw.nonfinite_positions == 2);
    CHECK(raw.logprob_misaligned == 0);
    CHECK(raw.logprob_sum / static_cast<double>(raw.logprob_values) == Approx(-1.0));
    CHECK(raw.ranked_tokens == 3);
    CHECK(raw.rank1_tokens == 2);
    CHECK(raw.top_positions == 8);
    CHECK(raw.first_gen_items == 2);
    CHECK(raw.first_gen_bad == 1);
    CHECK(raw.first_gen_dtypes.at("float16") == 1);
}

TEST_CASE("Request traces are joined by trace_id, redactions are counted and the sidecar is verified",
          "[tools][report]")
{
    const Report r = run(data / "mixed");
    const auto& t = r.trace;
    CHECK(t.requests == 2);
    CHECK(t.responses == 2);
    CHECK(t.request_status.at("accepted") == 1);
    CHECK(t.request_status.at("rejected_400") == 1);
    CHECK(t.response_status.at("completed") == 1);
    CHECK(t.response_status.at("client_disconnected") == 1);
    CHECK(t.requests_without_response == 1);
    CHECK(t.responses_without_request == 1);
    CHECK(t.redacted == 3);
    CHECK(t.redacted_by_name.at("authorization") == 1);
    CHECK(t.unredacted_credentials == 1);  // X-Auth-Token: leaked
    CHECK(t.body_parse_errors == 1);
    REQUIRE(r.sidecars.size() == 1);
    CHECK(r.sidecars[0].consistent);
    CHECK(r.sidecars[0].records == 4);
    CHECK(r.sidecars[0].persisted == 4);
}

TEST_CASE("Files read in many small parts on several threads give the same figures as read whole",
          "[tools][report]")
{
    const Report whole = run(data / "mixed", std::uint64_t{32} << 20, 1);
    const Report parts = run(data / "mixed", 7, 3);
    REQUIRE(whole.files.size() == parts.files.size());
    for (std::size_t i = 0; i < whole.files.size(); ++i) {
        INFO(whole.files[i].name);
        CHECK(whole.files[i].lines == parts.files[i].lines);
        CHECK(whole.files[i].valid == parts.files[i].valid);
        CHECK(whole.files[i].malformed == parts.files[i].malformed);
        CHECK(whole.files[i].torn_tail_bytes == parts.files[i].torn_tail_bytes);
        REQUIRE(whole.files[i].malformed_lines.size() == parts.files[i].malformed_lines.size());
        for (std::size_t k = 0; k < whole.files[i].malformed_lines.size(); ++k)
            CHECK(whole.files[i].malformed_lines[k].line == parts.files[i].malformed_lines[k].line);
    }
    CHECK(whole.raw.tokens == parts.raw.tokens);
    CHECK(whole.trace.redacted == parts.trace.redacted);
    CHECK(report_json(whole).size() > 0);
}

TEST_CASE("The HTML page has one SVG per figure, a timeline row per request, and escapes text",
          "[tools][report]")
{
    const Report r = run(data / "disagg");
    const std::string html = report_html(r);
    // queue, TTFT and end-to-end histograms (TPOT has no samples) and the timeline.
    CHECK(occurrences(html, "<figure>") == 4);
    CHECK(occurrences(html, "<svg ") == 4);
    CHECK(occurrences(html, "</svg>") == 4);
    CHECK(occurrences(html, "<title>disagg_relay: 6.000 ms</title>") == 1);
    // Self-contained: nothing to fetch.
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find(" src=") == std::string::npos);
    CHECK(html.find(" href=") == std::string::npos);

    const Report mixed = run(data / "mixed");
    const std::string page = report_html(mixed);
    CHECK(page.find("<tool_call>") == std::string::npos);
    CHECK(occurrences(page, "<figure>") == occurrences(page, "<svg "));
}

TEST_CASE("The integrity table stays aligned when a file name is longer than any default column",
          "[tools][report]")
{
    char path[] = "/tmp/jsonlw-tools-long-XXXXXX";
    REQUIRE(::mkdtemp(path) != nullptr);
    const fs::path dir(path);
    const std::string long_name =
        "2026-11-29T15/perf_metrics-disagg-gpu-node-0042.rack-17.example.internal-41233-20260722T101530Z-000000.jsonl";
    fs::create_directories(dir / "2026-11-29T15");
    fs::copy_file(data / "disagg" / "perf_metrics-disagg-node07-41233-20260722T101530Z.jsonl", dir / long_name);
    { std::ofstream(dir / "a.jsonl") << "{}\n{\"torn\":"; }
    const Report r = run(dir);
    fs::remove_all(dir);
    REQUIRE(r.files.size() == 2);

    const std::string text = report_text(r);
    const auto begin = text.find("\nIntegrity\n");
    REQUIRE(begin != std::string::npos);
    std::vector<std::string> rows;
    for (auto at = begin + 11; at < text.size() && text[at] != '\n';) {
        const auto end = text.find('\n', at);
        rows.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    REQUIRE(rows.size() == 3);  // the header and the two files
    const std::string& header = rows[0];
    // Every column right-aligned under its header: the rows end where the header ends, and each
    // row's kind starts where the header's "kind" does.
    const auto kind_at = header.find("kind");
    REQUIRE(kind_at != std::string::npos);
    CHECK(kind_at == 4 + long_name.size() + 1);
    CHECK(rows[1] == fmt::format("    {:<{}} {:<20} {:>10} {:>10} {:>10} {:>10}", long_name,
                                 long_name.size(), "perf_metrics_disagg", 1, 1, 0, "-"));
    CHECK(rows[2] == fmt::format("    {:<{}} {:<20} {:>10} {:>10} {:>10} {:>10}", "a.jsonl", long_name.size(),
                                 "other", 1, 1, 0, "8 B"));
    for (const auto& row : rows) CHECK(row.size() == header.size());
}

TEST_CASE("The HTML timeline has a legend entry, in the bars' colour, for each span drawn and no other",
          "[tools][report]")
{
    for (const char* dir : {"disagg", "mixed"}) {
        INFO(dir);
        const Report r = run(data / dir);
        const std::size_t src = r.perf.timeline[0].empty() ? 1 : 0;
        REQUIRE_FALSE(r.perf.timeline[src].empty());
        std::vector<Span> drawn;
        for (const auto& [order, row] : r.perf.timeline[src])
            for (const auto& seg : row.segments)
                if (std::find(drawn.begin(), drawn.end(), seg.span) == drawn.end()) drawn.push_back(seg.span);
        std::sort(drawn.begin(), drawn.end());
        CHECK(drawn.size() == (std::string_view(dir) == "disagg" ? 12 : 4));

        const std::string html = report_html(r);
        const auto legend_at = html.find("<p class=\"legend\">");
        REQUIRE(legend_at != std::string::npos);
        const std::string legend = html.substr(legend_at, html.find("</p>", legend_at) - legend_at);
        CHECK(occurrences(legend, "<span>") == drawn.size());
        for (const Span sp : drawn) {
            const std::string name = span_info(sp).name;
            INFO(name);
            // The bar's fill: <rect ... fill="#rrggbb"><title>NAME: ...
            const auto title_at = html.find("\"><title>" + name + ": ");
            REQUIRE(title_at != std::string::npos);
            const std::string fill = html.substr(title_at - 7, 7);
            CHECK(fill.front() == '#');
            CHECK(occurrences(legend, "<span><i style=\"background:" + fill + "\"></i>" + name + "</span>") == 1);
        }
    }
}

TEST_CASE("Percentiles interpolate linearly between the nearest ranks", "[tools][unit]")
{
    std::vector<double> v{4, 1, 3, 2};
    const Summary s = summarize(v);
    CHECK(s.count == 4);
    CHECK(s.mean == 2.5);
    CHECK(s.median == 2.5);
    CHECK(s.p75 == Approx(3.25));
    CHECK(s.p99 == Approx(3.97));
    std::vector<double> none;
    CHECK(summarize(none).count == 0);
}

TEST_CASE("The line scanner grows for a line longer than its buffer and hands out the torn tail",
          "[tools][unit]")
{
    char path[] = "/tmp/jsonlw-tools-scan-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    const std::string big(1000, 'x');
    const std::string text = "{}\n\"" + big + "\"\n\n[1,2]\n{\"torn\":";
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    LineScanner scanner(fd, 0, LineScanner::to_eof, 16);
    std::string_view line;
    std::uint64_t offset = 0;
    std::vector<std::string> lines;
    while (scanner.next(line, offset)) lines.emplace_back(line);
    ::close(fd);
    ::unlink(path);
    REQUIRE(lines.size() == 4);
    CHECK(lines[1].size() == 1002);
    CHECK(lines[2].empty());
    CHECK(lines[3] == "[1,2]");
    CHECK(scanner.torn_tail() == "{\"torn\":");
    CHECK(scanner.torn_tail_offset() == text.size() - 8);
    CHECK_FALSE(scanner.error());
}

TEST_CASE("The three writers' lines join by traceparent: a request with all three, one without "
          "its raw output, lines without a traceparent and an invalid one counted apart",
          "[tools][report]")
{
    // data/joined: request A has a perf line, two raw outputs, a request and a response line;
    // request B a perf and a request line (its raw output's traceparent is invalid, its
    // response has none); one more perf line has none.
    for (const auto& [part_bytes, jobs] : {std::pair<std::uint64_t, unsigned>{32u << 20, 1}, {64, 3}}) {
        const Report r = run(data / "joined", part_bytes, jobs);
        CHECK(r.malformed == 0);
        const TraceparentJoin& j = r.join;
        CHECK(j.requests == 2);
        CHECK(j.joined == 1);
        CHECK(j.not_joined() == 1);
        CHECK(j.missing_perf == 0);
        CHECK(j.missing_raw == 1);
        CHECK(j.missing_trace == 0);
        CHECK(j.lines_with == 7);
        CHECK(j.lines_without == 2);
        CHECK(j.invalid == 1);
        const std::string text = report_text(r);
        CHECK(text.find("Trace context: 2 requests by traceparent, 1 joined (a perf-metrics, a raw-output "
                        "and a request-trace line each), 1 not joined\n    not joined, without: perf "
                        "metrics 0, raw output 1, request trace 0; lines without traceparent: 2, with an "
                        "invalid one: 1\n") != std::string::npos);
        CHECK(report_json(r).find(R"("trace_context":{"requests":2,"joined":1,"not_joined":1,)"
                                  R"("missing":{"perf_metrics":0,"raw_output":1,"request_trace":0},)"
                                  R"("lines_with_traceparent":7,"lines_without_traceparent":2,)"
                                  R"("invalid_traceparents":1})") != std::string::npos);
    }
    // Without any traceparent the text report has no such section.
    CHECK(report_text(run(data / "mixed")).find("Trace context") == std::string::npos);
}
