// jsonlw report and validate over OTLP JSON Lines (docs/otlp.md, "Reading it back"): the golden
// inputs of data/joined, turned into OTLP by the OtlpSink a writer with format otlp uses, read
// back record for record — the same bytes, the same report — and broken lines named.
#include "validate.hpp"

#include <catch2/catch.hpp>

#include <jsonlw/report/detail/otlp_lines.hpp>
#include <jsonlw/report/report.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/otlp_sink.hpp>

#include <simdjson.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace jsonlw::tools;

namespace {

const fs::path data = JSONLW_TOOLS_DATA;

std::string slurp(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const fs::path& p, const std::string& text)
{
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

// Each file of `from` as OTLP under `to` (same relative name): one LogsData line per group of
// up to `group` lines, as an OtlpSink writes them.
std::size_t to_otlp(const fs::path& from, const fs::path& to, std::size_t group)
{
    fs::remove_all(to);
    std::size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(from)) {
        if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
        auto mem = std::make_shared<jsonlw::MemorySink>();
        jsonlw::OtlpSink otlp(mem, {.service_name = "test", .event_name = "e"});
        jsonlw::SinkContext ctx;
        ctx.host = "h";
        ctx.pid = 1;
        REQUIRE(!otlp.start(ctx));
        const std::string text = slurp(e.path());
        std::size_t begin = 0, n = 0, at = 0;
        while (at < text.size()) {
            at = text.find('\n', at) + 1;
            if (++n == group || at >= text.size()) {
                otlp.append("", jsonlw::Lines{std::string_view(text).substr(begin, at - begin), n, 0});
                begin = at;
                n = 0;
            }
        }
        spit(to / e.path().lexically_relative(from), mem->text());
        ++files;
    }
    return files;
}

Report run(const fs::path& dir)
{
    ReportOptions o;
    o.dir = dir;
    o.progress.enabled = false;
    return build_report(o);
}

}  // namespace

TEST_CASE("A LogsData line reads back as the records the writer would have written, byte for byte",
          "[tools][otlp]")
{
    const fs::path out = fs::temp_directory_path() / "jsonlw-tools-otlp-bytes";
    REQUIRE(to_otlp(data / "joined", out, 3) == 4);
    simdjson::dom::parser parser;
    OtlpRecords records;
    for (const auto& e : fs::recursive_directory_iterator(data / "joined")) {
        if (!e.is_regular_file()) continue;
        std::vector<std::string> want;
        {
            std::ifstream in(e.path());
            for (std::string l; std::getline(in, l);) want.push_back(l);
        }
        std::vector<std::string> got;
        std::ifstream in(out / e.path().filename());
        for (std::string l; std::getline(in, l);) {
            simdjson::dom::element root;
            REQUIRE(parser.parse(l).get(root) == simdjson::SUCCESS);
            REQUIRE(is_otlp_logs(root));
            REQUIRE(records.decode(root));
            for (std::size_t i = 0; i < records.size(); ++i) got.emplace_back(records.record(i));
        }
        INFO(e.path().filename().string());
        CHECK(got == want);
    }
    fs::remove_all(out);
}

TEST_CASE("jsonlw report over the OTLP copy of data/joined gives the JSON Lines report's counts and join",
          "[tools][otlp]")
{
    const fs::path out = fs::temp_directory_path() / "jsonlw-tools-otlp-report";
    to_otlp(data / "joined", out, 2);
    const Report plain = run(data / "joined");
    const Report otlp = run(out);
    CHECK(otlp.malformed == 0);
    CHECK(otlp.valid == plain.valid);
    std::uint64_t groups = 0;
    for (const auto& f : plain.files) groups += (f.lines + 1) / 2;
    CHECK(otlp.otlp_lines == groups);
    CHECK(otlp.lines == groups);
    CHECK(otlp.join.requests == plain.join.requests);
    CHECK(otlp.join.joined == plain.join.joined);
    CHECK(otlp.join.lines_with == plain.join.lines_with);
    CHECK(otlp.join.lines_without == plain.join.lines_without);
    CHECK(otlp.join.invalid == plain.join.invalid);
    CHECK(otlp.trace.requests == plain.trace.requests);
    CHECK(otlp.trace.responses == plain.trace.responses);
    CHECK(otlp.raw.outputs == plain.raw.outputs);
    const std::string text = report_text(otlp);
    CHECK(text.find(std::to_string(groups) + " lines are OTLP LogsData") != std::string::npos);
    CHECK(report_html(otlp).find("<h2>Trace context</h2>") != std::string::npos);
    fs::remove_all(out);
}

TEST_CASE("validate names the first OTLP rule a LogsData line breaks", "[tools][otlp]")
{
    const fs::path out = fs::temp_directory_path() / "jsonlw-tools-otlp-validate";
    to_otlp(data / "joined", out, 100);
    const fs::path file = out / "raw-7.jsonl";
    const ValidateResult good = validate_file(file);
    CHECK(good.malformed == 0);
    CHECK(good.otlp_lines == 1);
    CHECK(good.otlp_records == 3);
    const std::string text = slurp(file);
    const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> breaks = {
        {{"\"intValue\":\"", "\"intValue\":"}, "resource: intValue is not a decimal string"},
        {{"{\"key\":\"output_index\",\"value\":{\"intValue\":\"", "{\"key\":\"output_index\",\"value\":{\"intValue\":"},
         "logRecords[0]: intValue is not a decimal string"},
        {{"\"traceId\":\"", "\"traceId\":\"A"}, "traceId is not 32 lowercase hex digits"},
        {{"\"severityNumber\":9", "\"severityNumber\":\"SEVERITY_NUMBER_INFO\""}, "severityNumber is not a number"},
        {{"\"body\":{\"kvlistValue\"", "\"bogus\":1,\"body\":{\"kvlistValue\""}, "\"bogus\" is not a LogRecord field"},
        {{"{\"stringValue\":", "{\"boolValue\":true,\"stringValue\":"}, "an AnyValue holds more than one value"},
    };
    for (const auto& [edit, why] : breaks) {
        std::string bad = text;
        const auto at = bad.find(edit.first);
        REQUIRE(at != std::string::npos);
        bad.replace(at, edit.first.size(), edit.second);
        if (edit.second.ends_with("\"intValue\":")) bad.erase(bad.find('"', at + edit.second.size()), 1);
        spit(file, bad);
        const ValidateResult r = validate_file(file);
        INFO(why);
        CHECK(r.malformed == 1);
        REQUIRE(r.problems.size() == 1);
        INFO(r.problems[0].error);
        CHECK(r.problems[0].error.rfind("OTLP: resourceLogs[0]", 0) == 0);
        CHECK(r.problems[0].error.find(why) != std::string::npos);
    }
    fs::remove_all(out);
}
