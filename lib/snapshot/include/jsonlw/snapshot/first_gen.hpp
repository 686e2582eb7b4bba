// The first_gen_logits item: one captured logits row as TensorRT-LLM's serve layer writes it
// (openai_protocol.py, _serialize_first_gen_logits): {"data":"<base64>","shape":[1,V],
// "dtype":"float16"}, bytes little-endian, so its _deserialize_first_gen_logits loads our
// records unchanged. The decoder here is stricter than TensorRT-LLM's: a dtype whitelist,
// strict base64, exactly the keys data/shape/dtype, shape [n, V], and a byte count that matches
// the shape. Pure functions; safe from any thread.
#pragma once

#include <jsonlw/snapshot/types.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::snapshot {

// The element type a row of `source` is captured as: float16_compat keeps fp32 and fp16 and
// turns bf16 into fp16 (TensorRT-LLM does the same, numpy having no bf16); float32_exact widens
// everything to fp32; bfloat16_raw keeps all three. off has no captured type (returns source).
LogitDType first_gen_stored_dtype(FirstGenMode mode, LogitDType source) noexcept;

// Bytes of one captured row of `vocab` logits: vocab * itemsize(stored dtype); 0 when Off.
std::size_t first_gen_item_bytes(FirstGenMode mode, LogitDType source, std::int32_t vocab) noexcept;

// The item's "dtype" string: "float16", "float32" or "bfloat16" ("" when Off).
const char* first_gen_dtype(FirstGenMode mode, LogitDType source) noexcept;

// Writes first_gen_item_bytes(...) bytes of the captured row at out, little-endian; nothing
// when Off. Returns how many finite logits became inf in a bf16 -> fp16 conversion (values
// >= 65520; the first bf16 value that overflows is 65536). NaN stays NaN (quiet, sign kept).
std::uint32_t convert_first_gen_row(const void* row, LogitDType source, std::int32_t vocab,
                                    FirstGenMode mode, std::byte* out) noexcept;

// Appends exactly {"data":"<base64 of bytes>","shape":[1,<vocab>],"dtype":"<dtype>"} (keys in
// TensorRT-LLM's order, no spaces). dtype must be one of the three names above: it is written
// without escaping.
void append_first_gen_item(std::string& out, std::span<const std::byte> bytes,
                           std::string_view dtype, std::int64_t vocab);

// One decoded item.
struct DecodedFirstGen {
    LogitDType dtype = LogitDType::f16;
    std::vector<std::int64_t> shape;  // [n, V]
    std::vector<std::byte> bytes;     // prod(shape) * itemsize(dtype), little-endian

    std::size_t size() const noexcept { return bytes.size() / itemsize(dtype); }
    // Element i (row-major) widened exactly to fp32; i < size().
    float element(std::size_t i) const noexcept;
};

// Decodes one item (the JSON text of an object). On failure returns false and sets error to
// one line starting "first_gen_logits: ", e.g.
// "first_gen_logits: 7 bytes for shape [1, 4] of float16 (need 8)".
bool decode_first_gen_item(std::string_view json_object_text, DecodedFirstGen& out,
                           std::string& error);

// Decodes a whole first_gen_logits list ("[item, ...]"); errors name the item:
// "first_gen_logits[2]: unsupported dtype \"float64\" ...". out is replaced.
bool decode_first_gen_list(std::string_view json_array_text, std::vector<DecodedFirstGen>& out,
                           std::string& error);

}  // namespace jsonlw::snapshot
