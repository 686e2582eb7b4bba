// libFuzzer target: RawJsonWriter input. Never a crash; a text simdjson accepts as one JSON
// value is written as one line holding the same value (compared as simdjson's minified
// serialization of both); anything else is dropped as malformed, alone.
#include "fuzz_support.hpp"

#include <jsonlw/raw_json_writer.hpp>

#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // Lives for the process.
    static auto* h = new jsonlw_fuzz::Harness<jsonlw::RawJsonWriter>(
        jsonlw::RawJsonOptions{.allow_any_value = true});
    static simdjson::dom::parser parser;
    const std::string text(reinterpret_cast<const char*>(data), size);

    const auto before = h->writer.stats();
    h->sink->data.clear();
    if (h->writer.submit(text) != jsonlw::SubmitResult::accepted) std::abort();
    jsonlw_fuzz::settle(h->loop, h->io, h->writer);
    const auto after = h->writer.stats();

    simdjson::dom::element want;
    const bool valid = parser.parse(text).get(want) == simdjson::SUCCESS;
    if (!valid) {
        if (after.dropped.malformed != before.dropped.malformed + 1) std::abort();
        if (!h->sink->data.empty()) std::abort();
        return 0;
    }
    const std::string want_text = simdjson::minify(want);
    if (after.written != before.written + 1) std::abort();
    const std::string& line = h->sink->data;
    if (line.empty() || line.back() != '\n') std::abort();
    if (line.find('\n') != line.size() - 1) std::abort();
    simdjson::dom::element got;
    if (parser.parse(line.data(), line.size() - 1).get(got) != simdjson::SUCCESS) std::abort();
    if (simdjson::minify(got) != want_text) std::abort();
    return 0;
}
