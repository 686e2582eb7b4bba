// fp16/bf16 <-> fp32: exact widening and the round-to-nearest-even narrowing that the
// first_gen_logits compat mode and CUDA's __float2half_rn must agree on bit for bit.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/snapshot/reference.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

using namespace jsonlw::snapshot;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

// An independent fp16 decoder: sign * 2^(e-15) * (1 + m/1024), done in double.
double f16_value(std::uint16_t h)
{
    const int e = (h >> 10) & 0x1f;
    const int m = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
    if (e == 0) return sign * std::ldexp(m, -24);
    return sign * std::ldexp(1024 + m, e - 25);
}

// An independent fp32 -> fp16 value: scale to the fp16 quantum of x's binade, round to nearest
// even with nearbyint (default rounding mode), saturate to inf past 65504.
double f16_round_reference(float x, bool& overflow)
{
    overflow = false;
    if (std::isnan(x) || std::isinf(x) || x == 0) return x;
    const double d = x;
    const int e = std::max(std::ilogb(d), -14);  // subnormals share the quantum 2^-24
    const double quantum = std::ldexp(1.0, e - 10);
    const double r = std::nearbyint(d / quantum) * quantum;  // d / quantum is exact
    if (std::fabs(r) > 65504.0) {
        overflow = true;
        return std::copysign(HUGE_VAL, d);
    }
    return r == 0 ? std::copysign(0.0, d) : r;
}

}  // namespace

TEST_CASE("fp16 bit patterns widen exactly, subnormals, infinities and NaN payloads included",
          "[snapshot][conversions]")
{
    CHECK(f16_to_f32(0x0000) == 0.0f);
    CHECK(bits_of(f16_to_f32(0x8000)) == 0x80000000u);
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));         // smallest subnormal
    CHECK(f16_to_f32(0x03ff) == 1023.0f * std::ldexp(1.0f, -24));  // largest subnormal
    CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));         // smallest normal
    CHECK(f16_to_f32(0x3c00) == 1.0f);
    CHECK(f16_to_f32(0xc000) == -2.0f);
    CHECK(f16_to_f32(0x3555) == 0x1.554p-2f);
    CHECK(f16_to_f32(0x7bff) == 65504.0f);
    CHECK(f16_to_f32(0xfbff) == -65504.0f);
    CHECK(f16_to_f32(0x7c00) == inf);
    CHECK(f16_to_f32(0xfc00) == -inf);
    CHECK(bits_of(f16_to_f32(0x7e00)) == 0x7fc00000u);
    CHECK(bits_of(f16_to_f32(0xfe00)) == 0xffc00000u);
    CHECK(bits_of(f16_to_f32(0x7c01)) == 0x7f802000u);  // signaling stays signaling
    CHECK(bits_of(f16_to_f32(0x7fff)) == 0x7fffe000u);
}

TEST_CASE("every fp16 pattern widens to the value an independent decoder gives",
          "[snapshot][conversions]")
{
    int mismatches = 0;
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const float got = f16_to_f32(static_cast<std::uint16_t>(h));
        const double want = f16_value(static_cast<std::uint16_t>(h));
        const bool ok = std::isnan(want) ? std::isnan(got) && std::signbit(got) == ((h & 0x8000) != 0)
                                         : static_cast<double>(got) == want &&
                                               std::signbit(got) == std::signbit(want);
        if (!ok && ++mismatches < 5) FAIL_CHECK("fp16 0x" << std::hex << h);
    }
    CHECK(mismatches == 0);
}

TEST_CASE("bf16 bit patterns widen by a 16-bit shift", "[snapshot][conversions]")
{
    CHECK(bf16_to_f32(0x3f80) == 1.0f);
    CHECK(bf16_to_f32(0xc000) == -2.0f);
    CHECK(bf16_to_f32(0x0001) == std::ldexp(1.0f, -133));  // subnormal
    CHECK(bf16_to_f32(0x7f7f) == 0x1.fep127f);             // max finite
    CHECK(bf16_to_f32(0x7f80) == inf);
    CHECK(bf16_to_f32(0xff80) == -inf);
    CHECK(bits_of(bf16_to_f32(0x7fc1)) == 0x7fc10000u);
    CHECK(bits_of(bf16_to_f32(0xff81)) == 0xff810000u);
    CHECK(load_logit("\x80\x3f\x00\x40", LogitDType::bf16, 1) == 2.0f);
}

TEST_CASE("fp32 to fp16 rounds to nearest even and counts overflow to inf",
          "[snapshot][conversions]")
{
    bool ov = true;
    CHECK(f32_to_f16_rne(65504.0f, &ov) == 0x7bff);
    CHECK_FALSE(ov);
    CHECK(f32_to_f16_rne(65519.996f, &ov) == 0x7bff);  // just below the midpoint
    CHECK_FALSE(ov);
    CHECK(f32_to_f16_rne(65520.0f, &ov) == 0x7c00);  // the midpoint ties to the even 2^16: inf
    CHECK(ov);
    CHECK(f32_to_f16_rne(70000.0f, &ov) == 0x7c00);
    CHECK(ov);
    CHECK(f32_to_f16_rne(-70000.0f, &ov) == 0xfc00);
    CHECK(ov);
    CHECK(f32_to_f16_rne(3.0e38f, &ov) == 0x7c00);
    CHECK(ov);
    CHECK(f32_to_f16_rne(1e-8f, &ov) == 0x0000);  // underflow to zero is not an overflow
    CHECK_FALSE(ov);
    CHECK(f32_to_f16_rne(-1e-8f, &ov) == 0x8000);
    CHECK_FALSE(ov);
    CHECK(f32_to_f16_rne(inf, &ov) == 0x7c00);  // already inf: not an overflow
    CHECK_FALSE(ov);
    CHECK(f32_to_f16_rne(-inf, &ov) == 0xfc00);
    CHECK_FALSE(ov);
    CHECK(f32_to_f16_rne(std::numeric_limits<float>::quiet_NaN(), &ov) == 0x7e00);
    CHECK_FALSE(ov);
    CHECK(f32_to_f16_rne(-std::numeric_limits<float>::quiet_NaN(), nullptr) == 0xfe00);
    CHECK(f32_to_f16_rne(std::bit_cast<float>(0x7f800001u), nullptr) == 0x7e00);  // quieted
    CHECK(f32_to_f16_rne(std::bit_cast<float>(0xff812345u), nullptr) == (0xfe00 | (0x12345u >> 13)));
    CHECK(f32_to_f16_rne(1.0f, nullptr) == 0x3c00);
    CHECK(f32_to_f16_rne(-2.0f, nullptr) == 0xc000);
    CHECK(f32_to_f16_rne(0.5f, nullptr) == 0x3800);
    CHECK(f32_to_f16_rne(-0.0f, nullptr) == 0x8000);
    // Subnormal results: 2^-25 ties to 0, just above it rounds to 2^-24, 1.5 * 2^-24 ties up
    // to 2 * 2^-24, 2.5 * 2^-24 ties down to 2 * 2^-24.
    CHECK(f32_to_f16_rne(std::ldexp(1.0f, -25), nullptr) == 0x0000);
    CHECK(f32_to_f16_rne(std::nextafter(std::ldexp(1.0f, -25), 1.0f), nullptr) == 0x0001);
    CHECK(f32_to_f16_rne(1.5f * std::ldexp(1.0f, -24), nullptr) == 0x0002);
    CHECK(f32_to_f16_rne(2.5f * std::ldexp(1.0f, -24), nullptr) == 0x0002);
    CHECK(f32_to_f16_rne(1023.5f * std::ldexp(1.0f, -24), nullptr) == 0x0400);  // to smallest normal
    CHECK(f32_to_f16_rne(1.0f + std::ldexp(1.0f, -11), nullptr) == 0x3c00);     // tie to even
    CHECK(f32_to_f16_rne(1.0f + 3 * std::ldexp(1.0f, -11), nullptr) == 0x3c02); // tie to even
    CHECK(f32_to_f16_rne(2047.5f, nullptr) == 0x6800);  // mantissa carry into the exponent
}

TEST_CASE("fp32 to fp16 agrees with an independent rounding on a sweep of fp32 patterns",
          "[snapshot][conversions]")
{
    // Every fp32 pattern with the low 7 mantissa bits fixed (2^25 patterns cover all binades,
    // signs and the rounding-relevant bits), then random patterns.
    int mismatches = 0;
    const auto check_one = [&](std::uint32_t u) {
        const float x = std::bit_cast<float>(u);
        bool ov = false, want_ov = false;
        const std::uint16_t h = f32_to_f16_rne(x, &ov);
        const double want = f16_round_reference(x, want_ov);
        const double got = f16_value(h);
        const bool ok = std::isnan(x) ? std::isnan(got) && ((h & 0x8000) != 0) == std::signbit(x)
                                      : got == want && std::signbit(got) == std::signbit(want) &&
                                            ov == want_ov;
        if (!ok && ++mismatches < 5) FAIL_CHECK("fp32 0x" << std::hex << u << " -> 0x" << h);
    };
    for (std::uint64_t hi = 0; hi < (1u << 25); ++hi) check_one(static_cast<std::uint32_t>(hi << 7) | 0x40u);
    for (std::uint64_t hi = 0; hi < (1u << 20); ++hi) check_one(static_cast<std::uint32_t>(hi << 12) | 0x1000u);
    std::mt19937 rng(42);
    for (int i = 0; i < 4'000'000; ++i) check_one(static_cast<std::uint32_t>(rng()));
    CHECK(mismatches == 0);
}

#if defined(__FLT16_MAX__)
TEST_CASE("fp32 to fp16 matches the compiler's _Float16 conversion", "[snapshot][conversions]")
{
    int mismatches = 0;
    std::mt19937 rng(7);
    for (int i = 0; i < 2'000'000; ++i) {
        const std::uint32_t u = rng();
        const float x = std::bit_cast<float>(u);
        const auto want = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
        const std::uint16_t got = f32_to_f16_rne(x, nullptr);
        const bool ok = std::isnan(x) ? (got & 0x7fff) > 0x7c00 && (got & 0x8000) == (want & 0x8000)
                                      : got == want;
        if (!ok && ++mismatches < 5) FAIL_CHECK("fp32 0x" << std::hex << u);
    }
    CHECK(mismatches == 0);
}
#endif

TEST_CASE("bf16 to fp16 compat conversion is exact in range, inf above and zero below",
          "[snapshot][conversions]")
{
    bool ov = false;
    CHECK(bf16_to_f16_compat(0x3f80, &ov) == 0x3c00);  // 1.0
    CHECK_FALSE(ov);
    CHECK(bf16_to_f16_compat(0x477f, &ov) == 0x7bf8);  // 65280, the largest bf16 below 65504
    CHECK_FALSE(ov);
    CHECK(bf16_to_f16_compat(0x4780, &ov) == 0x7c00);  // 65536: the first that overflows
    CHECK(ov);
    CHECK(bf16_to_f16_compat(0xc780, &ov) == 0xfc00);
    CHECK(ov);
    CHECK(bf16_to_f16_compat(0x7f80, &ov) == 0x7c00);
    CHECK_FALSE(ov);
    CHECK(bf16_to_f16_compat(0x322c, &ov) == 0x0000);  // ~1e-8
    CHECK_FALSE(ov);
    CHECK(bf16_to_f16_compat(0x7fc0, nullptr) == 0x7e00);
    CHECK(bf16_to_f16_compat(0xffc0, nullptr) == 0xfe00);
}

TEST_CASE("bf16 to fp16 compat conversion of all 65536 patterns matches an independent rounding",
          "[snapshot][conversions]")
{
    int mismatches = 0, overflows = 0;
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const float x = std::bit_cast<float>(b << 16);
        bool ov = false, want_ov = false;
        const std::uint16_t h = bf16_to_f16_compat(static_cast<std::uint16_t>(b), &ov);
        const double want = f16_round_reference(x, want_ov);
        bool ok = std::isnan(x) ? std::isnan(f16_value(h)) && ((h & 0x8000) != 0) == std::signbit(x)
                                : f16_value(h) == want && std::signbit(f16_value(h)) == std::signbit(want) &&
                                      ov == want_ov;
#if defined(__FLT16_MAX__)
        if (!std::isnan(x)) ok = ok && h == std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
#endif
        overflows += ov;
        if (!ok && ++mismatches < 5) FAIL_CHECK("bf16 0x" << std::hex << b << " -> 0x" << h);
    }
    CHECK(mismatches == 0);
    // bf16 finite values >= 65536 in magnitude: exponents 143..254, 128 mantissas, two signs.
    CHECK(overflows == 2 * (254 - 143 + 1) * 128);
}
