// The OTLP JSON spelling of a JSON value as an AnyValue (opentelemetry-proto's
// opentelemetry/proto/common/v1/common.proto, in the JSON mapping of the OTLP specification's
// "JSON Protobuf Encoding": lowerCamelCase names, 64-bit integers as decimal strings).
// Free functions; thread-safe; used by OtlpLogsEncoder on its sink's I/O thread.
#pragma once

#include <jsonlw/json_line.hpp>

#include <simdjson.h>

#include <string_view>

namespace jsonlw::detail {

// Writes `v` as an AnyValue object: an object as {"kvlistValue":{"values":[{"key":…,"value":…}]}}
// (members in order, duplicates kept), an array as {"arrayValue":{"values":[…]}}, a string as
// {"stringValue":…}, a boolean as {"boolValue":…}, an integer that fits int64 as
// {"intValue":"<decimal>"}, a larger unsigned one as {"stringValue":"<decimal>"} (no digit
// lost), any other number as {"doubleValue":…}, null as {} (an AnyValue with no value set).
void write_any_value(JsonLine& out, simdjson::dom::element v);

// An object's members as a KeyValue list ([{"key":…,"value":…},…]), leaving out the member
// named `skip` (when not empty).
void write_key_values(JsonLine& out, simdjson::dom::object obj, std::string_view skip = {});

}  // namespace jsonlw::detail
