#include <jsonlw/raw_json_writer.hpp>

#include <fmt/format.h>
#include <simdjson.h>

#include <vector>

namespace jsonlw {

struct RawJsonWriter::Validator {
    simdjson::dom::parser parser;
    std::vector<char> minified;
};

RawJsonWriter::RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                             RawJsonOptions raw)
    : JsonlRecordWriter<std::string>(std::move(ex), std::move(opts)),
      raw_(raw),
      validator_(std::make_unique<Validator>())
{
}

RawJsonWriter::~RawJsonWriter() { shutdown(); }

void RawJsonWriter::serialize(const std::string& text, JsonLine& line)
{
    Validator& v = *validator_;
    // A string with enough spare capacity is parsed in place; otherwise simdjson copies it
    // into its padded buffer.
    const bool padded = text.capacity() - text.size() >= simdjson::SIMDJSON_PADDING;
    simdjson::dom::element root;
    if (const auto err = v.parser.parse(text.data(), text.size(), !padded).get(root))
        throw MalformedRecord(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    if (!raw_.allow_any_value && root.type() != simdjson::dom::element_type::OBJECT)
        throw MalformedRecord("not a JSON object");
    v.minified.resize(text.size());
    std::size_t len = 0;
    if (const auto err = simdjson::minify(text.data(), text.size(), v.minified.data(), len))
        throw MalformedRecord(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    line.raw({v.minified.data(), len});
}

}  // namespace jsonlw
