// jsonlw validate, called as a library: golden inputs in data/validate.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "validate.hpp"

namespace fs = std::filesystem;
using namespace jsonlw::tools;

namespace {
const fs::path data = fs::path(JSONLW_TOOLS_DATA) / "validate";
}

TEST_CASE("A malformed line does not hide the valid lines after it", "[tools][validate]")
{
    const ValidateResult r = validate_file(data / "bad.jsonl");
    CHECK(r.lines == 5);
    CHECK(r.valid == 3);
    CHECK(r.malformed == 2);
    REQUIRE(r.problems.size() == 2);
    CHECK(r.problems[0].line == 2);
    CHECK(r.problems[1].line == 4);  // trailing garbage after a value
    CHECK(validate_exit_status({r}, false) == 1);
    CHECK(validate_exit_status({r}, true) == 1);
}

TEST_CASE("A torn final line is reported apart and fails only without --allow-torn-tail",
          "[tools][validate]")
{
    const ValidateResult r = validate_file(data / "torn.jsonl");
    CHECK(r.lines == 2);
    CHECK(r.valid == 2);
    CHECK(r.malformed == 0);
    CHECK(r.torn_tail_bytes == 5);
    CHECK(r.torn_tail_line == 3);
    CHECK(validate_exit_status({r}, false) == 2);
    CHECK(validate_exit_status({r}, true) == 0);
}

TEST_CASE("Invalid UTF-8 makes a line malformed", "[tools][validate]")
{
    const ValidateResult r = validate_file(data / "bad_utf8.jsonl");
    CHECK(r.malformed == 1);
    CHECK(r.valid == 1);
}

TEST_CASE("Any JSON value is a valid line, and a missing file is an error of its own", "[tools][validate]")
{
    const ValidateResult good = validate_file(data / "good.jsonl");
    CHECK(good.valid == 3);
    CHECK(validate_exit_status({good}, false) == 0);
    const ValidateResult missing = validate_file(data / "no-such-file.jsonl");
    CHECK_FALSE(missing.error.empty());
    CHECK(validate_exit_status({good, missing}, false) == 3);
}
