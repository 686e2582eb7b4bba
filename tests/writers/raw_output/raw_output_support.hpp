// What the raw-output tests share: feeding chunks (the chunk only borrows, so feed() keeps the
// storage alive for the call), and reading every record back — each line parsed with
// simdjson, its keys checked in order, its types and cross-field rules checked, and its file
// checked against its own finished_at.
#pragma once

#include <jsonlw/raw_output_writer.hpp>

#include "common.hpp"

#include <catch2/catch.hpp>
#include <simdjson.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace raw_output_test {

using jsonlw::OutputChunk;
using jsonlw::RawOutputOptions;
using jsonlw::RawOutputWriter;
using jsonlw::TokenLogprob;

inline RawOutputOptions options(const std::filesystem::path& dir, const jsonlw_test::LogCapture& logs)
{
    RawOutputOptions o;
    o.directory = dir;
    o.log = logs.sink();
    return o;
}

// options() in the harness's temp dir, through its seam when there is one.
inline RawOutputOptions options(const jsonlw_test::Harness& h)
{
    RawOutputOptions o = options(h.dir.path(), h.logs);
    if (h.seam) o.file_io = h.seam;
    return o;
}

// One hook call, with owned storage.
struct Feed {
    std::uint64_t req = 0;
    std::uint32_t idx = 0;
    std::string text;
    std::vector<std::int32_t> ids{};
    bool final_ = false;
    bool aborted = false;
    bool streaming = true;
    std::optional<std::uint64_t> disagg{};
    std::optional<std::string> full_text{};
    std::vector<TokenLogprob> logprobs{};
};

inline void feed(RawOutputWriter& w, const Feed& f)
{
    OutputChunk c;
    c.request_id = f.req;
    c.output_index = f.idx;
    c.text_diff = f.text;
    c.token_ids_diff = f.ids;
    c.is_final = f.final_;
    c.aborted = f.aborted;
    c.streaming = f.streaming;
    c.disagg_request_id = f.disagg;
    if (f.full_text) c.text = std::string_view(*f.full_text);
    c.logprobs_diff = f.logprobs;
    w.on_chunk(c);
}

// One line read back.
struct Record {
    std::filesystem::path file;
    std::string line;
    std::string request_id;
    std::optional<std::string> disagg_request_id;
    std::uint64_t output_index = 0;
    std::string started_at, finished_at;
    bool streaming = false, aborted = false;
    std::string text;
    std::vector<std::string> frames;
    std::vector<std::int64_t> token_ids;
    std::uint64_t num_output_tokens = 0;
    bool frames_consistent = false;
    bool has_logprobs = false;
    std::optional<bool> partial;
    std::optional<std::string> end_reason;

    std::string key() const { return request_id + "/" + std::to_string(output_index); }
};

inline std::string file_name() { return "raw-" + std::to_string(::getpid()) + ".jsonl"; }

// 2026-11-04T05:06:07.123456Z plus `offset`: the stamps of the records built by hand.
inline jsonlw::WallClock::time_point at(std::chrono::microseconds offset = {})
{
    using namespace std::chrono;
    return sys_days{year{2026} / November / 4} + hours{5} + minutes{6} + seconds{7} +
           microseconds{123456} + offset;
}

inline std::string str(simdjson::dom::element e)
{
    std::string_view v;
    REQUIRE(e.get_string().get(v) == simdjson::SUCCESS);
    return std::string(v);
}

inline bool boolean(simdjson::dom::element e)
{
    bool v = false;
    REQUIRE(e.get_bool().get(v) == simdjson::SUCCESS);
    return v;
}

inline std::uint64_t uint(simdjson::dom::element e)
{
    std::uint64_t v = 0;
    REQUIRE(e.get_uint64().get(v) == simdjson::SUCCESS);
    return v;
}

// Parses one line and checks its shape: keys in the documented order, types, and the rules
// that tie fields together.
inline Record parse_record(const std::string& line, const std::filesystem::path& file)
{
    INFO(line);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(line).get(doc) == simdjson::SUCCESS);
    simdjson::dom::object obj;
    REQUIRE(doc.get_object().get(obj) == simdjson::SUCCESS);

    std::vector<std::string> keys;
    for (auto field : obj) keys.emplace_back(field.key);
    std::vector<std::string> expected = {
        "event", "request_id", "disagg_request_id", "output_index", "started_at", "finished_at",
        "streaming", "aborted", "text", "frames", "token_ids", "num_output_tokens",
        "frames_consistent"};
    for (const char* optional : {"logprobs", "ranks", "top_logprobs", "logprobs_nonfinite",
                                 "logprobs_missing", "first_gen_logits",
                                 "first_gen_logits_overflow_to_inf"})
        if (std::find(keys.begin(), keys.end(), optional) != keys.end()) expected.push_back(optional);
    if (std::find(keys.begin(), keys.end(), "partial") != keys.end()) {
        expected.push_back("partial");
        expected.push_back("end_reason");
    }
    REQUIRE(keys == expected);

    Record r;
    r.file = file;
    r.line = line;
    CHECK(str(obj["event"]) == "raw_output");
    r.request_id = str(obj["request_id"]);
    CHECK(std::regex_match(r.request_id, std::regex("0|[1-9][0-9]*")));
    if (!obj["disagg_request_id"].is_null()) {
        r.disagg_request_id = str(obj["disagg_request_id"]);
        CHECK(std::regex_match(*r.disagg_request_id, std::regex("0|[1-9][0-9]*")));
    }
    r.output_index = uint(obj["output_index"]);
    r.started_at = str(obj["started_at"]);
    r.finished_at = str(obj["finished_at"]);
    const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)");
    CHECK(std::regex_match(r.started_at, iso));
    CHECK(std::regex_match(r.finished_at, iso));
    CHECK(r.started_at <= r.finished_at);
    r.streaming = boolean(obj["streaming"]);
    r.aborted = boolean(obj["aborted"]);
    r.text = str(obj["text"]);
    simdjson::dom::array frames;
    REQUIRE(obj["frames"].get_array().get(frames) == simdjson::SUCCESS);
    for (auto f : frames) {
        r.frames.push_back(str(f));
        CHECK_FALSE(r.frames.back().empty());  // frames are the non-empty diffs
    }
    simdjson::dom::array ids;
    REQUIRE(obj["token_ids"].get_array().get(ids) == simdjson::SUCCESS);
    for (auto t : ids) {
        std::int64_t v = 0;
        REQUIRE(t.get_int64().get(v) == simdjson::SUCCESS);
        r.token_ids.push_back(v);
    }
    r.num_output_tokens = uint(obj["num_output_tokens"]);
    CHECK(r.num_output_tokens == r.token_ids.size());
    r.frames_consistent = boolean(obj["frames_consistent"]);
    std::string joined;
    for (const auto& f : r.frames) joined += f;
    if (r.frames_consistent) CHECK(joined == r.text);
    r.has_logprobs = std::find(keys.begin(), keys.end(), "logprobs") != keys.end();
    if (r.has_logprobs) {
        simdjson::dom::array lps;
        REQUIRE(obj["logprobs"].get_array().get(lps) == simdjson::SUCCESS);
        CHECK(lps.size() > 0);  // an empty field is omitted
        CHECK(lps.size() == r.token_ids.size());  // parallel to token_ids
        for (const char* parallel : {"ranks", "top_logprobs"}) {
            simdjson::dom::array a;
            if (obj[parallel].get_array().get(a) == simdjson::SUCCESS) CHECK(a.size() == lps.size());
        }
    } else {
        for (const char* dependent : {"ranks", "top_logprobs", "logprobs_nonfinite"})
            CHECK(std::find(keys.begin(), keys.end(), dependent) == keys.end());
    }
    if (std::find(keys.begin(), keys.end(), "partial") != keys.end()) {
        r.partial = boolean(obj["partial"]);
        CHECK(*r.partial);
        r.end_reason = str(obj["end_reason"]);
        CHECK_FALSE(r.end_reason->empty());
        CHECK_FALSE(r.frames_consistent);  // no final text to check the frames against
        CHECK(joined == r.text);
    }
    // Filed under the hour of its own finished_at, in this process's file.
    CHECK(file.filename() == file_name());
    CHECK(file.parent_path().filename() == r.finished_at.substr(0, 13));
    return r;
}

// Every record under `dir`, file by file (hour folders in order), line by line.
inline std::vector<Record> read_records(const std::filesystem::path& dir)
{
    std::vector<Record> out;
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) return out;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        const std::string content = jsonlw_test::read_file(f);
        REQUIRE((content.empty() || content.back() == '\n'));
        for (const auto& line : jsonlw_test::split_lines(content)) out.push_back(parse_record(line, f));
    }
    return out;
}

// The records by "request/output".
inline std::map<std::string, Record> by_key(const std::vector<Record>& records)
{
    std::map<std::string, Record> out;
    for (const auto& r : records) {
        INFO(r.line);
        CHECK(out.emplace(r.key(), r).second);  // one record per output
    }
    return out;
}

using Strings = std::vector<std::string>;
using Ids = std::vector<std::int64_t>;

}  // namespace raw_output_test
