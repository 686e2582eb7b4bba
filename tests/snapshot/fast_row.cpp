// fast_row against reference_row, every SIMD path forced in turn (docs/snapshot.md, "CPU
// paths"): ids, ranks, top-k logits, counts and flags bit for bit; lse and logprobs within
// fast_row_tolerance, whose worst case is checked on the rows built to reach it. A path this CPU
// lacks is skipped with a warning.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/snapshot/fast_row.hpp>

#include <jsonlw/snapshot/reference.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace jsonlw::snapshot;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
constexpr CpuRowPath fast_paths[] = {CpuRowPath::avx512, CpuRowPath::avx2, CpuRowPath::scalar};

// A row in an exactly sized heap block (ASan reports a read past its end), `offset` elements
// after the block's start so that the vectors straddle their alignment.
struct Row {
    std::unique_ptr<unsigned char[]> bytes;
    LogitDType dtype = LogitDType::f32;
    std::int32_t vocab = 0;
    int offset = 0;

    const void* data() const { return bytes.get() + std::size_t(offset) * itemsize(dtype); }
};

std::uint16_t to_half(float x, LogitDType dt)
{
    if (dt == LogitDType::bf16) return std::uint16_t(std::bit_cast<std::uint32_t>(x) >> 16);
    return f32_to_f16_rne(x, nullptr);
}

Row make_row(const std::vector<float>& xs, LogitDType dt, int offset = 0)
{
    Row r;
    r.dtype = dt;
    r.vocab = std::int32_t(xs.size());
    r.offset = offset;
    const std::size_t size = itemsize(dt);
    r.bytes.reset(new unsigned char[(xs.size() + std::size_t(offset)) * size]);
    std::memset(r.bytes.get(), 0x5a, std::size_t(offset) * size);
    unsigned char* p = r.bytes.get() + std::size_t(offset) * size;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (dt == LogitDType::f32) {
            std::memcpy(p + 4 * i, &xs[i], 4);
        } else {
            const std::uint16_t h = to_half(xs[i], dt);
            std::memcpy(p + 2 * i, &h, 2);
        }
    }
    return r;
}

bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

// The largest |fast - ref| / (abs + rel |ref|) seen: <= 1 is within the tolerance.
struct Worst {
    double share = 0;
    void see(float fast, float ref)
    {
        if (!std::isfinite(fast) || !std::isfinite(ref)) return;
        const FastRowTolerance& t = fast_row_tolerance;
        share = std::max(share, std::fabs(double(fast) - double(ref)) /
                                    (t.abs + t.rel * std::fabs(double(ref))));
    }
};

// "" when `got` matches `want` as the contract says, else the first difference.
std::string compare(const TokenSnapshot& got, const TokenSnapshot& want, Worst& worst)
{
    std::ostringstream why;
    const FastRowTolerance& tol = fast_row_tolerance;
    if (got.sampled_id != want.sampled_id) why << "sampled_id ";
    if (!same_bits(got.sampled_logit, want.sampled_logit)) why << "sampled_logit ";
    if (got.sampled_rank != want.sampled_rank)
        why << "sampled_rank " << got.sampled_rank << " != " << want.sampled_rank << " ";
    if (got.nan_count != want.nan_count) why << "nan_count ";
    if (got.posinf_count != want.posinf_count) why << "posinf_count ";
    if (got.status_flags != want.status_flags)
        why << "status_flags " << got.status_flags << " != " << want.status_flags << " ";
    if (got.k != want.k) why << "k ";
    if (!tol.within(got.lse, want.lse)) why << "lse " << got.lse << " vs " << want.lse << " ";
    if (!tol.within(got.sampled_logprob, want.sampled_logprob))
        why << "sampled_logprob " << got.sampled_logprob << " vs " << want.sampled_logprob << " ";
    worst.see(got.lse, want.lse);
    worst.see(got.sampled_logprob, want.sampled_logprob);
    for (int i = 0; i < want.k && i < SnapshotConfig::max_k; ++i) {
        if (got.topk_ids[i] != want.topk_ids[i])
            why << "topk_ids[" << i << "] " << got.topk_ids[i] << " != " << want.topk_ids[i] << " ";
        if (!same_bits(got.topk_logits[i], want.topk_logits[i])) why << "topk_logits[" << i << "] ";
        if (!tol.within(got.topk_logprobs[i], want.topk_logprobs[i]))
            why << "topk_logprobs[" << i << "] ";
        worst.see(got.topk_logprobs[i], want.topk_logprobs[i]);
    }
    return why.str();
}

// Every path this CPU has, with a warning for each it lacks (once per test case).
std::vector<CpuRowPath> runnable_paths()
{
    std::vector<CpuRowPath> out;
    for (const CpuRowPath p : fast_paths) {
        if (cpu_row_path_supported(p)) out.push_back(p);
        else WARN("this CPU lacks " << cpu_row_path_name(p) << ": its fast_row path is not tested");
    }
    return out;
}

// Runs of a path that its kernel computed (not handed to the oracle), and all runs.
int kernel_rows = 0, path_rows = 0;

// Runs the row through the oracle and every path; returns the rows that differed.
int check_row(const Row& r, std::int32_t sampled, int k, const std::vector<CpuRowPath>& paths,
              Worst& worst)
{
    RowScratch scratch;
    TokenSnapshot want{};
    reference_row(r.data(), r.dtype, r.vocab, sampled, k, want, scratch);
    int bad = 0;
    for (const CpuRowPath p : paths) {
        TokenSnapshot got{};
        // Nothing left over from the oracle's run.
        std::memset(static_cast<void*>(&got), 0xa5, sizeof got);
        kernel_rows += fast_row(r.data(), r.dtype, r.vocab, sampled, k, got, scratch, p);
        ++path_rows;
        const std::string why = compare(got, want, worst);
        if (!why.empty()) {
            ++bad;
            FAIL_CHECK(cpu_row_path_name(p) << " " << dtype_name(r.dtype) << " V=" << r.vocab
                                            << " k=" << k << " sampled=" << sampled << ": " << why);
        }
    }
    return bad;
}

// What each case checks rows with (a Catch2 fixture): the paths this CPU runs, and the worst
// lse/logprob difference seen, as a share of the tolerance.
struct RowCheck {
    const std::vector<CpuRowPath> paths = runnable_paths();
    Worst worst;

    // check_row() over `paths`; returns the rows that differed.
    int check(const Row& r, std::int32_t sampled, int k)
    {
        return check_row(r, sampled, k, paths, worst);
    }
};

const LogitDType all_dtypes[] = {LogitDType::f32, LogitDType::f16, LogitDType::bf16};

std::vector<float> normal_row(std::mt19937_64& rng, std::int32_t V, float sigma)
{
    std::normal_distribution<float> d(0.f, sigma);
    std::vector<float> xs(static_cast<std::size_t>(V));
    for (float& x : xs) x = d(rng);
    return xs;
}

}  // namespace

TEST_CASE_METHOD(RowCheck,
                 "fast_row matches reference_row on random rows of every dtype, vocab and k",
                 "[snapshot][fast_row]")
{
    int rows = 0;
    kernel_rows = path_rows = 0;
    std::uint64_t seed = 27;
    const std::int32_t vocabs[] = {1,    2,    3,    7,    15,   16,    17,    31,    33,
                                   100,  1023, 1024, 1025, 2049, 4097, 32000, 65537, 152064};
    for (const std::int32_t V : vocabs) {
        for (const LogitDType dt : all_dtypes) {
            std::mt19937_64 rng(++seed);
            // sigma 3: typical logits; 0.05: bf16 and fp16 rounding makes many ties.
            for (const float sigma : {3.0f, 0.05f}) {
                const Row r = make_row(normal_row(rng, V, sigma), dt, int(rng() % 4));
                for (const int k : {1, 20, 64}) {
                    const std::int32_t s = std::int32_t(rng() % std::uint64_t(V));
                    INFO("seed " << seed << " sigma " << sigma);
                    check(r, s, k);
                    ++rows;
                }
            }
        }
    }
    INFO("worst lse/logprob difference: " << worst.share << " of the tolerance over " << rows
                                          << " rows");
    CHECK(worst.share <= 1.0);
    // Every random row is plain (finite, at least k logits): no fallback.
    CHECK(kernel_rows == path_rows);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row matches reference_row on the largest vocabulary, several seeds",
                 "[snapshot][fast_row]")
{
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
        std::mt19937_64 rng(seed);
        const LogitDType dt = all_dtypes[seed % 3];
        const Row r = make_row(normal_row(rng, 262144, 4.0f), dt, int(seed));
        check(r, std::int32_t(rng() % 262144u), SnapshotConfig::max_k);
        check(r, 262143, 1);
    }
    CHECK(worst.share <= 1.0);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row: ties go to the smaller id, in the top-k and in the rank",
                 "[snapshot][fast_row]")
{
    for (const LogitDType dt : all_dtypes) {
        for (const std::int32_t V : {5, 64, 1000, 3000}) {
            // A few distinct values, -0 and +0 among them.
            std::vector<float> xs(static_cast<std::size_t>(V));
            for (std::int32_t i = 0; i < V; ++i) {
                const int c = int((std::uint32_t(i) * 2654435761u) >> 29);  // 0..7
                xs[std::size_t(i)] = c == 0 ? -0.0f : c == 1 ? 0.0f : float(c % 4) - 1.5f;
            }
            const Row r = make_row(xs, dt, 1);
            for (const std::int32_t s : {0, 1, V / 2, V - 1})
                for (const int k : {1, 20, 64}) check(r, s, k);
        }
    }
    CHECK(worst.share <= 1.0);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row: all-equal rows, up to the largest vocabulary", "[snapshot][fast_row]")
{
    for (const LogitDType dt : all_dtypes) {
        for (const std::int32_t V : {1, 17, 1024, 99999, 262144}) {
            for (const float v : {0.0f, -0.0f, 1.5f, -7.25f, 30000.0f}) {
                const Row r = make_row(std::vector<float>(std::size_t(V), v), dt);
                check(r, V / 3, 64);
                check(r, V - 1, 3);
            }
        }
    }
    CHECK(worst.share <= 1.0);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row: NaN, +inf and -inf rows come out exactly as the oracle's",
                 "[snapshot][fast_row]")
{
    for (const LogitDType dt : all_dtypes) {
        for (const std::int32_t V : {1, 9, 40, 1500, 5000}) {
            std::mt19937_64 rng(std::uint64_t(V) * 3 + std::uint64_t(dt));
            const std::vector<float> base = normal_row(rng, V, 2.0f);
            const std::int32_t where[] = {0, V / 2, V - 1, std::min(V - 1, 1023),
                                          std::min(V - 1, 1024)};
            for (const std::int32_t at : where) {
                for (const float special : {qnan, -qnan, inf, -inf}) {
                    std::vector<float> xs = base;
                    xs[std::size_t(at)] = special;
                    const Row r = make_row(xs, dt, 3);
                    const int before = kernel_rows;
                    for (const std::int32_t s : {0, at, V - 1}) check(r, s, 20);
                    // NaN and +inf rows are the oracle's; one -inf does not stop the kernel.
                    if (!(special == -inf) || V < 20) CHECK(kernel_rows == before);
                    else CHECK(kernel_rows == before + 3 * int(paths.size()));
                }
            }
            // A single finite logit among -inf (a masked row), and among +inf.
            for (const float fill : {-inf, inf}) {
                std::vector<float> xs(static_cast<std::size_t>(V), fill);
                xs[std::size_t(V / 2)] = 0.75f;
                const Row r = make_row(xs, dt);
                check(r, V / 2, 1);
                check(r, 0, 20);
            }
            // All -inf; all +inf; all NaN.
            for (const float fill : {-inf, inf, qnan}) {
                const Row r = make_row(std::vector<float>(std::size_t(V), fill), dt);
                check(r, V - 1, 20);
            }
            // Half the row masked: more than k finite logits, so the fast path keeps it.
            std::vector<float> xs = base;
            for (std::int32_t i = 0; i < V; i += 2) xs[std::size_t(i)] = -inf;
            const Row r = make_row(xs, dt, 2);
            const int before = kernel_rows;
            for (const std::int32_t s : {0, 1, V - 1}) check(r, s, 20);
            if (V >= 1500) CHECK(kernel_rows == before + 3 * int(paths.size()));
        }
    }
    CHECK(worst.share <= 1.0);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row: a max that climbs past the running offset, and masked leading blocks",
                 "[snapshot][fast_row]")
{
    for (const LogitDType dt : all_dtypes) {
        const std::int32_t V = 20000;
        std::vector<float> up(static_cast<std::size_t>(V)), down(up), jump(up),
            late(static_cast<std::size_t>(V), -inf);
        for (std::int32_t i = 0; i < V; ++i) {
            up[std::size_t(i)] = -200.0f + 0.02f * float(i);  // max rises 20 per block
            down[std::size_t(i)] = 150.0f - 0.02f * float(i);
            jump[std::size_t(i)] = i < 3000 ? -1000.0f + float(i % 7) : float(i % 11);
            if (i >= 5000) late[std::size_t(i)] = float(i % 13) - 6.0f;
        }
        for (const auto* xs : {&up, &down, &jump, &late}) {
            const Row r = make_row(*xs, dt, 1);
            for (const std::int32_t s : {0, 2500, 5000, V - 1}) check(r, s, 64);
        }
    }
    CHECK(worst.share <= 1.0);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row: extreme magnitudes and the tolerance's worst cases", "[snapshot][fast_row]")
{
    std::mt19937_64 rng(99);
    // fp32 only: the extremes of the widest type.
    std::vector<float> big(70000);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : big) x = u(rng) * 3e38f;
    check(make_row(big, LogitDType::f32), 5, 20);
    // Every term e^-1 but the max's: the fp32 lane sums round at every add.
    for (const std::int32_t V : {65536, 262144}) {
        std::vector<float> xs(static_cast<std::size_t>(V), -1.0f);
        xs[7] = 0.0f;
        for (const LogitDType dt : all_dtypes) check(make_row(xs, dt), 7, 20);
    }
    // Terms spread over e^-20 .. e^0, the largest vocabulary.
    std::vector<float> spread(262144);
    std::uniform_real_distribution<float> s(-20.0f, 0.0f);
    for (float& x : spread) x = s(rng);
    for (const LogitDType dt : all_dtypes) check(make_row(spread, dt), 100, 64);
    INFO("worst: " << worst.share << " of the tolerance");
    CHECK(worst.share <= 1.0);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row: k beyond the vocabulary and sampled ids outside it", "[snapshot][fast_row]")
{
    for (const LogitDType dt : all_dtypes) {
        for (const std::int32_t V : {1, 3, 50}) {
            std::mt19937_64 rng(static_cast<std::uint64_t>(V));
            const Row r = make_row(normal_row(rng, V, 1.0f), dt);
            for (const std::int32_t s : {-1, 0, V, std::numeric_limits<std::int32_t>::max()})
                for (const int k : {0, 1, 64, 100}) check(r, s, k);
        }
    }
    CHECK(worst.share <= 1.0);
}

TEST_CASE_METHOD(RowCheck,
                 "fast_row: rows of a padded [rows, stride] matrix", "[snapshot][fast_row]")
{
    for (const LogitDType dt : all_dtypes) {
        const std::int32_t rows = 5, V = 3001, stride = 3001 + 13;
        std::mt19937_64 rng(5);
        const Row m = make_row(normal_row(rng, rows * stride, 3.0f), dt, 1);
        for (std::int32_t r = 0; r < rows; ++r) {
            const auto* at = static_cast<const unsigned char*>(m.data()) +
                             std::size_t(r) * std::size_t(stride) * itemsize(dt);
            RowScratch scratch;
            TokenSnapshot want{};
            reference_row(at, dt, V, r * 7, 20, want, scratch);
            for (const CpuRowPath p : paths) {
                TokenSnapshot got{};
                fast_row(at, dt, V, r * 7, 20, got, scratch, p);
                CHECK(compare(got, want, worst) == "");
            }
        }
    }
    CHECK(worst.share <= 1.0);
}

TEST_CASE("JSONLW_SNAPSHOT_CPU_PATH values resolve to a path this CPU runs, with one warning "
          "when they cannot be honoured",
          "[snapshot][fast_row]")
{
    std::string w;
    CHECK(resolve_cpu_row_path("", &w) == best_cpu_row_path());
    CHECK(resolve_cpu_row_path("auto", &w) == best_cpu_row_path());
    CHECK(w.empty());
    CHECK(resolve_cpu_row_path("scalar", &w) == CpuRowPath::scalar);
    CHECK(resolve_cpu_row_path("reference", &w) == CpuRowPath::reference);
    CHECK(w.empty());
    for (const CpuRowPath p : {CpuRowPath::avx2, CpuRowPath::avx512}) {
        w.clear();
        const CpuRowPath got = resolve_cpu_row_path(cpu_row_path_name(p), &w);
        CHECK(cpu_row_path_supported(got));
        if (cpu_row_path_supported(p)) {
            CHECK(got == p);
            CHECK(w.empty());
        } else {
            CHECK(got < p);
            CHECK(w.find("cannot run it") != std::string::npos);
        }
    }
    w.clear();
    CHECK(resolve_cpu_row_path("sse9", &w) == best_cpu_row_path());
    CHECK(w.find("sse9") != std::string::npos);
    CHECK(best_cpu_row_path() != CpuRowPath::reference);
}
