// libFuzzer target: JsonLine string escaping. Any bytes in → one line out (no raw newline or
// control byte), which simdjson parses back to the input with invalid UTF-8 replaced by
// U+FFFD (per maximal subpart); sanitized() says whether anything was replaced. The same
// bytes as a key, and inside an array next to other values, must parse back the same way.
#include "fuzz_support.hpp"

#include <jsonlw/json_line.hpp>

#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    static simdjson::dom::parser parser;
    const std::string want = jsonlw_fuzz::sanitize_utf8(in);
    const bool needs_sanitizing = want != in;

    jsonlw::LineBuffer buf;
    {
        jsonlw::JsonLine line(buf);
        line.begin_object().field("s", in).key("k").begin_object().key(in).value(1).end_object();
        line.key("a").begin_array();
        line.string(in).value(2.5).string(in).null().end_array().end_object();
        if (line.sanitized() != needs_sanitizing) std::abort();
    }
    const std::string_view out(buf.data(), buf.size());
    for (char c : out)
        if (static_cast<unsigned char>(c) < 0x20) std::abort();  // one line, escaped controls

    simdjson::dom::element doc;
    if (parser.parse(out.data(), out.size()).get(doc) != simdjson::SUCCESS) std::abort();
    std::string_view s;
    if (doc["s"].get_string().get(s) != simdjson::SUCCESS || s != want) std::abort();
    // The key: "k" holds one member, named <in> sanitized.
    simdjson::dom::object obj;
    if (doc["k"].get_object().get(obj) != simdjson::SUCCESS || obj.size() != 1) std::abort();
    if ((*obj.begin()).key != want) std::abort();
    simdjson::dom::array arr;
    if (doc["a"].get_array().get(arr) != simdjson::SUCCESS || arr.size() != 4) std::abort();
    std::string_view a0, a2;
    if (arr.at(0).get_string().get(a0) || arr.at(2).get_string().get(a2)) std::abort();
    if (a0 != want || a2 != want) std::abort();
    return 0;
}
