// Strict base64 and the first_gen_logits item: golden vectors, round trips, and rejections
// with error text that says what is wrong.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/base64.hpp>
#include <jsonlw/snapshot/reference.hpp>

#include <simdjson.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace jsonlw::snapshot;

namespace {

std::span<const std::byte> as_bytes(std::string_view s)
{
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

template <class T>
std::span<const std::byte> as_bytes(const std::vector<T>& v)
{
    return std::as_bytes(std::span<const T>(v));
}

std::string encode(std::span<const std::byte> in)
{
    std::string s;
    base64_append(s, in);
    return s;
}

std::string hex(const std::vector<std::byte>& b)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    for (const std::byte x : b) {
        s += digits[std::to_integer<int>(x) >> 4];
        s += digits[std::to_integer<int>(x) & 15];
    }
    return s;
}

// The decode error for text, or "" when it decodes.
std::string decode_error(std::string_view text)
{
    std::vector<std::byte> out;
    std::string error;
    return base64_decode(text, out, error) ? std::string() : error;
}

std::string item_error(std::string_view json)
{
    DecodedFirstGen d;
    std::string error;
    return decode_first_gen_item(json, d, error) ? std::string() : error;
}

}  // namespace

// --- base64 --------------------------------------------------------------------------------

TEST_CASE("base64 encodes the RFC 4648 test vectors", "[snapshot][base64]")
{
    CHECK(encode(as_bytes("")) == "");
    CHECK(encode(as_bytes("f")) == "Zg==");
    CHECK(encode(as_bytes("fo")) == "Zm8=");
    CHECK(encode(as_bytes("foo")) == "Zm9v");
    CHECK(encode(as_bytes("foob")) == "Zm9vYg==");
    CHECK(encode(as_bytes("fooba")) == "Zm9vYmE=");
    CHECK(encode(as_bytes("foobar")) == "Zm9vYmFy");
    CHECK(base64_encoded_size(0) == 0);
    CHECK(base64_encoded_size(1) == 4);
    CHECK(base64_encoded_size(3) == 4);
    CHECK(base64_encoded_size(304128) == 405504);  // one bf16 row of 152064 as fp16
}

TEST_CASE("base64 appends after existing text and uses the whole alphabet",
          "[snapshot][base64]")
{
    std::string s = "prefix:";
    const unsigned char all[] = {0x00, 0x10, 0x83, 0x10, 0x51, 0x87, 0x20, 0x92, 0x8b, 0x30,
                                 0xd3, 0x8f, 0x41, 0x14, 0x93, 0x51, 0x55, 0x97, 0x61, 0x96,
                                 0x9b, 0x71, 0xd7, 0x9f, 0x82, 0x18, 0xa3, 0x92, 0x59, 0xa7,
                                 0xa2, 0x9a, 0xab, 0xb2, 0xdb, 0xaf, 0xc3, 0x1c, 0xb3, 0xd3,
                                 0x5d, 0xb7, 0xe3, 0x9e, 0xbb, 0xf3, 0xdf, 0xbf};
    base64_append(s, std::as_bytes(std::span(all)));
    CHECK(s == "prefix:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
}

TEST_CASE("fp16 and fp32 rows encode to the golden vectors", "[snapshot][base64][first_gen]")
{
    // fp16 [1, -2, 0.5, 65504]
    std::vector<std::uint16_t> h;
    for (const float f : {1.0f, -2.0f, 0.5f, 65504.0f}) h.push_back(f32_to_f16_rne(f, nullptr));
    std::vector<std::byte> hb(as_bytes(h).begin(), as_bytes(h).end());
    CHECK(hex(hb) == "003c00c00038ff7b");
    CHECK(encode(as_bytes(h)) == "ADwAwAA4/3s=");
    // fp32 [1, -2, 0.5, -inf]
    const std::vector<float> f = {1.0f, -2.0f, 0.5f, -std::numeric_limits<float>::infinity()};
    CHECK(encode(as_bytes(f)) == "AACAPwAAAMAAAAA/AACA/w==");
}

TEST_CASE("base64 round trips random bytes of every length up to 1000", "[snapshot][base64]")
{
    std::mt19937 rng(9);
    for (std::size_t n = 0; n <= 1000; ++n) {
        std::vector<std::byte> in(n);
        for (auto& b : in) b = static_cast<std::byte>(rng());
        const std::string text = encode(in);
        REQUIRE(text.size() == base64_encoded_size(n));
        std::vector<std::byte> out;
        std::string error;
        REQUIRE(base64_decode(text, out, error));
        CHECK(out == in);
    }
}

TEST_CASE("base64 decode rejects characters outside the standard alphabet with their offset",
          "[snapshot][base64]")
{
    CHECK(decode_error("Zm9v") == "");
    CHECK(decode_error("Zm-v") == "base64: invalid character '-' (0x2d) at offset 2");
    CHECK(decode_error("Zm9_") == "base64: invalid character '_' (0x5f) at offset 3");
    CHECK(decode_error("Zm9v Zm9v") != "");  // length 9
    CHECK(decode_error("Zm9vZm 9") == "base64: invalid character ' ' (0x20) at offset 6");
    CHECK(decode_error("Zm9vZm9\n") == "base64: invalid character 0x0a at offset 7");
    CHECK(decode_error(std::string_view("Zm\0v", 4)) == "base64: invalid character 0x00 at offset 2");
    CHECK(decode_error("Zm9v\xc3\xa9Zm") == "base64: invalid character 0xc3 at offset 4");
    CHECK(decode_error("Z\x80==") == "base64: invalid character 0x80 at offset 1");
}

TEST_CASE("base64 decode rejects bad padding and a length that is not a multiple of 4",
          "[snapshot][base64]")
{
    CHECK(decode_error("Zg==") == "");
    CHECK(decode_error("Zm8=") == "");
    CHECK(decode_error("Zg=") == "base64: length 3 is not a multiple of 4");
    CHECK(decode_error("Zg===") == "base64: length 5 is not a multiple of 4");
    CHECK(decode_error("Zg") == "base64: length 2 is not a multiple of 4");
    CHECK_THAT(decode_error("Z==="), Catch::Contains("too much padding") && Catch::Contains("offset 1"));
    CHECK_THAT(decode_error("===="), Catch::Contains("too much padding"));
    CHECK_THAT(decode_error("=Zg="), Catch::Contains("'=' at offset 0 before the end"));
    CHECK_THAT(decode_error("Zg==Zm9v"), Catch::Contains("'=' at offset 2 before the end"));
    CHECK_THAT(decode_error("Zm9vZ=9v"), Catch::Contains("'=' at offset 5 before the end"));
    CHECK_THAT(decode_error("Zm9vZ=g="), Catch::Contains("'=' at offset 5 before the end"));
}

TEST_CASE("base64 decode rejects non-zero bits under the padding", "[snapshot][base64]")
{
    CHECK(decode_error("Zh==") ==
          "base64: non-zero unused bits in 'h' (0x68) at offset 1 before the padding (non-canonical "
          "encoding)");
    CHECK_THAT(decode_error("Zm9=") , Catch::Contains("non-canonical") && Catch::Contains("offset 2"));
    CHECK(decode_error("Zm8=") == "");
    CHECK(decode_error("Zg==") == "");
}

// --- the first_gen_logits item -------------------------------------------------------------

TEST_CASE("first_gen item sizes and dtypes follow the capture mode", "[snapshot][first_gen]")
{
    using enum FirstGenMode;
    using enum LogitDType;
    CHECK(first_gen_item_bytes(float16_compat, bf16, 152064) == 304128);
    CHECK(first_gen_item_bytes(float16_compat, f32, 10) == 40);
    CHECK(first_gen_item_bytes(float32_exact, bf16, 10) == 40);
    CHECK(first_gen_item_bytes(bfloat16_raw, bf16, 10) == 20);
    CHECK(first_gen_item_bytes(off, bf16, 10) == 0);
    CHECK(std::string(first_gen_dtype(float16_compat, bf16)) == "float16");
    CHECK(std::string(first_gen_dtype(float16_compat, f16)) == "float16");
    CHECK(std::string(first_gen_dtype(float16_compat, f32)) == "float32");
    CHECK(std::string(first_gen_dtype(float32_exact, f16)) == "float32");
    CHECK(std::string(first_gen_dtype(bfloat16_raw, bf16)) == "bfloat16");
    CHECK(std::string(first_gen_dtype(bfloat16_raw, f16)) == "float16");
    CHECK(std::string(first_gen_dtype(bfloat16_raw, f32)) == "float32");
    CHECK(std::string(first_gen_dtype(off, f32)) == "");
}

TEST_CASE("convert_first_gen_row keeps, widens or narrows as the mode says and counts overflow",
          "[snapshot][first_gen]")
{
    // bf16: 1, -2, 65536 (overflows as fp16), -inf, NaN, 1e-8-ish (underflows, no overflow)
    const std::vector<std::uint16_t> bf = {0x3f80, 0xc000, 0x4780, 0xff80, 0x7fc0, 0x322c};
    const auto n = static_cast<std::int32_t>(bf.size());
    std::vector<std::byte> out(first_gen_item_bytes(FirstGenMode::float32_exact, LogitDType::bf16, n));

    CHECK(convert_first_gen_row(bf.data(), LogitDType::bf16, n, FirstGenMode::float16_compat, out.data()) == 1);
    std::vector<std::uint16_t> h(bf.size());
    std::memcpy(h.data(), out.data(), 2 * h.size());
    CHECK(h == std::vector<std::uint16_t>{0x3c00, 0xc000, 0x7c00, 0xfc00, 0x7e00, 0x0000});

    CHECK(convert_first_gen_row(bf.data(), LogitDType::bf16, n, FirstGenMode::float32_exact, out.data()) == 0);
    std::vector<float> f(bf.size());
    std::memcpy(f.data(), out.data(), 4 * f.size());
    for (std::size_t i = 0; i < bf.size(); ++i) {
        INFO(i);
        CHECK(std::bit_cast<std::uint32_t>(f[i]) == std::uint32_t{bf[i]} << 16);
    }

    CHECK(convert_first_gen_row(bf.data(), LogitDType::bf16, n, FirstGenMode::bfloat16_raw, out.data()) == 0);
    CHECK(std::memcmp(out.data(), bf.data(), 2 * bf.size()) == 0);

    // fp16 input: kept as is in the compat and raw modes, widened exactly in float32_exact.
    const std::vector<std::uint16_t> h16 = {0x3c00, 0x0001, 0x7bff, 0x7c01};
    std::vector<std::byte> o16(16);
    CHECK(convert_first_gen_row(h16.data(), LogitDType::f16, 4, FirstGenMode::float16_compat, o16.data()) == 0);
    CHECK(std::memcmp(o16.data(), h16.data(), 8) == 0);
    CHECK(convert_first_gen_row(h16.data(), LogitDType::f16, 4, FirstGenMode::float32_exact, o16.data()) == 0);
    float w[4];
    std::memcpy(w, o16.data(), 16);
    CHECK(w[0] == 1.0f);
    CHECK(w[1] == std::ldexp(1.0f, -24));
    CHECK(w[2] == 65504.0f);
    CHECK(std::isnan(w[3]));

    // fp32 input stays fp32 (TensorRT-LLM keeps float32 as float32).
    const std::vector<float> f32 = {1e30f, -3.5f};
    std::vector<std::byte> o32(8);
    CHECK(convert_first_gen_row(f32.data(), LogitDType::f32, 2, FirstGenMode::float16_compat, o32.data()) == 0);
    CHECK(std::memcmp(o32.data(), f32.data(), 8) == 0);

    // Off writes nothing.
    std::vector<std::byte> untouched(4, std::byte{0x5a});
    CHECK(convert_first_gen_row(f32.data(), LogitDType::f32, 1, FirstGenMode::off, untouched.data()) == 0);
    CHECK(untouched == std::vector<std::byte>(4, std::byte{0x5a}));
}

TEST_CASE("a first_gen item is exactly TensorRT-LLM's {data, shape, dtype} object",
          "[snapshot][first_gen]")
{
    std::vector<std::uint16_t> h;
    for (const float f : {1.0f, -2.0f, 0.5f, 65504.0f}) h.push_back(f32_to_f16_rne(f, nullptr));
    std::string out = "[";
    append_first_gen_item(out, as_bytes(h), "float16", 4);
    out += "]";
    CHECK(out == R"([{"data":"ADwAwAA4/3s=","shape":[1,4],"dtype":"float16"}])");
}

TEST_CASE("a first_gen item parses as JSON with its keys in the order data, shape, dtype",
          "[snapshot][first_gen]")
{
    std::vector<float> row(1000);
    for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i) * 0.25f - 7.0f;
    std::string out;
    append_first_gen_item(out, as_bytes(row), "float32", 1000);
    simdjson::dom::parser parser;
    simdjson::dom::object obj;
    REQUIRE(parser.parse(out).get_object().get(obj) == simdjson::SUCCESS);
    std::vector<std::string> keys;
    for (const auto field : obj) keys.emplace_back(field.key);
    CHECK(keys == std::vector<std::string>{"data", "shape", "dtype"});
    CHECK(std::string_view(obj["dtype"].get_string().value()) == "float32");
    CHECK(obj["shape"].at(0).get_int64().value() == 1);
    CHECK(obj["shape"].at(1).get_int64().value() == 1000);
}

TEST_CASE("a first_gen item round trips through the strict decoder for every dtype",
          "[snapshot][first_gen]")
{
    std::mt19937 rng(4);
    std::normal_distribution<float> nd(0.0f, 4.0f);
    for (const LogitDType src : {LogitDType::f32, LogitDType::f16, LogitDType::bf16}) {
        for (const FirstGenMode mode :
             {FirstGenMode::float16_compat, FirstGenMode::float32_exact, FirstGenMode::bfloat16_raw}) {
            const std::int32_t V = 1 + static_cast<std::int32_t>(rng() % 3000);
            std::vector<std::byte> row(V * itemsize(src));
            std::vector<float> values(V);
            for (std::int32_t i = 0; i < V; ++i) {
                const float x = nd(rng);
                if (src == LogitDType::f32) std::memcpy(&row[4 * i], &x, 4);
                else {
                    const std::uint16_t b = src == LogitDType::f16
                                                ? f32_to_f16_rne(x, nullptr)
                                                : static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x) >> 16);
                    std::memcpy(&row[2 * i], &b, 2);
                }
                values[i] = load_logit(row.data(), src, i);
                if (src == LogitDType::bf16 && first_gen_stored_dtype(mode, src) == LogitDType::f16) {
                    std::uint16_t b;
                    std::memcpy(&b, &row[2 * i], 2);
                    values[i] = f16_to_f32(bf16_to_f16_compat(b, nullptr));  // tiny values round
                }
            }
            std::vector<std::byte> bytes(first_gen_item_bytes(mode, src, V));
            convert_first_gen_row(row.data(), src, V, mode, bytes.data());
            std::string list = "[";
            append_first_gen_item(list, bytes, first_gen_dtype(mode, src), V);
            list += ",";
            append_first_gen_item(list, bytes, first_gen_dtype(mode, src), V);
            list += "]";

            std::vector<DecodedFirstGen> decoded;
            std::string error;
            INFO(dtype_name(src) << " mode " << int(mode) << " V=" << V);
            REQUIRE(decode_first_gen_list(list, decoded, error));
            REQUIRE(decoded.size() == 2);
            const DecodedFirstGen& d = decoded[1];
            CHECK(d.dtype == first_gen_stored_dtype(mode, src));
            CHECK(d.shape == std::vector<std::int64_t>{1, V});
            CHECK(d.bytes == bytes);
            REQUIRE(d.size() == static_cast<std::size_t>(V));
            // Normal(0, 4) values are in fp16 range and bf16 -> fp16 is exact there.
            for (std::int32_t i = 0; i < V; ++i) CHECK(d.element(i) == values[i]);
        }
    }
}

TEST_CASE("the first_gen decoder rejects unknown dtypes", "[snapshot][first_gen]")
{
    for (const char* dt : {"float64", "int8", "<f2", "Float16", ""}) {
        const std::string json = std::string(R"({"data":"AAAAAAAAAAA=","shape":[1,4],"dtype":")") + dt + "\"}";
        CHECK(item_error(json) == std::string("first_gen_logits: unsupported dtype \"") + dt +
                                      "\" (expected float16, float32 or bfloat16)");
    }
}

TEST_CASE("the first_gen decoder rejects missing, extra, duplicate and mistyped keys",
          "[snapshot][first_gen]")
{
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","shape":[1,4],"dtype":"float16"})") == "");
    CHECK(item_error(R"({"shape":[1,4],"dtype":"float16"})") ==
          "first_gen_logits: missing required key \"data\"");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","dtype":"float16"})") ==
          "first_gen_logits: missing required key \"shape\"");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","shape":[1,4]})") ==
          "first_gen_logits: missing required key \"dtype\"");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","shape":[1,4],"dtype":"float16","order":"C"})") ==
          "first_gen_logits: unexpected key \"order\" (allowed: data, shape, dtype)");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","data":"AAAAAAAAAAA=","shape":[1,4],"dtype":"float16"})") ==
          "first_gen_logits: duplicate key \"data\"");
    CHECK(item_error(R"({"data":[0,0],"shape":[1,4],"dtype":"float16"})") ==
          "first_gen_logits: \"data\" must be a string, got array");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","shape":"1,4","dtype":"float16"})") ==
          "first_gen_logits: \"shape\" must be an array, got string");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","shape":[1,4],"dtype":16})") ==
          "first_gen_logits: \"dtype\" must be a string, got number");
    CHECK(item_error(R"([{"data":"AAAAAAAAAAA=","shape":[1,4],"dtype":"float16"}])") ==
          "first_gen_logits: must be an object, got array");
    CHECK_THAT(item_error(R"({"data":"AAAA")"), Catch::StartsWith("first_gen_logits: invalid JSON: "));
}

TEST_CASE("the first_gen decoder rejects a byte count that does not match the shape",
          "[snapshot][first_gen]")
{
    // 7 bytes ("AAAAAAAAAA==" decodes to 7 zero bytes) for [1, 4] float16 (8 bytes)
    CHECK(item_error(R"({"data":"AAAAAAAAAA==","shape":[1,4],"dtype":"float16"})") ==
          "first_gen_logits: 7 bytes for shape [1, 4] of float16 (need 8)");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","shape":[1,4],"dtype":"float32"})") ==
          "first_gen_logits: 8 bytes for shape [1, 4] of float32 (need 16)");
    CHECK(item_error(R"({"data":"AAAAAAAAAAA=","shape":[2,2],"dtype":"bfloat16"})") == "");
    CHECK(item_error(R"({"data":"","shape":[0,152064],"dtype":"float16"})") == "");
    CHECK_THAT(item_error(R"({"data":"AAAAAAAAAA=A","shape":[1,4],"dtype":"float16"})"),
               Catch::StartsWith("first_gen_logits: data: base64: '=' at offset 10"));
}

TEST_CASE("the first_gen decoder accepts only a shape [n, V] of non-negative integers",
          "[snapshot][first_gen]")
{
    const auto with_shape = [](const char* shape) {
        return item_error(std::string(R"({"data":"AAAAAAAAAAA=","shape":)") + shape +
                          R"(,"dtype":"float16"})");
    };
    CHECK(with_shape("[1,4]") == "");
    CHECK(with_shape("[4]") == "first_gen_logits: shape must be [n, V], got [4]");
    CHECK(with_shape("[1,1,4]") == "first_gen_logits: shape must be [n, V], got [1, 1, 4]");
    CHECK(with_shape("[]") == "first_gen_logits: shape must be [n, V], got []");
    CHECK(with_shape("[1,-4]") == "first_gen_logits: shape[1] must be a non-negative integer, got -4");
    CHECK_THAT(with_shape("[1.0,4]"),
               Catch::StartsWith("first_gen_logits: shape[0] must be a non-negative integer, got 1"));
    CHECK(with_shape("[1,\"4\"]") == "first_gen_logits: shape[1] must be a non-negative integer, got \"4\"");
    CHECK(with_shape("[1,18446744073709551615]") ==
          "first_gen_logits: shape[1] must be a non-negative integer, got 18446744073709551615");
    CHECK(with_shape("[4294967296,4294967296]") ==
          "first_gen_logits: shape [4294967296, 4294967296] is too large");
}

TEST_CASE("a first_gen list names the failing item", "[snapshot][first_gen]")
{
    std::vector<DecodedFirstGen> out;
    std::string error;
    CHECK_FALSE(decode_first_gen_list(
        R"([{"data":"AAA=","shape":[1,1],"dtype":"bfloat16"},{"data":"AAA=","shape":[1,1],"dtype":"float64"}])",
        out, error));
    CHECK_THAT(error, Catch::StartsWith("first_gen_logits[1]: unsupported dtype \"float64\""));
    CHECK_FALSE(decode_first_gen_list(R"({"data":"AAA="})", out, error));
    CHECK(error == "first_gen_logits: must be a list, got object");
    CHECK_FALSE(decode_first_gen_list(R"([1])", out, error));
    CHECK(error == "first_gen_logits[0]: must be an object, got number");
    CHECK(decode_first_gen_list("[]", out, error));
    CHECK(out.empty());
}

TEST_CASE("a decoder error quoting hostile input stays on one line", "[snapshot][first_gen][decode]")
{
    using namespace jsonlw::snapshot;
    DecodedFirstGen out;
    std::string error;
    // Found by fuzzing: a key with a newline used to be copied into the error as it was.
    CHECK_FALSE(decode_first_gen_item("{\"\\n\":\"\"}", out, error));
    CHECK(error.find('\n') == std::string::npos);
    CHECK(error.find("unexpected key \"\\x0a\"") != std::string::npos);
    CHECK_FALSE(decode_first_gen_item(R"({"data":"","shape":[1,0],"dtype":"f\u0000\"x"})", out, error));
    CHECK(error.find("unsupported dtype \"f\\x00\\\"x\"") != std::string::npos);
    const std::string long_key(500, 'k');
    CHECK_FALSE(decode_first_gen_item("{\"" + long_key + "\":1}", out, error));
    CHECK(error.size() < 200);
}
