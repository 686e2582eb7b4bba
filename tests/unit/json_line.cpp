// JsonLine: the builder of one compact JSON line.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "files.hpp"

#include <jsonlw/json_line.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

using jsonlw::JsonLine;
using jsonlw::LineBuffer;
using jsonlw::MalformedRecord;

namespace {

std::string str(const LineBuffer& b) { return std::string(b.data(), b.size()); }

// The JSON text of one string value.
std::string json_string(std::string_view s, bool* sanitized = nullptr)
{
    LineBuffer buf;
    JsonLine line(buf);
    line.string(s);
    if (sanitized) *sanitized = line.sanitized();
    return std::string(line.view());
}

std::string number(double d)
{
    LineBuffer buf;
    JsonLine line(buf);
    line.value(d);
    return std::string(line.view());
}

const std::string fffd = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("an object is written compactly with commas and colons placed", "[unit][json_line]")
{
    LineBuffer buf;
    JsonLine line(buf);
    line.begin_object()
        .field("id", 7)
        .field("name", "x")
        .field("ok", true)
        .field("no", false)
        .key("nothing")
        .null()
        .field("n", nullptr)
        .end_object();
    CHECK(line.view() == R"({"id":7,"name":"x","ok":true,"no":false,"nothing":null,"n":null})");
    CHECK(str(buf) == line.view());
    CHECK_FALSE(line.sanitized());
    CHECK(jsonlw_test::is_valid_json(line.view()));
}

TEST_CASE("nested objects and arrays get commas only between their members", "[unit][json_line]")
{
    LineBuffer buf;
    JsonLine line(buf);
    line.begin_object();
    line.key("a").begin_array().value(1).value(2).begin_object().key("b").begin_array().end_array().end_object().end_array();
    line.key("c").begin_object().end_object();
    line.key("d").begin_array().begin_array().value(1).end_array().begin_array().end_array().value("s").end_array();
    line.key("e").begin_object().key("f").begin_object().field("g", 1).end_object().field("h", 2).end_object();
    line.end_object();
    CHECK(line.view() == R"({"a":[1,2,{"b":[]}],"c":{},"d":[[1],[],"s"],"e":{"f":{"g":1},"h":2}})");
    CHECK(jsonlw_test::is_valid_json(line.view()));

    LineBuffer top;
    JsonLine arr(top);
    arr.begin_array().value(true).null().value(0.5).end_array();
    CHECK(arr.view() == "[true,null,0.5]");
}

TEST_CASE("quotes, backslashes and control characters are escaped per RFC 8259", "[unit][json_line]")
{
    CHECK(json_string("plain") == R"("plain")");
    CHECK(json_string("") == R"("")");
    CHECK(json_string("a\"b") == R"("a\"b")");
    CHECK(json_string("a\\b") == R"("a\\b")");
    CHECK(json_string("\n") == R"("\n")");
    CHECK(json_string("\r") == R"("\r")");
    CHECK(json_string("\t") == R"("\t")");
    CHECK(json_string("\b") == R"("\b")");
    CHECK(json_string("\f") == R"("\f")");
    CHECK(json_string(std::string_view("\0", 1)) == R"("\u0000")");
    CHECK(json_string("\x01") == R"("\u0001")");
    CHECK(json_string("\x1f") == R"("\u001f")");
    CHECK(json_string("\x0b") == R"("\u000b")");

    // Every control character: escaped, and the result is valid JSON that decodes back.
    for (int c = 0; c < 0x20; ++c) {
        const std::string raw(1, static_cast<char>(c));
        const std::string json = json_string(raw);
        INFO("control character " << c << " -> " << json);
        CHECK(json.find(static_cast<char>(c)) == std::string::npos);
        simdjson::dom::element doc;
        REQUIRE(jsonlw_test::json_parser().parse(json.data(), json.size()).get(doc) == simdjson::SUCCESS);
        std::string_view back;
        REQUIRE(doc.get_string().get(back) == simdjson::SUCCESS);
        CHECK(back == raw);
    }

    // Keys are escaped the same way.
    LineBuffer buf;
    JsonLine line(buf);
    line.begin_object().field("k\"\n", 1).end_object();
    CHECK(line.view() == R"({"k\"\n":1})");
}

TEST_CASE("an empty string_view that points nowhere is written as an empty string",
          "[unit][json_line]")
{
    // std::string_view{} has a null data(): no byte may be read from it (UBSan's build checks).
    CHECK(json_string(std::string_view{}) == R"("")");
    LineBuffer buf;
    JsonLine line(buf);
    line.begin_array().string(std::string_view{}).string("").end_array();
    CHECK(line.view() == R"(["",""])");
}

TEST_CASE("valid multi-byte UTF-8 is kept as is", "[unit][json_line][utf8]")
{
    const std::string s = "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9D\x84\x9E \xE4\xB8\xAD\xE6\x96\x87";  // é € 𝄞 中文
    bool sanitized = true;
    CHECK(json_string(s, &sanitized) == "\"" + s + "\"");
    CHECK_FALSE(sanitized);
    // The largest code points of each length, and U+FFFD itself.
    const std::string edges = "\xDF\xBF\xEF\xBF\xBF\xF4\x8F\xBF\xBF" + fffd;
    CHECK(json_string(edges, &sanitized) == "\"" + edges + "\"");
    CHECK_FALSE(sanitized);
}

TEST_CASE("invalid UTF-8 is replaced by U+FFFD and the line is marked sanitized", "[unit][json_line][utf8]")
{
    bool sanitized = false;
    CHECK(json_string("a\xFF" "b", &sanitized) == "\"a" + fffd + "b\"");
    CHECK(sanitized);

    const char* bad[] = {
        "\xFF",                  // never valid
        "\xC0\xAF",              // overlong '/'
        "\xE0\x80\xAF",          // overlong, 3 bytes
        "\xF0\x80\x80\xAF",      // overlong, 4 bytes
        "\xED\xA0\x80",          // UTF-16 surrogate U+D800
        "\xED\xBF\xBF",          // surrogate U+DFFF
        "\xF4\x90\x80\x80",      // above U+10FFFF
        "\xE2\x82",              // truncated at the end
        "\xE2\x82x",             // truncated before ASCII
        "\x80",                  // lone continuation byte
        "ok\xC3",                // truncated 2-byte sequence at the end
        "\xF8\x88\x80\x80\x80",  // 5-byte form
    };
    for (const char* b : bad) {
        sanitized = false;
        const std::string in = std::string("<") + b + ">";
        const std::string out = json_string(in, &sanitized);
        INFO("input bytes: " << in);
        CHECK(sanitized);
        CHECK(out.find(fffd) != std::string::npos);
        CHECK(out.front() == '"');
        CHECK(out.substr(0, 2) == "\"<");
        CHECK(out.substr(out.size() - 2) == ">\"");
        CHECK(jsonlw_test::is_valid_json(out));  // simdjson validates UTF-8
    }

    // A key is sanitized too.
    LineBuffer buf;
    JsonLine line(buf);
    line.begin_object().field("k\xFF", "v").end_object();
    CHECK(line.sanitized());
    CHECK(line.view() == "{\"k" + fffd + "\":\"v\"}");
}

TEST_CASE("doubles are written in shortest round-trip form", "[unit][json_line][numbers]")
{
    CHECK(number(0.1) == "0.1");
    CHECK(number(0.30000000000000004) == "0.30000000000000004");
    CHECK(number(1e21) == "1e+21");
    CHECK(number(5e-324) == "5e-324");
    CHECK(number(1.7976931348623157e308) == "1.7976931348623157e+308");
    // An integral value keeps ".0", as Python's repr() spells it, so it stays a float.
    CHECK(number(100.0) == "100.0");
    CHECK(number(1e16) == "1e+16");
    CHECK(number(-2.5) == "-2.5");
    CHECK(number(0.0) == "0.0");
    CHECK(number(-0.0) == "-0.0");
    // A float is widened to double: the shortest form of that double, which reads back as the float.
    CHECK(std::strtof(number(0.1f).c_str(), nullptr) == 0.1f);

    const double samples[] = {0.1, 1.0 / 3.0, 2.0 / 3.0, 123456.789, 1e-7, 6.02214076e23, -0.0,
                              std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min()};
    for (double d : samples) {
        const std::string s = number(d);
        INFO(s);
        CHECK(std::strtod(s.c_str(), nullptr) == d);
        CHECK(jsonlw_test::is_valid_json(s));
    }
}

TEST_CASE("doubles with few decimals (the fast path) are spelled exactly as fmt's shortest form", "[unit][json_line][numbers]")
{
    // fmt's "{}" (Dragonbox) plus Python's ".0": the spelling the fast path must reproduce.
    const auto reference = [](double d) {
        std::string s = fmt::format("{}", d);
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
        return s;
    };
    std::mt19937_64 rng(20261129);
    std::vector<double> values = {0.0, -0.0, 1e-4, -1e-4, 9.9999e-5, 1e-3, 0.5, 1.0, 1e6,
                                  2251799813.0, 2251799812.999999, 2251799813.5, 1125899906.842624,
                                  1700000000.123456, 1700000000.1234567, 5310.114, 1000.0021,
                                  std::nextafter(1000.0021, 2000.0), std::nextafter(0.1, 1.0)};
    for (int i = 0; i < 200000; ++i) {
        const int k = static_cast<int>(rng() % 9);  // 0..8 decimals
        const std::uint64_t m = rng() % (std::uint64_t{1} << (rng() % 53));
        double d = static_cast<double>(m);
        for (int j = 0; j < k; ++j) d /= 10;
        if (rng() % 2) d = -d;
        values.push_back(d);
        values.push_back(std::nextafter(d, 1e300));
        std::uint64_t bits = rng();
        double r;
        std::memcpy(&r, &bits, sizeof r);
        if (std::isfinite(r)) values.push_back(r);
    }
    std::size_t mismatches = 0;
    for (const double d : values) {
        const std::string got = number(d);
        if (got != reference(d) && ++mismatches <= 5) {
            INFO(fmt::format("{:.17g}: {} vs {}", d, got, reference(d)));
            CHECK(got == reference(d));
        }
    }
    CHECK(mismatches == 0);
}

TEST_CASE("strings of any mix of plain runs, escapes and UTF-8 are escaped as piece by piece", "[unit][json_line][utf8]")
{
    // Each piece with its escaped form; invalid UTF-8 pieces become one U+FFFD each (no piece
    // starts with a continuation byte, so pieces never merge into one sequence).
    struct Piece {
        std::string in, out;
        bool bad = false;
    };
    const std::vector<Piece> pieces = {
        {"a", "a"}, {"plain run of text ", "plain run of text "}, {"0123456789abcdef", "0123456789abcdef"},
        {"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"}, {"\t", "\\t"}, {"\x01", "\\u0001"},
        {"\x1f", "\\u001f"}, {"\xC3\xA9", "\xC3\xA9"}, {"\xE2\x82\xAC", "\xE2\x82\xAC"},
        {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"}, {"\xFF", fffd, true}, {"\xE2\x82", fffd, true},
        {"\xC3", fffd, true}, {"\xC0\xAF", fffd + fffd, true}, {"\x7f", "\x7f"}, {"/", "/"},
    };
    std::mt19937 rng(5);
    for (int round = 0; round < 20000; ++round) {
        std::string in, expected = "\"";
        bool bad = false;
        const int count = static_cast<int>(rng() % 40);
        for (int k = 0; k < count; ++k) {
            const Piece& p = pieces[rng() % pieces.size()];
            in += p.in;
            expected += p.out;
            bad = bad || p.bad;
        }
        expected += "\"";
        bool sanitized = false;
        const std::string got = json_string(in, &sanitized);
        if (got != expected || sanitized != bad) {
            INFO("input of " << in.size() << " bytes, round " << round);
            CHECK(got == expected);
            CHECK(sanitized == bad);
            break;
        }
    }
}

TEST_CASE("a JsonKey is copied as is and behaves as the same string_view key", "[unit][json_line]")
{
    using namespace jsonlw::literals;
    LineBuffer a, b;
    JsonLine x(a), y(b);
    x.begin_object().key("first"_key).value(1).field("second"_key, "s").key("third_one_x"_key).null().end_object();
    y.begin_object().key("first").value(1).field("second", "s").key("third_one_x").null().end_object();
    CHECK(x.view() == y.view());
    CHECK(x.view() == R"({"first":1,"second":"s","third_one_x":null})");
    // A non-finite value names the key either way.
    LineBuffer c;
    JsonLine z(c);
    z.begin_object().key("rate"_key);
    CHECK_THROWS_WITH(z.value(std::nan("")), Catch::Contains("'rate'"));
    // Keys that need escaping still go through the string_view overload.
    LineBuffer e;
    JsonLine w(e);
    w.begin_object().key("a\"b").value(1).key("long key with a \n newline").value(2).end_object();
    CHECK(w.view() == R"({"a\"b":1,"long key with a \n newline":2})");
}

TEST_CASE("a non-finite double makes the record malformed unless written with number_or_null", "[unit][json_line][numbers]")
{
    const double bad[] = {std::nan(""), std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()};
    for (double d : bad) {
        LineBuffer buf;
        JsonLine line(buf);
        line.begin_object().key("v");
        CHECK_THROWS_AS(line.value(d), MalformedRecord);
        CHECK_THROWS_AS(JsonLine(buf).value(static_cast<float>(d)), MalformedRecord);

        LineBuffer ok;
        JsonLine nul(ok);
        nul.begin_object().key("v").number_or_null(d).field("w", 1).end_object();
        CHECK(nul.view() == R"({"v":null,"w":1})");
    }
    LineBuffer ok;
    JsonLine finite(ok);
    finite.number_or_null(2.5);
    CHECK(finite.view() == "2.5");
}

TEST_CASE("integers cover the whole int64 and uint64 ranges", "[unit][json_line][numbers]")
{
    LineBuffer buf;
    JsonLine line(buf);
    line.begin_array()
        .value(std::numeric_limits<std::int64_t>::min())
        .value(std::numeric_limits<std::int64_t>::max())
        .value(std::numeric_limits<std::uint64_t>::max())
        .value(std::uint64_t{0})
        .value(static_cast<std::int8_t>(-5))
        .value(static_cast<unsigned short>(65535))
        .value(-1)
        .value(42u)
        .end_array();
    CHECK(line.view() ==
          "[-9223372036854775808,9223372036854775807,18446744073709551615,0,-5,65535,-1,42]");
}

TEST_CASE("raw() copies trusted JSON text as one value, with commas placed", "[unit][json_line]")
{
    LineBuffer buf;
    JsonLine line(buf);
    line.begin_object().key("r").raw(R"({"x":[1,2]})").field("n", 1).key("s").raw("\"t\"").end_object();
    CHECK(line.view() == R"({"r":{"x":[1,2]},"n":1,"s":"t"})");

    LineBuffer abuf;
    JsonLine arr(abuf);
    arr.begin_array().raw("1").raw("{}").raw("[]").value(2).end_array();
    CHECK(arr.view() == "[1,{},[],2]");
}

TEST_CASE("a line views only its own bytes and discard() returns the buffer to where it began", "[unit][json_line]")
{
    LineBuffer buf;
    {
        JsonLine first(buf);
        first.begin_object().field("a", 1).end_object();
    }
    buf.push_back('\n');
    const std::string before = str(buf);

    JsonLine second(buf);
    second.begin_object().field("b", "partial");
    CHECK(second.view() == R"({"b":"partial")");
    second.discard();
    CHECK(str(buf) == before);
    CHECK(second.view().empty());

    JsonLine third(buf);
    third.begin_object().field("c", 3).end_object();
    CHECK(third.view() == R"({"c":3})");
    CHECK(str(buf) == "{\"a\":1}\n{\"c\":3}");
}

TEST_CASE("a sanitized line that is discarded does not mark the next line", "[unit][json_line][utf8]")
{
    LineBuffer buf;
    JsonLine bad(buf);
    bad.begin_object().field("s", "\xFF");
    CHECK(bad.sanitized());
    bad.discard();

    JsonLine good(buf);
    good.begin_object().field("s", "fine").end_object();
    CHECK_FALSE(good.sanitized());
    CHECK(str(buf) == R"({"s":"fine"})");
}

TEST_CASE("decoded_string_pieces hands over exactly the bytes a reader decodes from the string "
          "JsonLine writes, invalid UTF-8 replaced the same way",
          "[unit][json_line][utf8]")
{
    const std::string_view inputs[] = {
        "", "hello", "a\xF0\x9F\x98\x80" "b", "h\xFFllo", "\xE2\x82", "x\xED\xA0\x80y",
        "\xC0\xAF", "\xF4\x90\x80\x80", std::string_view("q\"\\\x01\0z", 6), "\x80\x80\xC3\xA9"};
    for (const std::string_view s : inputs) {
        bool sanitized = false;
        const std::string json = json_string(s, &sanitized);
        simdjson::dom::element doc;
        REQUIRE(jsonlw_test::json_parser().parse(json.data(), json.size()).get(doc) == simdjson::SUCCESS);
        std::string_view decoded;
        REQUIRE(doc.get_string().get(decoded) == simdjson::SUCCESS);
        std::string pieces;
        std::size_t calls = 0;
        const bool replaced = jsonlw::decoded_string_pieces(s, [&](std::string_view p) {
            pieces += p;
            ++calls;
        });
        INFO("input " << json);
        CHECK(pieces == decoded);
        CHECK(replaced == sanitized);
        CHECK(calls <= 1 + 2 * s.size());
    }
    std::size_t calls = 0;
    jsonlw::decoded_string_pieces("valid \xC3\xA9 text", [&](std::string_view) { ++calls; });
    CHECK(calls == 1);  // valid UTF-8: one piece, the input itself
}
