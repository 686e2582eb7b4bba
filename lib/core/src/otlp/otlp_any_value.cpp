// write_any_value (see otlp_any_value.hpp): a JSON value as an OTLP AnyValue.
#include "otlp_any_value.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace jsonlw::detail {

using namespace jsonlw::literals;

void write_key_values(JsonLine& out, simdjson::dom::object obj, std::string_view skip)
{
    out.begin_array();
    for (const auto field : obj) {
        if (!skip.empty() && field.key == skip) continue;
        out.begin_object();
        out.key("key"_key).string(field.key);
        out.key("value"_key);
        write_any_value(out, field.value);
        out.end_object();
    }
    out.end_array();
}

void write_any_value(JsonLine& out, simdjson::dom::element v)
{
    out.begin_object();
    switch (v.type()) {
    case simdjson::dom::element_type::OBJECT:
        out.key("kvlistValue"_key).begin_object().key("values"_key);
        write_key_values(out, simdjson::dom::object(v));
        out.end_object();
        break;
    case simdjson::dom::element_type::ARRAY:
        out.key("arrayValue"_key).begin_object().key("values"_key).begin_array();
        for (const auto item : simdjson::dom::array(v)) write_any_value(out, item);
        out.end_array().end_object();
        break;
    case simdjson::dom::element_type::STRING:
        out.key("stringValue"_key).string(v.get_string().value_unsafe());
        break;
    case simdjson::dom::element_type::BOOL:
        out.key("boolValue"_key).value(v.get_bool().value_unsafe());
        break;
    case simdjson::dom::element_type::INT64: {
        // int64 travels as a decimal string in OTLP JSON.
        char digits[24];
        const auto end = fmt::format_to(digits, "{}", v.get_int64().value_unsafe());
        out.key("intValue"_key).string(std::string_view(digits, end - digits));
        break;
    }
    case simdjson::dom::element_type::UINT64: {
        // Above INT64_MAX (simdjson reads smaller ones as INT64): no intValue can hold it.
        char digits[24];
        const auto end = fmt::format_to(digits, "{}", v.get_uint64().value_unsafe());
        out.key("stringValue"_key).string(std::string_view(digits, end - digits));
        break;
    }
    case simdjson::dom::element_type::DOUBLE:
        out.key("doubleValue"_key).value(v.get_double().value_unsafe());
        break;
    case simdjson::dom::element_type::NULL_VALUE:
        break;  // {}: no value
    }
    out.end_object();
}

}  // namespace jsonlw::detail
