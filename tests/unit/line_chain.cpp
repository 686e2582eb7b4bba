// LineChain and verify_chain: the bytes line_chain.hpp documents, checked against values the
// openssl command line computed (`printf '%s' '<P><L>' | openssl dgst -sha256 [-hmac KEY]`),
// then seal/verify round trips and the break each kind of damage is reported as.
#include <jsonlw/line_chain.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using jsonlw::ChainBreak;
using jsonlw::ChainKey;
using jsonlw::ChainMode;
using jsonlw::LineChain;

namespace {

const std::string zeros(64, '0');
constexpr const char* first_a = "fc6cee09194dd2578bd7664604fcb72a539066fd34544cea0009c43eb6cdc289";

std::string seal_all(LineChain& chain, const std::vector<std::string>& lines)
{
    std::string out;
    for (const std::string& l : lines) chain.seal(out, l + "\n");
    return out;
}

std::vector<std::string> split(const std::string& text)
{
    std::vector<std::string> v;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) v.push_back(l + "\n");
    return v;
}

std::string join(const std::vector<std::string>& v)
{
    std::string s;
    for (const std::string& l : v) s += l;
    return s;
}

std::optional<ChainBreak> verify(const std::string& text, std::string& prev,
                                 ChainMode mode = ChainMode::sha256,
                                 const std::optional<ChainKey>& key = std::nullopt)
{
    std::istringstream in(text);
    return verify_chain(in, mode, key, prev);
}

// The line one chain from the zero start makes of `line`.
std::string seal_one(ChainMode mode, std::optional<ChainKey> key, std::string_view line)
{
    LineChain chain(mode, std::move(key));
    std::string out;
    chain.seal(out, line);
    return out;
}

// Checks that `v`, verified from `prev`, breaks first at `line` as `kind` with `detail`.
void check_break(const std::vector<std::string>& v, std::string& prev, std::size_t line,
                 ChainBreak::Kind kind, const std::string& detail)
{
    const auto b = verify(join(v), prev);
    REQUIRE(b);
    CHECK(b->line == line);
    CHECK(b->kind == kind);
    CHECK(b->detail == detail);
}

const std::vector<std::string> five = {
    R"({"a":1})", R"({"b":2})", R"({})", R"({"d":[4,"}"]})", R"({"e":{"f":5}})"};

std::filesystem::path write_file(const std::string& name, const std::string& bytes)
{
    auto p = std::filesystem::temp_directory_path() / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
}

}  // namespace

SCENARIO("seal writes the chain value openssl computes for the documented bytes", "[unit]")
{
    GIVEN("a sha256 chain from the zero start")
    {
        LineChain chain(ChainMode::sha256, std::nullopt);
        std::string out;
        chain.seal(out, "{\"a\":1}\n");
        chain.seal(out, "{\"b\":2}");
        THEN("line 1 hashes 64 '0's then {\"a\":1}; line 2 the first value then {\"b\":2}")
        {
            CHECK(out == std::string("{\"a\":1,\"chain\":\"") + first_a + "\"}\n" +
                             "{\"b\":2,\"chain\":\"e3899cf384885c2580552e967c3095d9aed9aaaa1d72d6ea757965bea202715b\"}");
            CHECK(chain.last() == "e3899cf384885c2580552e967c3095d9aed9aaaa1d72d6ea757965bea202715b");
        }
    }
    THEN("hmac-sha256 with the key chain-key is HMAC-SHA256(key, 64 '0's then {\"a\":1})")
    {
        CHECK(seal_one(ChainMode::hmac_sha256, ChainKey{"chain-key"}, "{\"a\":1}\n") ==
              "{\"a\":1,\"chain\":\"cb15eb2434445b8d6d2fa99bfe1abb560b06e0d512266148b3a029c3010915d3\"}\n");
    }
    THEN("an empty object gets the key without a comma")
    {
        CHECK(seal_one(ChainMode::sha256, std::nullopt, "{}\n") ==
              "{\"chain\":\"5508d2b710e64bc470079e1b211d9c58e21011e59d0559e422345dc19d659a75\"}\n");
    }
    THEN("mode none copies the line unchanged")
    {
        CHECK(seal_one(ChainMode::none, std::nullopt, "{\"a\":1}\n") == "{\"a\":1}\n");
    }
    GIVEN("a line that is not one object")
    {
        LineChain chain(ChainMode::sha256, std::nullopt);
        std::string out = "x";
        THEN("seal refuses it and changes nothing")
        {
            CHECK_THROWS_AS(chain.seal(out, "[1]\n"), std::invalid_argument);
            CHECK_THROWS_AS(chain.seal(out, "{\"a\":1"), std::invalid_argument);
            CHECK(out == "x");
            CHECK(chain.last() == zeros);
        }
    }
}

SCENARIO("five sealed lines verify and end on the value the writer ended on", "[unit]")
{
    for (ChainMode mode : {ChainMode::sha256, ChainMode::hmac_sha256}) {
        const std::optional<ChainKey> key =
            mode == ChainMode::hmac_sha256 ? std::optional<ChainKey>(ChainKey{"k"}) : std::nullopt;
        LineChain chain(mode, key, std::string(64, 'a'));
        const std::string text = seal_all(chain, five);
        std::string prev(64, 'a');
        CHECK_FALSE(verify(text, prev, mode, key));
        CHECK(prev == chain.last());
        std::string wrong_start = zeros;
        const auto b = verify(text, wrong_start, mode, key);
        REQUIRE(b);
        CHECK(b->line == 1);
        CHECK(b->kind == ChainBreak::Kind::edited);
    }
}

SCENARIO("each kind of damage is reported at its line", "[unit]")
{
    LineChain chain(ChainMode::sha256, std::nullopt);
    const std::vector<std::string> lines = split(seal_all(chain, five));
    std::string prev = zeros;

    WHEN("a byte of line 2's content is changed")
    {
        auto v = lines;
        v[1][5] = '3';  // {"b":2,... -> {"b":3,...
        check_break(v, prev, 2, ChainBreak::Kind::edited,
                    "line 2's bytes do not give its chain value, which line 3 chains onto: "
                    "line 2 was edited, or the line(s) just before it deleted");
        CHECK(prev == first_a);
    }
    WHEN("line 2 is deleted, which the chain cannot tell from an edit of line 3")
    {
        auto v = lines;
        v.erase(v.begin() + 1);
        check_break(v, prev, 2, ChainBreak::Kind::edited,
                    "line 2's bytes do not give its chain value, which line 3 chains onto: "
                    "line 2 was edited, or the line(s) just before it deleted");
    }
    WHEN("a line from another chain is inserted before line 3")
    {
        auto v = lines;
        v.insert(v.begin() + 2, seal_one(ChainMode::sha256, std::nullopt, "{\"x\":0}\n"));
        check_break(v, prev, 3, ChainBreak::Kind::deleted_or_inserted,
                    "line 4 chains onto the value before line 3: lines 3 to 3 are not part of "
                    "the chain (inserted, or put in place of others)");
    }
    WHEN("lines 2 and 3 are swapped")
    {
        auto v = lines;
        std::swap(v[1], v[2]);
        check_break(v, prev, 2, ChainBreak::Kind::reordered,
                    "line 2 chains onto line 3, which comes after it: the lines are out of order");
    }
    WHEN("the last line is cut short")
    {
        auto v = lines;
        v[4].resize(v[4].size() - 10);
        check_break(v, prev, 5, ChainBreak::Kind::truncated,
                    "line 5 is the last and has no newline (" + std::to_string(v[4].size()) +
                        " bytes): a torn write or a cut file");
        CHECK(prev == lines[3].substr(lines[3].size() - 67, 64));  // line 4's value
    }
    WHEN("line 4 has no chain key")
    {
        auto v = lines;
        v[3] = "{\"d\":4}\n";
        check_break(v, prev, 4, ChainBreak::Kind::missing_key,
                    "line 4 has no \"chain\":\"<64 lowercase hex>\" key before its final }");
    }
    WHEN("line 4 is empty")
    {
        auto v = lines;
        v[3] = "\n";
        check_break(v, prev, 4, ChainBreak::Kind::not_json_object,
                    "line 4 does not start with { and end with }");
    }
}

SCENARIO("chain keys and modes that do not fit are refused", "[unit]")
{
    GIVEN("key files")
    {
        const auto good = write_file("jsonlw_chain_key_good", "secret\n");
        const auto empty = write_file("jsonlw_chain_key_empty", "");
        const auto big = write_file("jsonlw_chain_key_big", std::string(ChainKey::max_bytes + 1, 'k'));
        const auto exact = write_file("jsonlw_chain_key_exact", std::string(ChainKey::max_bytes, 'k'));
        THEN("the bytes are read as they are; empty, too big and missing files are refused by name")
        {
            CHECK(ChainKey::from_file(good).bytes == "secret\n");
            CHECK(ChainKey::from_file(exact).bytes.size() == ChainKey::max_bytes);
            CHECK_THROWS_WITH(ChainKey::from_file(empty),
                              "chain key file " + empty.string() + ": is empty");
            CHECK_THROWS_WITH(ChainKey::from_file(big),
                              "chain key file " + big.string() + ": holds more than 1 MiB");
            CHECK_THROWS_WITH(ChainKey::from_file("/nonexistent/jsonlw_key"),
                              "chain key file /nonexistent/jsonlw_key: cannot be opened: No such file or directory");
        }
        for (const auto& p : {good, empty, big, exact}) std::filesystem::remove(p);
    }
    THEN("hmac-sha256 without a key, a key for sha256 and a bad start value throw")
    {
        CHECK_THROWS_WITH(LineChain(ChainMode::hmac_sha256, std::nullopt),
                          "LineChain: chain mode hmac-sha256 needs a key");
        CHECK_THROWS_WITH(LineChain(ChainMode::sha256, ChainKey{"k"}),
                          "LineChain: a chain key is only for mode hmac-sha256");
        CHECK_THROWS_AS(LineChain(ChainMode::sha256, std::nullopt, std::string(64, 'A')),
                        std::invalid_argument);
        std::string prev = zeros;
        CHECK_THROWS_WITH(verify("", prev, ChainMode::hmac_sha256),
                          "verify_chain: chain mode hmac-sha256 needs a key");
        CHECK_THROWS_AS(verify("", prev, ChainMode::none), std::invalid_argument);
    }
}
