// jsonlw validate, called as a library: golden inputs in data/validate.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "validate.hpp"

#include <stdlib.h>

#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace jsonlw::tools;

namespace {
const fs::path data = fs::path(JSONLW_TOOLS_DATA) / "validate";
// closed.jsonl, 2026-11-29T15/{perf-000000.jsonl, perf-000001.jsonl.open (torn: 7 B), notes.txt}
const fs::path tree = fs::path(JSONLW_TOOLS_DATA) / "validate_tree";
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

TEST_CASE("A directory gives every *.jsonl and *.jsonl.open under it, sorted; other files are skipped",
          "[tools][validate]")
{
    std::vector<std::string> errors;
    const std::vector<ValidateInput> in = validate_inputs({tree}, errors);
    CHECK(errors.empty());
    REQUIRE(in.size() == 3);
    CHECK(in[0].path == tree / "2026-11-29T15" / "perf-000000.jsonl");
    CHECK_FALSE(in[0].still_written);
    CHECK(in[1].path == tree / "2026-11-29T15" / "perf-000001.jsonl.open");
    CHECK(in[1].still_written);
    CHECK(in[2].path == tree / "closed.jsonl");
    CHECK_FALSE(in[2].still_written);
}

TEST_CASE("A file named on the command line is read whatever its name; a .jsonl.open one is still being "
          "written",
          "[tools][validate]")
{
    std::vector<std::string> errors;
    const fs::path open = tree / "2026-11-29T15" / "perf-000001.jsonl.open";
    const fs::path notes = tree / "2026-11-29T15" / "notes.txt";
    const std::vector<ValidateInput> in = validate_inputs({notes, open, data / "torn.jsonl"}, errors);
    CHECK(errors.empty());
    REQUIRE(in.size() == 3);
    CHECK(in[0].path == notes);
    CHECK_FALSE(in[0].still_written);
    CHECK(in[1].path == open);
    CHECK(in[1].still_written);
    CHECK_FALSE(in[2].still_written);
}

TEST_CASE("A directory without any *.jsonl file is an error, not a pass", "[tools][validate]")
{
    char path[] = "/tmp/jsonlw-validate-empty-XXXXXX";
    REQUIRE(::mkdtemp(path) != nullptr);
    std::vector<std::string> errors;
    const std::vector<ValidateInput> in = validate_inputs({fs::path(path)}, errors);
    fs::remove_all(path);
    CHECK(in.empty());
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == std::string(path) + ": no *.jsonl or *.jsonl.open file under it");
}

TEST_CASE("The torn tail of a file still being written is expected; a closed file's fails the run",
          "[tools][validate]")
{
    const ValidateResult open = validate_file(tree / "2026-11-29T15" / "perf-000001.jsonl.open", true);
    CHECK(open.lines == 1);
    CHECK(open.valid == 1);
    CHECK(open.torn_tail_bytes == 7);
    CHECK(open.still_written);
    CHECK(validate_exit_status({open}, false) == 0);
    const ValidateResult closed = validate_file(data / "torn.jsonl");
    CHECK_FALSE(closed.still_written);
    CHECK(validate_exit_status({open, closed}, false) == 2);
    CHECK(validate_exit_status({open, closed}, true) == 0);
}
