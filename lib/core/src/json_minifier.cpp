// JsonMinifier (detail/json_minifier.hpp): simdjson's DOM parser for validation, then
// simdjson::minify into a buffer that keeps its size.
#include <jsonlw/detail/json_minifier.hpp>

#include <fmt/format.h>
#include <simdjson.h>

namespace jsonlw::detail {

namespace {

std::string invalid_json(simdjson::error_code err)
{
    return fmt::format("invalid JSON: {}", simdjson::error_message(err));
}

}  // namespace

struct JsonMinifier::Parser {
    simdjson::dom::parser parser;
};

JsonMinifier::JsonMinifier() = default;
JsonMinifier::~JsonMinifier() = default;
JsonMinifier::JsonMinifier(JsonMinifier&&) noexcept = default;
JsonMinifier& JsonMinifier::operator=(JsonMinifier&&) noexcept = default;

std::optional<std::string> JsonMinifier::parse_and_minify(const std::string& text,
                                                          std::string_view& json)
{
    if (!parser_) parser_ = std::make_unique<Parser>();
    const bool padded = text.capacity() - text.size() >= simdjson::SIMDJSON_PADDING;
    simdjson::dom::element root;
    if (const auto err = parser_->parser.parse(text.data(), text.size(), !padded).get(root))
        return invalid_json(err);
    return minify(text, json);
}

std::optional<std::string> JsonMinifier::minify(std::string_view text, std::string_view& json)
{
    minified_.resize(text.size());
    std::size_t len = 0;
    if (const auto err = simdjson::minify(text.data(), text.size(), minified_.data(), len))
        return invalid_json(err);
    json = {minified_.data(), len};
    return std::nullopt;
}

}  // namespace jsonlw::detail
