// The raw-output writer the snapshot tests feed: a RawOutputWriter with default options in a
// temp dir, started, on an IoRunner whose thread the test starts (after building what it
// posts to the loop); and its records read back with their per-token arrays. A Catch2
// fixture (TEST_CASE_METHOD); members in destruction order: the writer first, the io_context
// after it.
#pragma once

#include <jsonlw/raw_output_writer.hpp>

#include "io_runner.hpp"
#include "stage_support.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jsonlw_test {

// One raw-output record read back: the document, its request id, and its token_ids,
// logprobs, ranks and top_logprobs arrays.
struct TokenRecord {
    simdjson::dom::element doc;
    std::uint64_t id = 0;
    simdjson::dom::array ids, lps, ranks, tops;

    // Step i's rank, required to be an integer.
    std::int64_t rank_at(std::size_t i) const
    {
        std::int64_t rank = 0;
        REQUIRE(ranks.at(i).get_int64().get(rank) == simdjson::SUCCESS);
        return rank;
    }
    // Step i's top logprobs, required to be an array.
    simdjson::dom::array top_at(std::size_t i) const
    {
        simdjson::dom::array top;
        REQUIRE(tops.at(i).get_array().get(top) == simdjson::SUCCESS);
        return top;
    }
};

struct RawOutputInTempDir {
    RawOutputInTempDir() : writer(loop.executor(), options_in(dir)) { writer.start(); }

    TempDir dir;
    IoRunner loop;
    jsonlw::RawOutputWriter writer;

    // f(record) for each record the writer wrote, which must be `expected` of them; the
    // record's line is the INFO of what f checks.
    template <class F>
    void for_each_token_record(std::size_t expected, F f) const
    {
        const auto lines = lines_under(dir.path());
        REQUIRE(lines.size() == expected);
        simdjson::dom::parser parser;
        for (const std::string& line : lines) {
            INFO(line);
            TokenRecord r;
            REQUIRE(parser.parse(line).get(r.doc) == simdjson::SUCCESS);
            std::string_view id_text;
            REQUIRE(r.doc["request_id"].get_string().get(id_text) == simdjson::SUCCESS);
            r.id = std::stoull(std::string(id_text));
            REQUIRE(r.doc["token_ids"].get_array().get(r.ids) == simdjson::SUCCESS);
            REQUIRE(r.doc["logprobs"].get_array().get(r.lps) == simdjson::SUCCESS);
            REQUIRE(r.doc["ranks"].get_array().get(r.ranks) == simdjson::SUCCESS);
            REQUIRE(r.doc["top_logprobs"].get_array().get(r.tops) == simdjson::SUCCESS);
            f(r);
        }
    }

private:
    static jsonlw::RawOutputOptions options_in(const TempDir& d)
    {
        jsonlw::RawOutputOptions o;
        o.directory = d.path();
        return o;
    }
};

}  // namespace jsonlw_test
