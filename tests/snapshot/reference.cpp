// reference_row: the semantics every snapshot backend must match (docs/snapshot.md, "Exact
// semantics"), checked on hand-built rows and against a brute force (full sort + long-double
// lse).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/snapshot/reference.hpp>

#include "../../lib/snapshot/src/half_bits.hpp"  // the kernel test hooks

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace jsonlw::snapshot;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

float nan_with(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

// A row in an exactly sized heap block, so that ASan reports any read past its end.
struct Row {
    std::unique_ptr<unsigned char[]> bytes;
    LogitDType dtype = LogitDType::f32;
    std::int32_t vocab = 0;
    std::vector<float> widened;  // what the row holds, as exact fp32

    const void* data() const { return bytes.get(); }
};

// Encodes values as dtype. Values must be exactly representable (the tests choose them so);
// the widened copy is taken from the encoded bits by an independent path.
Row make_row(const std::vector<float>& values, LogitDType dtype = LogitDType::f32)
{
    Row r;
    r.dtype = dtype;
    r.vocab = static_cast<std::int32_t>(values.size());
    r.bytes.reset(new unsigned char[std::max<std::size_t>(values.size() * itemsize(dtype), 1)]);
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (dtype == LogitDType::f32) {
            std::memcpy(r.bytes.get() + 4 * i, &values[i], 4);
            r.widened.push_back(values[i]);
        } else if (dtype == LogitDType::bf16) {
            const auto h = static_cast<std::uint16_t>(bits_of(values[i]) >> 16);  // truncation
            std::memcpy(r.bytes.get() + 2 * i, &h, 2);
            r.widened.push_back(std::bit_cast<float>(std::uint32_t{h} << 16));
        } else {
            const std::uint16_t h = f32_to_f16_rne(values[i], nullptr);
            std::memcpy(r.bytes.get() + 2 * i, &h, 2);
            r.widened.push_back(f16_to_f32(h));
        }
    }
    return r;
}

TokenSnapshot run(const Row& r, std::int32_t sampled, int k)
{
    RowScratch scratch;
    TokenSnapshot out{};
    reference_row(r.data(), r.dtype, r.vocab, sampled, k, out, scratch);
    return out;
}

// --- the brute force: full sort of keys, long-double lse, rules spelled out again -------------
struct Expected {
    std::vector<std::int32_t> ids;
    std::vector<float> logits;
    std::vector<long double> logprobs;
    long double lse = 0;
    long double sampled_logprob = 0;
    float sampled_logit = 0;
    std::uint32_t rank = 0, nan_count = 0, posinf_count = 0;
    std::uint16_t status = 0;
    int k = 0;
};

bool is_nan_l(long double v) { return v != v; }

Expected brute_force(const std::vector<float>& x, std::int32_t s, int k)
{
    Expected e;
    const auto V = static_cast<std::int32_t>(x.size());
    e.k = std::clamp(k, 1, 64);
    std::vector<std::uint64_t> keys;
    for (std::int32_t i = 0; i < V; ++i) keys.push_back(order_key(x[i], i));
    std::sort(keys.begin(), keys.end(), std::greater<>{});
    bool any_finite = false;
    long double m = -std::numeric_limits<long double>::infinity();
    for (float v : x) {
        if (std::isnan(v)) ++e.nan_count;
        else if (v == inf) ++e.posinf_count;
        else if (std::isfinite(v)) {
            any_finite = true;
            m = std::max<long double>(m, v);
        }
    }
    if (e.nan_count) {
        e.lse = std::numeric_limits<long double>::quiet_NaN();
        e.status |= flags::has_nan;
    } else if (e.posinf_count) {
        e.lse = std::numeric_limits<long double>::infinity();
        e.status |= flags::has_posinf;
    } else if (!any_finite) {
        e.lse = -std::numeric_limits<long double>::infinity();
        e.status |= flags::fully_masked;
    } else {
        long double sum = 0;
        for (float v : x)
            if (std::isfinite(v)) sum += std::exp(static_cast<long double>(v) - m);
        e.lse = m + std::log(sum);
    }
    const auto lp = [&](float v) -> long double {
        if (e.status & flags::has_nan) return std::numeric_limits<long double>::quiet_NaN();
        if (e.status & flags::has_posinf)
            return v == inf ? std::numeric_limits<long double>::quiet_NaN()
                            : -std::numeric_limits<long double>::infinity();
        if (e.status & flags::fully_masked) return std::numeric_limits<long double>::quiet_NaN();
        if (v == -inf) return -std::numeric_limits<long double>::infinity();
        return static_cast<long double>(v) - e.lse;
    };
    for (int j = 0; j < e.k; ++j) {
        if (j < V) {
            const std::int32_t id = key_id(keys[j]);
            e.ids.push_back(id);
            e.logits.push_back(x[id]);
            e.logprobs.push_back(lp(x[id]));
        } else {
            e.ids.push_back(-1);
            e.logits.push_back(qnan);
            e.logprobs.push_back(std::numeric_limits<long double>::quiet_NaN());
        }
    }
    if (e.k > V) e.status |= flags::k_padded;
    if (s >= 0 && s < V) {
        e.sampled_logit = x[s];
        e.sampled_logprob = lp(x[s]);
        const std::uint64_t ks = order_key(x[s], s);
        e.rank = 1 + static_cast<std::uint32_t>(
                         std::count_if(keys.begin(), keys.end(), [&](auto q) { return q > ks; }));
    } else {
        e.sampled_logit = qnan;
        e.sampled_logprob = std::numeric_limits<long double>::quiet_NaN();
        e.status |= flags::invalid_sampled_id;
    }
    if (!std::isfinite(e.sampled_logprob)) e.status |= flags::sampled_nonfinite;
    return e;
}

// Same class for specials (NaN, same-signed inf); otherwise |got - ref| <= 1e-4 + 1e-5 |ref|.
bool close(float got, long double ref, long double* worst = nullptr)
{
    if (is_nan_l(ref)) return std::isnan(got);
    if (std::isinf(ref)) return std::isinf(got) && (got > 0) == (ref > 0);
    if (!std::isfinite(got)) return false;
    const long double err = std::fabs(static_cast<long double>(got) - ref);
    const long double tolerance = 1e-4L + 1e-5L * std::fabs(ref);
    if (worst) *worst = std::max(*worst, err / tolerance);
    return err <= tolerance;
}

// Everything exact except lse and logprobs, which are within the tolerance; returns a message
// naming the first mismatch (empty when all match).
std::string compare(const TokenSnapshot& got, const Expected& e, std::int32_t sampled,
                    long double* worst = nullptr)
{
    if (got.k != e.k) return "k " + std::to_string(got.k);
    if (got.status_flags != e.status)
        return "flags " + std::to_string(got.status_flags) + " != " + std::to_string(e.status);
    if (got.nan_count != e.nan_count) return "nan_count";
    if (got.posinf_count != e.posinf_count) return "posinf_count";
    if (got.sampled_id != sampled) return "sampled_id";
    if (got.sampled_rank != e.rank)
        return "rank " + std::to_string(got.sampled_rank) + " != " + std::to_string(e.rank);
    if (bits_of(got.sampled_logit) != bits_of(e.sampled_logit) &&
        !(std::isnan(got.sampled_logit) && std::isnan(e.sampled_logit)))
        return "sampled_logit";
    if (!close(got.sampled_logprob, e.sampled_logprob, worst)) return "sampled_logprob";
    if (!close(got.lse, e.lse, worst)) return "lse " + std::to_string(got.lse);
    for (int j = 0; j < e.k; ++j) {
        const std::string at = "[" + std::to_string(j) + "]";
        if (got.topk_ids[j] != e.ids[j])
            return "id" + at + " " + std::to_string(got.topk_ids[j]) + " != " + std::to_string(e.ids[j]);
        if (e.ids[j] >= 0 && bits_of(got.topk_logits[j]) != bits_of(e.logits[j])) return "logit" + at;
        if (e.ids[j] < 0 && !std::isnan(got.topk_logits[j])) return "padded logit" + at;
        if (!close(got.topk_logprobs[j], e.logprobs[j], worst)) return "logprob" + at;
    }
    return {};
}

void check_against_brute_force(const Row& r, std::int32_t sampled, int k)
{
    INFO("V=" << r.vocab << " k=" << k << " sampled=" << sampled << " dtype=" << dtype_name(r.dtype));
    const TokenSnapshot got = run(r, sampled, k);
    CHECK(compare(got, brute_force(r.widened, sampled, k), sampled) == "");
}

}  // namespace

// --- 1. basics -----------------------------------------------------------------------------

TEST_CASE("a uniform row has lse ln V and every logprob -ln V", "[snapshot][reference]")
{
    for (const std::int32_t V : {1, 7, 64, 1000, 32000}) {
        const Row r = make_row(std::vector<float>(V, 0.25f));
        const TokenSnapshot s = run(r, V / 2, 20);
        INFO("V=" << V);
        CHECK(s.lse == Approx(0.25 + std::log(static_cast<double>(V))).epsilon(1e-6));
        const int n = std::min(V, 20);
        for (int j = 0; j < n; ++j)
            CHECK(s.topk_logprobs[j] == Approx(-std::log(static_cast<double>(V))).margin(1e-6));
        CHECK(s.sampled_logprob == Approx(-std::log(static_cast<double>(V))).margin(1e-6));
        CHECK(s.nan_count == 0);
        CHECK(s.posinf_count == 0);
    }
}

TEST_CASE("a single dominant logit is first with logprob near zero", "[snapshot][reference]")
{
    std::vector<float> x(5000, -3.0f);
    x[4321] = 40.0f;
    const Row r = make_row(x);
    const TokenSnapshot s = run(r, 4321, 5);
    CHECK(s.topk_ids[0] == 4321);
    CHECK(s.topk_logits[0] == 40.0f);
    CHECK(s.topk_logprobs[0] == Approx(0.0).margin(1e-12));
    CHECK(s.lse == Approx(40.0));
    CHECK(s.sampled_rank == 1);
    CHECK(s.sampled_logit == 40.0f);
    for (int j = 1; j < 5; ++j) {
        CHECK(s.topk_ids[j] == j - 1);  // the equal rest tie to the smallest ids
        CHECK(s.topk_logprobs[j] == Approx(-43.0).epsilon(1e-6));
    }
    CHECK(s.status_flags == 0);
}

TEST_CASE("a row of one logit has logprob zero and rank one", "[snapshot][reference]")
{
    const Row r = make_row({-2.5f});
    const TokenSnapshot s = run(r, 0, 20);
    CHECK(s.k == 20);
    CHECK(s.topk_ids[0] == 0);
    CHECK(s.topk_logits[0] == -2.5f);
    CHECK(s.topk_logprobs[0] == 0.0f);
    CHECK(s.lse == -2.5f);
    CHECK(s.sampled_rank == 1);
    CHECK(s.sampled_logprob == 0.0f);
    CHECK(s.status_flags == flags::k_padded);
    for (int j = 1; j < 20; ++j) CHECK(s.topk_ids[j] == -1);
}

TEST_CASE("k larger than the vocab pads the tail with id -1 and NaN and sets k_padded",
          "[snapshot][reference]")
{
    const Row r = make_row({1.0f, 3.0f, 2.0f});
    const TokenSnapshot s = run(r, 2, 64);
    CHECK(s.k == 64);
    CHECK((s.status_flags & flags::k_padded) != 0);
    CHECK(s.topk_ids[0] == 1);
    CHECK(s.topk_ids[1] == 2);
    CHECK(s.topk_ids[2] == 0);
    for (int j = 3; j < 64; ++j) {
        CHECK(s.topk_ids[j] == -1);
        CHECK(std::isnan(s.topk_logits[j]));
        CHECK(std::isnan(s.topk_logprobs[j]));
    }
    CHECK(s.sampled_rank == 2);
    check_against_brute_force(r, 2, 64);
}

TEST_CASE("k is clamped to 1..64 and k = 1, 20, 64 match the brute force",
          "[snapshot][reference]")
{
    std::mt19937_64 rng(11);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> x(3000);
    for (auto& v : x) v = nd(rng);
    const Row r = make_row(x);
    for (const int k : {1, 20, 64}) check_against_brute_force(r, 1234, k);
    CHECK(run(r, 0, 0).k == 1);
    CHECK(run(r, 0, -5).k == 1);
    CHECK(run(r, 0, 65).k == 64);
    CHECK(run(r, 0, 1000).k == 64);
    CHECK(run(r, 0, 0).topk_ids[0] == run(r, 0, 1).topk_ids[0]);
}

TEST_CASE("an empty row is fully masked and every sampled id is invalid", "[snapshot][reference]")
{
    const Row r = make_row({});
    const TokenSnapshot s = run(r, 0, 3);
    CHECK(s.k == 3);
    CHECK(s.lse == -inf);
    CHECK(s.status_flags ==
          (flags::fully_masked | flags::k_padded | flags::invalid_sampled_id | flags::sampled_nonfinite));
    CHECK(s.topk_ids[0] == -1);
}

// --- 2. ties -------------------------------------------------------------------------------

TEST_CASE("an all-equal row gives ids 0..k-1 and rank 1 + the number of smaller ids",
          "[snapshot][reference]")
{
    const Row r = make_row(std::vector<float>(1000, 1.5f));
    for (const std::int32_t s : {0, 1, 19, 20, 500, 999}) {
        const TokenSnapshot out = run(r, s, 20);
        for (int j = 0; j < 20; ++j) CHECK(out.topk_ids[j] == j);
        CHECK(out.sampled_rank == static_cast<std::uint32_t>(s) + 1);
    }
}

TEST_CASE("ties straddling the k boundary go to the smaller ids", "[snapshot][reference]")
{
    // Three values above, then seven equal values spanning the boundary at k = 5, spread so
    // that they land in different 64-element blocks.
    std::vector<float> x(700, -1.0f);
    x[650] = 9.0f;
    x[5] = 8.0f;
    x[333] = 7.0f;
    for (const int i : {699, 10, 400, 64, 128, 63, 300}) x[i] = 2.0f;
    const Row r = make_row(x);
    const TokenSnapshot s = run(r, 128, 5);
    const std::int32_t want[] = {650, 5, 333, 10, 63};
    for (int j = 0; j < 5; ++j) CHECK(s.topk_ids[j] == want[j]);
    CHECK(s.sampled_rank == 7);  // 3 larger, then the equal 10, 63, 64 before 128
    check_against_brute_force(r, 128, 5);
    check_against_brute_force(r, 699, 64);
}

TEST_CASE("-0.0 and +0.0 are equal and tie by id", "[snapshot][reference]")
{
    const Row r = make_row({-1.0f, 0.0f, -0.0f, -0.0f, 0.0f, -2.0f});
    const TokenSnapshot s = run(r, 3, 6);
    const std::int32_t want[] = {1, 2, 3, 4, 0, 5};
    for (int j = 0; j < 6; ++j) CHECK(s.topk_ids[j] == want[j]);
    CHECK(std::signbit(s.topk_logits[1]));  // the logit keeps its own bits
    CHECK(!std::signbit(s.topk_logits[0]));
    CHECK(s.sampled_rank == 3);
    CHECK(s.topk_logprobs[0] == s.topk_logprobs[1]);
}

TEST_CASE("quantized rows of {0, 0.5, 1} match the brute force", "[snapshot][reference]")
{
    std::mt19937_64 rng(5);
    std::uniform_int_distribution<int> q(0, 2);
    for (const LogitDType dt : {LogitDType::f32, LogitDType::f16, LogitDType::bf16}) {
        for (const std::int32_t V : {1, 31, 200, 4097}) {
            std::vector<float> x(V);
            for (auto& v : x) v = 0.5f * static_cast<float>(q(rng));
            const Row r = make_row(x, dt);
            for (const int k : {1, 20, 64})
                for (const std::int32_t s : {0, V / 3, V - 1}) check_against_brute_force(r, s, k);
        }
    }
}

// --- 3. specials ---------------------------------------------------------------------------

TEST_CASE("one NaN makes lse and every logprob NaN and ranks above everything",
          "[snapshot][reference]")
{
    std::vector<float> x = {1.0f, inf, 3.0f, qnan, -inf, 2.0f};
    const Row r = make_row(x);
    const TokenSnapshot s = run(r, 1, 4);
    CHECK(std::isnan(s.lse));
    CHECK(s.nan_count == 1);
    CHECK(s.posinf_count == 1);
    CHECK(s.status_flags == (flags::has_nan | flags::sampled_nonfinite));
    CHECK(s.topk_ids[0] == 3);
    CHECK(s.topk_ids[1] == 1);
    CHECK(s.topk_ids[2] == 2);
    CHECK(s.topk_ids[3] == 5);
    for (int j = 0; j < 4; ++j) CHECK(std::isnan(s.topk_logprobs[j]));
    CHECK(s.sampled_rank == 2);
    CHECK(s.sampled_logit == inf);
    CHECK(std::isnan(s.sampled_logprob));
    check_against_brute_force(r, 1, 4);
}

TEST_CASE("NaNs of any payload and sign rank above +inf and tie by id, bits kept",
          "[snapshot][reference]")
{
    const std::uint32_t payloads[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, 0x7fffffffu};
    std::vector<float> x(300, 0.0f);
    x[7] = inf;
    const int at[] = {250, 3, 128, 64, 299};
    for (int i = 0; i < 5; ++i) x[at[i]] = nan_with(payloads[i]);
    const Row r = make_row(x);
    const TokenSnapshot s = run(r, 128, 8);
    const std::int32_t want[] = {3, 64, 128, 250, 299, 7, 0, 1};
    for (int j = 0; j < 8; ++j) CHECK(s.topk_ids[j] == want[j]);
    CHECK(bits_of(s.topk_logits[0]) == 0xffc00000u);
    CHECK(bits_of(s.topk_logits[1]) == 0xff812345u);  // signaling payload not quieted
    CHECK(bits_of(s.topk_logits[2]) == 0x7f800001u);
    CHECK(s.nan_count == 5);
    CHECK(s.posinf_count == 1);
    CHECK(s.sampled_rank == 3);
    CHECK(bits_of(s.sampled_logit) == 0x7f800001u);
    CHECK((s.status_flags & flags::sampled_nonfinite) != 0);
    check_against_brute_force(r, 128, 8);
}

TEST_CASE("NaN payloads in fp16 and bf16 rows widen with their bits", "[snapshot][reference]")
{
    const std::uint16_t h[] = {0x3c00, 0x7f81, 0xffc0};  // NaN as fp16 and as bf16, but the first
    auto row = std::make_unique<unsigned char[]>(6);
    std::memcpy(row.get(), h, 6);
    RowScratch scratch;
    TokenSnapshot s{};
    reference_row(row.get(), LogitDType::f16, 3, 0, 3, s, scratch);
    CHECK(s.nan_count == 2);
    CHECK(s.topk_ids[0] == 1);
    CHECK(bits_of(s.topk_logits[0]) == 0x7ff02000u);  // fp16 sNaN payload 0x381, not quieted
    CHECK(bits_of(s.topk_logits[1]) == 0xfff80000u);
    CHECK(s.topk_logits[2] == 1.0f);
    reference_row(row.get(), LogitDType::bf16, 3, 0, 3, s, scratch);
    CHECK(s.nan_count == 2);
    CHECK(bits_of(s.topk_logits[0]) == 0x7f810000u);
    CHECK(bits_of(s.topk_logits[1]) == 0xffc00000u);
    CHECK(s.topk_logits[2] == 0.0078125f);
}

TEST_CASE("+inf without NaN gives lse +inf, NaN logprob for +inf and -inf for the rest",
          "[snapshot][reference]")
{
    const Row r = make_row({5.0f, inf, -inf, inf, 1e30f});
    const TokenSnapshot s = run(r, 4, 5);
    CHECK(s.lse == inf);
    CHECK(s.status_flags == (flags::has_posinf | flags::sampled_nonfinite));
    CHECK(s.posinf_count == 2);
    CHECK(s.topk_ids[0] == 1);
    CHECK(s.topk_ids[1] == 3);
    CHECK(std::isnan(s.topk_logprobs[0]));
    CHECK(std::isnan(s.topk_logprobs[1]));
    CHECK(s.topk_logprobs[2] == -inf);  // 1e30
    CHECK(s.topk_logprobs[4] == -inf);  // -inf
    CHECK(s.sampled_logprob == -inf);
    CHECK(s.sampled_rank == 3);
    check_against_brute_force(r, 4, 5);
}

TEST_CASE("-inf entries are masked out of lse and get logprob -inf", "[snapshot][reference]")
{
    std::vector<float> x(1000, -inf);
    x[10] = 0.0f;
    x[900] = 0.0f;
    const Row r = make_row(x);
    const TokenSnapshot s = run(r, 500, 3);
    CHECK(s.lse == Approx(std::log(2.0)));
    CHECK(s.topk_ids[0] == 10);
    CHECK(s.topk_ids[1] == 900);
    CHECK(s.topk_ids[2] == 0);
    CHECK(s.topk_logprobs[2] == -inf);
    CHECK(s.sampled_logprob == -inf);
    CHECK(s.sampled_rank == 3 + 499);  // two zeros, then the -infs 0..499 but 10
    CHECK(s.status_flags == flags::sampled_nonfinite);
    check_against_brute_force(r, 500, 3);
}

TEST_CASE("an all -inf row is fully masked with lse -inf and NaN logprobs",
          "[snapshot][reference]")
{
    for (const LogitDType dt : {LogitDType::f32, LogitDType::f16, LogitDType::bf16}) {
        const Row r = make_row(std::vector<float>(130, -inf), dt);
        const TokenSnapshot s = run(r, 129, 4);
        CHECK(s.lse == -inf);
        CHECK(s.status_flags == (flags::fully_masked | flags::sampled_nonfinite));
        for (int j = 0; j < 4; ++j) {
            CHECK(s.topk_ids[j] == j);
            CHECK(s.topk_logits[j] == -inf);
            CHECK(std::isnan(s.topk_logprobs[j]));
        }
        CHECK(s.sampled_rank == 130);
        CHECK(std::isnan(s.sampled_logprob));
    }
}

TEST_CASE("a sampled NaN token has a NaN logprob and its rank among the NaNs",
          "[snapshot][reference]")
{
    const Row r = make_row({qnan, 2.0f, qnan, qnan, 1.0f});
    const TokenSnapshot s = run(r, 2, 2);
    CHECK(std::isnan(s.sampled_logit));
    CHECK(std::isnan(s.sampled_logprob));
    CHECK(s.sampled_rank == 2);
    CHECK(s.nan_count == 3);
    CHECK(s.status_flags == (flags::has_nan | flags::sampled_nonfinite));
}

TEST_CASE("an out-of-range sampled id is flagged and never read", "[snapshot][reference]")
{
    // Exactly sized heap rows: under ASan a read at vocab or at -1 is a reported error.
    for (const LogitDType dt : {LogitDType::f32, LogitDType::f16, LogitDType::bf16}) {
        for (const std::int32_t V : {1, 3, 64, 67}) {
            std::vector<float> x(V);
            for (std::int32_t i = 0; i < V; ++i) x[i] = static_cast<float>(i % 5);
            const Row r = make_row(x, dt);
            for (const std::int32_t bad : {-1, V, V + 1, std::numeric_limits<std::int32_t>::max(),
                                           std::numeric_limits<std::int32_t>::min()}) {
                INFO("V=" << V << " sampled=" << bad);
                const TokenSnapshot s = run(r, bad, 20);
                CHECK(s.sampled_id == bad);
                CHECK(s.sampled_rank == 0);
                CHECK(std::isnan(s.sampled_logit));
                CHECK(std::isnan(s.sampled_logprob));
                CHECK((s.status_flags & flags::invalid_sampled_id) != 0);
                CHECK((s.status_flags & flags::sampled_nonfinite) != 0);
                check_against_brute_force(r, bad, 20);
            }
        }
    }
}

// --- 5. seeded property tests --------------------------------------------------------------

namespace {

enum class Dist { Normal1, Normal5, Gumbel, Cauchy, Big };

const char* dist_name(Dist d)
{
    switch (d) {
    case Dist::Normal1: return "normal(1)";
    case Dist::Normal5: return "normal(5)";
    case Dist::Gumbel: return "gumbel";
    case Dist::Cauchy: return "cauchy";
    case Dist::Big: return "1e4 magnitudes";
    }
    return "";
}

std::vector<float> random_row(std::mt19937_64& rng, Dist d, std::int32_t V)
{
    std::vector<float> x(V);
    std::normal_distribution<double> n1(0, 1), n5(0, 5);
    std::extreme_value_distribution<double> gumbel(0, 1);
    std::cauchy_distribution<double> cauchy(0, 1);
    std::uniform_real_distribution<double> big(-1e4, 1e4);
    for (auto& v : x) {
        double y = 0;
        switch (d) {
        case Dist::Normal1: y = n1(rng); break;
        case Dist::Normal5: y = n5(rng); break;
        case Dist::Gumbel: y = gumbel(rng); break;
        case Dist::Cauchy: y = std::clamp(cauchy(rng), -6e4, 6e4); break;  // fp16 range
        case Dist::Big: y = big(rng); break;
        }
        v = static_cast<float>(y);
    }
    return x;
}

// |got - ref| in units of the fp32 ulp of ref rounded to float.
long double lse_ulps(float got, long double ref)
{
    const float r = static_cast<float>(ref);
    const long double ulp = std::nextafter(std::fabs(r), inf) - std::fabs(r);
    return std::fabs(static_cast<long double>(got) - ref) / ulp;
}

// Runs the property rows (every distribution, dtype and vocab below, k = 1, 20, 64) through
// reference_row and `check`.
template <class Check>
void for_each_property_row(Check&& check)
{
    std::uint64_t seed = 1000;
    for (const Dist d : {Dist::Normal1, Dist::Normal5, Dist::Gumbel, Dist::Cauchy, Dist::Big}) {
        for (const LogitDType dt : {LogitDType::f32, LogitDType::f16, LogitDType::bf16}) {
            for (const std::int32_t V : {1, 31, 1000, 4097, 32000}) {
                std::mt19937_64 rng(++seed);
                const Row r = make_row(random_row(rng, d, V), dt);
                std::uniform_int_distribution<std::int32_t> pick(0, V - 1);
                for (const int k : {1, 20, 64}) {
                    const std::int32_t s = pick(rng);
                    INFO(dist_name(d) << " " << dtype_name(dt) << " V=" << V << " k=" << k
                                      << " sampled=" << s << " seed=" << seed);
                    check(r, s, k);
                }
            }
        }
    }
}

// Forces the portable kernels for its lifetime.
struct PortableKernels {
    PortableKernels() { detail::force_portable_row_kernels(true); }
    ~PortableKernels() { detail::force_portable_row_kernels(false); }
    PortableKernels(const PortableKernels&) = delete;
    PortableKernels& operator=(const PortableKernels&) = delete;
};

}  // namespace

TEST_CASE("seeded random rows match the brute force for every dtype, vocab and k",
          "[snapshot][reference][property]")
{
    // The GPU tolerance for everything, and for the lse a bound the CPU must meet on its own:
    // 4 fp32 ulps of the long-double value (the fp32 exp terms are within 2 ulps each, summed
    // in double).
    long double worst = 0, worst_ulps = 0;
    int rows = 0;
    for_each_property_row([&](const Row& r, std::int32_t s, int k) {
        const TokenSnapshot got = run(r, s, k);
        const Expected e = brute_force(r.widened, s, k);
        CHECK(compare(got, e, s, &worst) == "");
        if (std::isfinite(static_cast<double>(e.lse))) {
            const long double ulps = lse_ulps(got.lse, e.lse);
            CHECK(ulps <= 4);
            worst_ulps = std::max(worst_ulps, ulps);
        }
        ++rows;
    });
    WARN("largest lse/logprob error vs long double over " << rows << " rows: "
         << static_cast<double>(worst) << " of the tolerance 1e-4 + 1e-5 |ref|; largest lse error "
         << static_cast<double>(worst_ulps) << " fp32 ulps");
}

TEST_CASE("the portable kernels match the brute force and, bit for bit, the AVX2 ones",
          "[snapshot][reference][property]")
{
    // On a CPU without AVX2 both runs use the portable kernels and the comparison is trivial;
    // the brute-force check still covers them.
    if (!detail::wide_row_kernels_available())
        WARN("no AVX2 here: only the portable kernels are exercised");
    const auto both = [](const Row& r, std::int32_t s, int k) {
        const TokenSnapshot wide = run(r, s, k);
        TokenSnapshot portable{};
        {
            const PortableKernels force;
            portable = run(r, s, k);
        }
        CHECK(std::memcmp(&wide, &portable, sizeof wide) == 0);
        return portable;
    };
    for_each_property_row([&](const Row& r, std::int32_t s, int k) {
        const TokenSnapshot portable = both(r, s, k);
        CHECK(compare(portable, brute_force(r.widened, s, k), s) == "");
    });
    // Special rows, lengths around the block and lane sizes, a sampled id in every position
    // relative to a block, and a wide row.
    std::mt19937_64 rng(19);
    for (const std::int32_t V : {1, 7, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 152064}) {
        std::vector<float> x = random_row(rng, Dist::Normal5, V);
        for (const LogitDType dt : {LogitDType::f32, LogitDType::f16, LogitDType::bf16}) {
            INFO("V=" << V << " " << dtype_name(dt));
            const Row plain = make_row(x, dt);
            for (const std::int32_t s :
                 {0, V / 2, V - 1, std::min(V - 1, 63), std::min(V - 1, 64), -1})
                both(plain, s, 20);
            std::vector<float> y = x;
            y[V / 3] = -inf;
            y[V - 1] = -inf;
            both(make_row(y, dt), V / 3, 64);
            y[V / 2] = inf;
            both(make_row(y, dt), V / 2, 5);
            y[0] = qnan;
            both(make_row(y, dt), 0, 5);
            both(make_row(std::vector<float>(V, -inf), dt), V - 1, 3);
        }
    }
}

TEST_CASE("a row ascending by id (every element enters the heap) matches the brute force",
          "[snapshot][reference][property]")
{
    std::vector<float> x(5000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.01f;
    const Row r = make_row(x);
    for (const int k : {1, 20, 64}) check_against_brute_force(r, 4999, k);
    std::reverse(x.begin(), x.end());
    for (const int k : {1, 20, 64}) check_against_brute_force(make_row(x), 0, k);
}

TEST_CASE("the lse of a wide row matches a long-double sum closely", "[snapshot][reference]")
{
    // Tighter than the GPU tolerance: the CPU's fp32 terms are within 2 fp32 ulps each and
    // summed in double, so its lse is within a couple of fp32 ulps of the exact value.
    std::mt19937_64 rng(77);
    const Row r = make_row(random_row(rng, Dist::Normal5, 152064));
    const TokenSnapshot got = run(r, 5, 20);
    const Expected e = brute_force(r.widened, 5, 20);
    CHECK(lse_ulps(got.lse, e.lse) <= 2);
    CHECK(compare(got, e, 5) == "");
}

TEST_CASE("reference_row results do not depend on the scratch or on earlier rows",
          "[snapshot][reference]")
{
    std::mt19937_64 rng(3);
    const Row big = make_row(random_row(rng, Dist::Gumbel, 20000));
    const Row small = make_row(random_row(rng, Dist::Normal1, 100));
    RowScratch scratch;
    TokenSnapshot a{}, b{}, c{};
    reference_row(small.data(), small.dtype, small.vocab, 3, 20, a, scratch);
    reference_row(big.data(), big.dtype, big.vocab, 3, 20, b, scratch);
    reference_row(small.data(), small.dtype, small.vocab, 3, 20, c, scratch);
    CHECK(std::memcmp(&a, &c, sizeof a) == 0);
}
