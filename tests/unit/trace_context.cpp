// TraceContext: the W3C traceparent value, parsed and formatted by the rules of
// spec/20-http_request_header_format.md in github.com/w3c/trace-context; the cases follow that
// section's examples and the spec's test suite (test/test.py, the test_traceparent_* cases).
#include <catch2/catch.hpp>

#include <jsonlw/trace_context.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

using jsonlw::TraceContext;
using jsonlw::TraceparentError;

namespace Catch {
template <>
struct StringMaker<TraceparentError> {
    static std::string convert(TraceparentError e) { return std::string(jsonlw::to_string(e)); }
};
}  // namespace Catch

namespace {

// The spec's example ids.
constexpr std::string_view trace_hex = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr std::string_view span_hex = "00f067aa0ba902b7";
constexpr std::string_view sampled_example =
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

constexpr std::array<std::uint8_t, 16> trace_bytes = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3,
                                                      0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d,
                                                      0x0e, 0x0e, 0x47, 0x36};
constexpr std::array<std::uint8_t, 8> span_bytes = {0x00, 0xf0, 0x67, 0xaa,
                                                    0x0b, 0xa9, 0x02, 0xb7};

std::string header(std::string_view version, std::string_view trace, std::string_view span,
                   std::string_view flags)
{
    std::string h;
    h.append(version).append("-").append(trace).append("-").append(span).append("-");
    return h.append(flags);
}

TraceContext parsed(std::string_view h)
{
    INFO("header: \"" << std::string(h) << "\"");
    const auto tc = TraceContext::parse_traceparent(h);
    REQUIRE(tc.has_value());
    return *tc;
}

TraceparentError refused(std::string_view h)
{
    INFO("header: \"" << std::string(h) << "\"");
    // A value no refusal below expects, so an unwritten `why` cannot pass by accident.
    TraceparentError why = static_cast<TraceparentError>(-1);
    const auto tc = TraceContext::parse_traceparent(h, &why);
    REQUIRE_FALSE(tc.has_value());
    CHECK_FALSE(TraceContext::parse_traceparent(h).has_value());
    return why;
}

}  // namespace

TEST_CASE("the spec's sampled example parses into its exact ids and flags", "[unit][trace_context]")
{
    const TraceContext tc = parsed(sampled_example);
    CHECK(tc.trace_id == trace_bytes);
    CHECK(tc.span_id == span_bytes);
    CHECK(tc.flags == 0x01);
    CHECK(tc.sampled());
    CHECK(tc.trace_id_hex() == trace_hex);
    CHECK(tc.span_id_hex() == span_hex);
    CHECK(tc.traceparent() == sampled_example);
}

TEST_CASE("the spec's not-sampled example parses with flags 00", "[unit][trace_context]")
{
    const TraceContext tc = parsed(header("00", trace_hex, span_hex, "00"));
    CHECK(tc.trace_id == trace_bytes);
    CHECK(tc.span_id == span_bytes);
    CHECK(tc.flags == 0x00);
    CHECK_FALSE(tc.sampled());
}

TEST_CASE("the flags are a bit field: sampled is the lowest bit, version 00 keeps all eight",
          "[unit][trace_context]")
{
    CHECK(parsed(header("00", trace_hex, span_hex, "03")).flags == 0x03);
    CHECK(parsed(header("00", trace_hex, span_hex, "03")).sampled());
    CHECK(parsed(header("00", trace_hex, span_hex, "02")).flags == 0x02);
    CHECK_FALSE(parsed(header("00", trace_hex, span_hex, "02")).sampled());
    CHECK(parsed(header("00", trace_hex, span_hex, "ff")).flags == 0xff);
    CHECK(parsed(header("00", trace_hex, span_hex, "fe")).flags == 0xfe);
    CHECK_FALSE(parsed(header("00", trace_hex, span_hex, "fe")).sampled());
}

TEST_CASE("spaces and tabs around the value are skipped, other whitespace is not",
          "[unit][trace_context]")
{
    const std::string ex(sampled_example);
    CHECK(parsed(" " + ex).traceparent() == ex);
    CHECK(parsed("\t" + ex).traceparent() == ex);
    CHECK(parsed(ex + " ").traceparent() == ex);
    CHECK(parsed(ex + "\t").traceparent() == ex);
    CHECK(parsed("\t " + ex + " \t").traceparent() == ex);

    CHECK(refused("\r\n" + ex) == TraceparentError::bad_version);
    CHECK(refused(ex + "\r\n") == TraceparentError::wrong_length);
    CHECK(refused(std::string("\0", 1) + ex) == TraceparentError::bad_version);
}

TEST_CASE("a higher version keeps its first four fields and ignores what follows a dash",
          "[unit][trace_context]")
{
    const TraceContext plain = parsed(header("cc", trace_hex, span_hex, "01"));
    CHECK(plain.trace_id == trace_bytes);
    CHECK(plain.span_id == span_bytes);
    CHECK(plain.flags == 0x01);

    const TraceContext longer =
        parsed(header("cc", trace_hex, span_hex, "01") + "-what-the-future-will-be-like");
    CHECK(longer == plain);
    CHECK(parsed(header("01", trace_hex, span_hex, "01") + "-").span_id == span_bytes);
    CHECK(parsed(" " + header("fe", trace_hex, span_hex, "01") + "-x\t").trace_id == trace_bytes);

    // Formatting writes the highest version known here, 00.
    CHECK(longer.traceparent() == sampled_example);
}

TEST_CASE("a higher version's flags keep only the sampled and random-id bits",
          "[unit][trace_context]")
{
    CHECK(parsed(header("cc", trace_hex, span_hex, "ff")).flags == 0x03);
    CHECK(parsed(header("cc", trace_hex, span_hex, "fd")).flags == 0x01);
    CHECK(parsed(header("cc", trace_hex, span_hex, "06")).flags == 0x02);
}

TEST_CASE("a higher version is refused by the same field rules as version 00",
          "[unit][trace_context]")
{
    const std::string future = header("cc", trace_hex, span_hex, "01");
    CHECK(refused(future + ".what-the-future-will-be-like") == TraceparentError::bad_separator);
    CHECK(refused(header("cc", trace_hex, span_hex, "001")) == TraceparentError::bad_separator);
    CHECK(refused(future.substr(0, 54)) == TraceparentError::wrong_length);
    CHECK(refused(header("cc", trace_hex, span_hex, "0")) == TraceparentError::wrong_length);
    CHECK(refused(header("cc", "4BF92F3577B34DA6A3CE929D0E0E4736", span_hex, "01")) ==
          TraceparentError::bad_hex);
    CHECK(refused(header("cc", std::string(32, '0'), span_hex, "01") + "-x") ==
          TraceparentError::zero_trace_id);
    CHECK(refused(header("cc", trace_hex, std::string(16, '0'), "01")) ==
          TraceparentError::zero_span_id);
}

TEST_CASE("a version that is not two lowercase hex digits, or is ff, is bad_version",
          "[unit][trace_context]")
{
    CHECK(refused(header("ff", trace_hex, span_hex, "01")) == TraceparentError::bad_version);
    CHECK(refused(header(".0", trace_hex, span_hex, "01")) == TraceparentError::bad_version);
    CHECK(refused(header("0.", trace_hex, span_hex, "01")) == TraceparentError::bad_version);
    CHECK(refused(header("0A", trace_hex, span_hex, "01")) == TraceparentError::bad_version);
    CHECK(refused(header("FF", trace_hex, span_hex, "01")) == TraceparentError::bad_version);
    CHECK(refused(header("0", trace_hex, span_hex, "01")) == TraceparentError::bad_version);
    CHECK(refused("") == TraceparentError::bad_version);
    CHECK(refused(" \t ") == TraceparentError::bad_version);
    CHECK(refused("0") == TraceparentError::bad_version);
}

TEST_CASE("a version followed by anything but a dash is bad_separator", "[unit][trace_context]")
{
    CHECK(refused(header("000", trace_hex, span_hex, "01")) == TraceparentError::bad_separator);
    CHECK(refused(header("0000", trace_hex, span_hex, "01")) == TraceparentError::bad_separator);
    CHECK(refused("00") == TraceparentError::bad_separator);
    CHECK(refused("00_" + std::string(sampled_example.substr(3))) ==
          TraceparentError::bad_separator);
}

TEST_CASE("version 00 of any length but 55 is wrong_length", "[unit][trace_context]")
{
    const std::string ex(sampled_example);
    CHECK(refused("00-") == TraceparentError::wrong_length);
    CHECK(refused(ex.substr(0, 54)) == TraceparentError::wrong_length);
    CHECK(refused(ex + ".") == TraceparentError::wrong_length);
    CHECK(refused(ex + "-what-the-future-will-be-like") == TraceparentError::wrong_length);
    // Each field one digit too long, then one too short (the spec's test suite's cases).
    const std::string_view trace = "12345678901234567890123456789012";
    const std::string_view span = "1234567890123456";
    for (const std::string& h : {header("00", std::string(trace) + "3", span, "01"),
                                 header("00", trace.substr(1), span, "01"),
                                 header("00", trace, std::string(span) + "7", "01"),
                                 header("00", trace, span.substr(1), "01"),
                                 header("00", trace, span, "001"), header("00", trace, span, "1")})
        CHECK(refused(h) == TraceparentError::wrong_length);
}

TEST_CASE("55 characters with a dash out of place is bad_separator", "[unit][trace_context]")
{
    std::string ex(sampled_example);
    // The trace id one digit longer, the parent id one shorter: 55 characters still.
    CHECK(refused(header("00", "4bf92f3577b34da6a3ce929d0e0e47360", "00f067aa0ba902b", "01")) ==
          TraceparentError::bad_separator);
    CHECK(refused(std::string(ex).replace(35, 1, "_")) == TraceparentError::bad_separator);
    CHECK(refused(std::string(ex).replace(52, 1, ".")) == TraceparentError::bad_separator);
    CHECK(refused(std::string(ex).replace(52, 1, "0")) == TraceparentError::bad_separator);
}

TEST_CASE("a character other than 0-9 a-f in an id or the flags is bad_hex",
          "[unit][trace_context]")
{
    // Uppercase hex is not HEXDIGLC.
    CHECK(refused(header("00", "4BF92F3577B34DA6A3CE929D0E0E4736", span_hex, "01")) ==
          TraceparentError::bad_hex);
    CHECK(refused(header("00", "4bf92f3577b34da6a3ce929d0e0e473F", span_hex, "01")) ==
          TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, "00F067AA0BA902B7", "01")) == TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, span_hex, "0A")) == TraceparentError::bad_hex);

    CHECK(refused(header("00", ".bf92f3577b34da6a3ce929d0e0e4736", span_hex, "01")) ==
          TraceparentError::bad_hex);
    CHECK(refused(header("00", "4bf92f3577b34da6a3ce929d0e0e473.", span_hex, "01")) ==
          TraceparentError::bad_hex);
    CHECK(refused(header("00", "4bf92f3577b34da6-3ce929d0e0e4736", span_hex, "01")) ==
          TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, ".0f067aa0ba902b7", "01")) == TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, "00f067aa0ba902bg", "01")) == TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, span_hex, ".0")) == TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, span_hex, "0.")) == TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, "00f067aa ba902b7", "01")) == TraceparentError::bad_hex);
    CHECK(refused(header("00", trace_hex, "00f067aa0ba902\xc3\xa9", "01")) ==
          TraceparentError::bad_hex);
}

TEST_CASE("an all-zero trace id or parent id is refused, the trace id checked first",
          "[unit][trace_context]")
{
    const std::string zero_trace(32, '0');
    const std::string zero_span(16, '0');
    CHECK(refused(header("00", zero_trace, span_hex, "01")) == TraceparentError::zero_trace_id);
    CHECK(refused(header("00", trace_hex, zero_span, "01")) == TraceparentError::zero_span_id);
    CHECK(refused(header("00", zero_trace, zero_span, "01")) == TraceparentError::zero_trace_id);

    // One nonzero byte anywhere makes an id valid.
    CHECK(parsed(header("00", "00000000000000000000000000000001", "1000000000000000", "00"))
              .trace_id_hex() == "00000000000000000000000000000001");
    CHECK(parsed(header("00", trace_hex, "0000000000000010", "00")).span_id_hex() ==
          "0000000000000010");
}

TEST_CASE("the first rule broken names the refusal", "[unit][trace_context]")
{
    CHECK(refused(header("ff", trace_hex, span_hex, "01") + "x") == TraceparentError::bad_version);
    CHECK(refused(header("000", "4BF", span_hex, "01")) == TraceparentError::bad_separator);
    CHECK(refused(header("00", "4BF92F3577B34DA6A3CE929D0E0E4736", span_hex, "011")) ==
          TraceparentError::wrong_length);
    CHECK(refused(header("00", std::string(32, '0'), span_hex, "0G")) ==
          TraceparentError::bad_hex);
}

TEST_CASE("a successful parse leaves why untouched", "[unit][trace_context]")
{
    TraceparentError why = TraceparentError::zero_span_id;
    CHECK(TraceContext::parse_traceparent(sampled_example, &why).has_value());
    CHECK(why == TraceparentError::zero_span_id);
}

TEST_CASE("format_traceparent writes 55 lowercase characters with version 00",
          "[unit][trace_context]")
{
    TraceContext tc;
    for (std::size_t i = 0; i < tc.trace_id.size(); ++i)
        tc.trace_id[i] = static_cast<std::uint8_t>(0xf0 + i);
    for (std::size_t i = 0; i < tc.span_id.size(); ++i)
        tc.span_id[i] = static_cast<std::uint8_t>(0x0a * (i + 1));
    tc.flags = 0xab;

    char out[TraceContext::traceparent_size];
    tc.format_traceparent(out);
    const std::string_view expected =
        "00-f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff-0a141e28323c4650-ab";
    CHECK(std::string_view(out, sizeof out) == expected);
    CHECK(tc.traceparent() == expected);
    CHECK(tc.trace_id_hex() == "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
    CHECK(tc.span_id_hex() == "0a141e28323c4650");
    CHECK(tc.sampled());
}

TEST_CASE("parse then format gives back the header, format then parse the value",
          "[unit][trace_context]")
{
    using namespace std::string_view_literals;
    for (const std::string_view h : {sampled_example,
                                     "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"sv,
                                     "00-12345678901234567890123456789012-1234567890123456-00"sv,
                                     "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-ff"sv,
                                     "00-00000000000000000000000000000001-0000000000000001-02"sv}) {
        INFO(std::string(h));
        const TraceContext tc = parsed(h);
        CHECK(tc.traceparent() == h);
        CHECK(parsed(tc.traceparent()) == tc);
    }
}

TEST_CASE("each refusal has a snake_case name", "[unit][trace_context]")
{
    CHECK(jsonlw::to_string(TraceparentError::bad_version) == "bad_version");
    CHECK(jsonlw::to_string(TraceparentError::bad_separator) == "bad_separator");
    CHECK(jsonlw::to_string(TraceparentError::wrong_length) == "wrong_length");
    CHECK(jsonlw::to_string(TraceparentError::bad_hex) == "bad_hex");
    CHECK(jsonlw::to_string(TraceparentError::zero_trace_id) == "zero_trace_id");
    CHECK(jsonlw::to_string(TraceparentError::zero_span_id) == "zero_span_id");
}
