// One JSON text validated and minified with simdjson (a DOM parse, then simdjson::minify), the
// parser and the output buffer reused from call to call: the step RawJsonEncoder and the request
// trace's JSON bodies share (src/json_minifier.cpp). One thread at a time; what a call returns
// in `json` is valid until the next call.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::detail {

class JsonMinifier {
public:
    JsonMinifier();
    ~JsonMinifier();
    JsonMinifier(JsonMinifier&&) noexcept;
    JsonMinifier& operator=(JsonMinifier&&) noexcept;

    // Sets `json` to `text` minified when it is one valid JSON document; otherwise returns why
    // not ("invalid JSON: <simdjson's message>"). A string with spare capacity for simdjson's
    // padding is parsed in place; otherwise simdjson copies it.
    std::optional<std::string> parse_and_minify(const std::string& text, std::string_view& json);

    // Only the minify step, for a text a parser already found valid: its insignificant
    // whitespace removed. Returns why not, as parse_and_minify does.
    std::optional<std::string> minify(std::string_view text, std::string_view& json);

private:
    struct Parser;
    std::unique_ptr<Parser> parser_;  // made at the first parse
    std::vector<char> minified_;
};

}  // namespace jsonlw::detail
