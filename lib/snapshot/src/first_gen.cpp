// Capture, encoding and strict decoding of first_gen_logits items. The bytes are the host's
// memory order, which TensorRT-LLM (np.frombuffer with a native dtype) reads as little-endian on
// every platform it runs on; a big-endian host would need byte swaps nobody has asked for.
#include <jsonlw/snapshot/first_gen.hpp>

#include <jsonlw/snapshot/base64.hpp>
#include <jsonlw/snapshot/reference.hpp>

#include "half_bits.hpp"

#include <simdjson.h>

#include <bit>
#include <cstring>

namespace jsonlw::snapshot {

static_assert(std::endian::native == std::endian::little,
              "first_gen_logits bytes are written in host order and must be little-endian");

LogitDType first_gen_stored_dtype(FirstGenMode mode, LogitDType source) noexcept
{
    switch (mode) {
    case FirstGenMode::float16_compat:
        return source == LogitDType::bf16 ? LogitDType::f16 : source;
    case FirstGenMode::float32_exact:
        return LogitDType::f32;
    case FirstGenMode::off:
    case FirstGenMode::bfloat16_raw:
        break;
    }
    return source;
}

std::size_t first_gen_item_bytes(FirstGenMode mode, LogitDType source, std::int32_t vocab) noexcept
{
    if (mode == FirstGenMode::off || vocab <= 0) return 0;
    return static_cast<std::size_t>(vocab) * itemsize(first_gen_stored_dtype(mode, source));
}

const char* first_gen_dtype(FirstGenMode mode, LogitDType source) noexcept
{
    return mode == FirstGenMode::off ? "" : dtype_name(first_gen_stored_dtype(mode, source));
}

std::uint32_t convert_first_gen_row(const void* row, LogitDType source, std::int32_t vocab,
                                    FirstGenMode mode, std::byte* out) noexcept
{
    if (mode == FirstGenMode::off || vocab <= 0) return 0;
    const auto n = static_cast<std::size_t>(vocab);
    const LogitDType stored = first_gen_stored_dtype(mode, source);
    if (stored == source) {
        std::memcpy(out, row, n * itemsize(source));
        return 0;
    }
    const auto* in = static_cast<const unsigned char*>(row);
    std::uint32_t overflows = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        if (stored == LogitDType::f32) {  // widening from fp16 or bf16: exact
            const float f = source == LogitDType::f16 ? detail::f16_to_f32_bits(h)
                                                      : detail::bits_f32(std::uint32_t{h} << 16);
            std::memcpy(out + 4 * i, &f, 4);
        } else {  // bf16 -> fp16 through the exact fp32
            bool overflow;
            const std::uint16_t r =
                detail::f32_to_f16_rne_bits(detail::bits_f32(std::uint32_t{h} << 16), overflow);
            overflows += overflow;
            std::memcpy(out + 2 * i, &r, 2);
        }
    }
    return overflows;
}

void append_first_gen_item(std::string& out, std::span<const std::byte> bytes,
                           std::string_view dtype, std::int64_t vocab)
{
    static constexpr std::string_view head = R"({"data":")";
    static constexpr std::string_view mid = R"(","shape":[1,)";
    static constexpr std::string_view dtype_key = R"(],"dtype":")";
    static constexpr std::string_view tail = R"("})";
    const std::string v = std::to_string(vocab);
    const std::size_t b64 = base64_encoded_size(bytes.size());
    const std::size_t at = out.size();
    // One resize, then write in place: a 400 KB payload is not copied through a temporary.
    out.resize(at + head.size() + b64 + mid.size() + v.size() + dtype_key.size() + dtype.size() +
               tail.size());
    char* p = out.data() + at;
    const auto put = [&p](std::string_view s) {
        std::memcpy(p, s.data(), s.size());
        p += s.size();
    };
    put(head);
    base64_encode(bytes, p);
    p += b64;
    put(mid);
    put(v);
    put(dtype_key);
    put(dtype);
    put(tail);
}

float DecodedFirstGen::element(std::size_t i) const noexcept
{
    return load_logit(bytes.data(), dtype, static_cast<std::int64_t>(i));
}

namespace {

const char* type_name(simdjson::dom::element_type t)
{
    using T = simdjson::dom::element_type;
    switch (t) {
    case T::ARRAY: return "array";
    case T::OBJECT: return "object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE: return "number";
    case T::STRING: return "string";
    case T::BOOL: return "bool";
    case T::NULL_VALUE: return "null";
    }
    return "unknown";
}

std::string shape_text(const std::vector<std::int64_t>& shape)
{
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// Untrusted text quoted for a one-line error: control characters, '"', '\\' and bytes >= 0x7f
// escaped, at most 64 characters shown.
std::string quoted(std::string_view text)
{
    static constexpr char hex[] = "0123456789abcdef";
    std::string q = "\"";
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i == 64) {
            q += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            q += '\\';
            q += char(c);
        } else if (c < 0x20 || c >= 0x7f) {
            q += "\\x";
            q += hex[c >> 4];
            q += hex[c & 15];
        } else {
            q += char(c);
        }
    }
    return q + "\"";
}

// Decodes one parsed item; error gets the text after the "first_gen_logits...: " prefix.
bool decode_item(simdjson::dom::element item, DecodedFirstGen& out, std::string& error)
{
    simdjson::dom::object obj;
    if (item.get_object().get(obj) != simdjson::SUCCESS) {
        error = std::string("must be an object, got ") + type_name(item.type());
        return false;
    }
    std::string_view data;
    std::string_view dtype;
    simdjson::dom::array shape;
    bool seen_data = false, seen_shape = false, seen_dtype = false;
    for (const auto field : obj) {
        const std::string_view key = field.key;
        bool* seen = key == "data" ? &seen_data : key == "shape" ? &seen_shape
                   : key == "dtype" ? &seen_dtype : nullptr;
        if (!seen) {
            error = "unexpected key " + quoted(key) + " (allowed: data, shape, dtype)";
            return false;
        }
        if (*seen) {
            error = "duplicate key " + quoted(key);
            return false;
        }
        *seen = true;
        const bool ok = key == "shape" ? field.value.get_array().get(shape) == simdjson::SUCCESS
                      : key == "data"  ? field.value.get_string().get(data) == simdjson::SUCCESS
                                       : field.value.get_string().get(dtype) == simdjson::SUCCESS;
        if (!ok) {
            error = "\"" + std::string(key) + "\" must be " +
                    (key == "shape" ? "an array" : "a string") + ", got " +
                    type_name(field.value.type());
            return false;
        }
    }
    for (const auto& [seen, key] : {std::pair{seen_data, "data"}, std::pair{seen_shape, "shape"},
                                    std::pair{seen_dtype, "dtype"}}) {
        if (!seen) {
            error = std::string("missing required key \"") + key + "\"";
            return false;
        }
    }

    if (dtype == "float16") out.dtype = LogitDType::f16;
    else if (dtype == "float32") out.dtype = LogitDType::f32;
    else if (dtype == "bfloat16") out.dtype = LogitDType::bf16;
    else {
        error = "unsupported dtype " + quoted(dtype) + " (expected float16, float32 or bfloat16)";
        return false;
    }

    out.shape.clear();
    std::uint64_t elements = 1;
    bool too_big = false;
    for (const auto dim : shape) {
        std::int64_t d;
        if (dim.get_int64().get(d) != simdjson::SUCCESS || d < 0) {
            error = "shape[" + std::to_string(out.shape.size()) + "] must be a non-negative " +
                    "integer, got " + simdjson::minify(dim);
            return false;
        }
        out.shape.push_back(d);
        too_big = too_big || __builtin_mul_overflow(elements, static_cast<std::uint64_t>(d), &elements);
    }
    if (out.shape.size() != 2) {
        error = "shape must be [n, V], got " + shape_text(out.shape);
        return false;
    }
    std::uint64_t need = 0;
    too_big = too_big || __builtin_mul_overflow(elements, std::uint64_t{itemsize(out.dtype)}, &need);
    if (too_big) {
        error = "shape " + shape_text(out.shape) + " is too large";
        return false;
    }

    std::string b64_error;
    if (!base64_decode(data, out.bytes, b64_error)) {
        error = "data: " + b64_error;
        return false;
    }
    if (out.bytes.size() != need) {
        error = std::to_string(out.bytes.size()) + " bytes for shape " + shape_text(out.shape) +
                " of " + std::string(dtype) + " (need " + std::to_string(need) + ")";
        return false;
    }
    return true;
}

}  // namespace

bool decode_first_gen_item(std::string_view json_object_text, DecodedFirstGen& out,
                           std::string& error)
{
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (const auto e = parser.parse(json_object_text.data(), json_object_text.size()).get(doc)) {
        error = std::string("first_gen_logits: invalid JSON: ") + simdjson::error_message(e);
        return false;
    }
    if (!decode_item(doc, out, error)) {
        error = "first_gen_logits: " + error;
        return false;
    }
    return true;
}

bool decode_first_gen_list(std::string_view json_array_text, std::vector<DecodedFirstGen>& out,
                           std::string& error)
{
    out.clear();
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (const auto e = parser.parse(json_array_text.data(), json_array_text.size()).get(doc)) {
        error = std::string("first_gen_logits: invalid JSON: ") + simdjson::error_message(e);
        return false;
    }
    simdjson::dom::array list;
    if (doc.get_array().get(list) != simdjson::SUCCESS) {
        error = std::string("first_gen_logits: must be a list, got ") + type_name(doc.type());
        return false;
    }
    for (const auto item : list) {
        DecodedFirstGen d;
        if (!decode_item(item, d, error)) {
            error = "first_gen_logits[" + std::to_string(out.size()) + "]: " + error;
            return false;
        }
        out.push_back(std::move(d));
    }
    return true;
}

}  // namespace jsonlw::snapshot
