// The snapshot-rows scenario: the CPU backend's row kernel on one thread, side by side over the
// same rows: reference_row (the oracle, and what the backend ran before fast_row), fast_row on
// each SIMD path, and two floors at the best path's width: a read-only pass (every logit read,
// widened and summed) and an exp pass (every logit read and exp(x - max) summed, the kernel's
// exp). Then 64 rows through the CPU backend on every core, oracle against fast_row.
#include "clock.hpp"
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <jsonlw/snapshot/fast_row.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace bench {
namespace {

using namespace jsonlw::snapshot;

struct RowsResult {
    double seconds = 0;
    std::uint64_t rows = 0;
    std::string problem;
};

enum class Pass { oracle, fast, read, exp };

// `reps` sweeps over every row of `in`, one thread.
RowsResult run_rows(const SnapshotInput& in, const std::vector<float>& maxima, Pass pass,
                    CpuRowPath path, int reps, std::vector<TokenSnapshot>& out)
{
    RowsResult r;
    RowScratch scratch;
    const std::size_t row_bytes = std::size_t(in.vocab) * itemsize(in.dtype);
    double sink = 0;
    // Thread CPU time, as docs/snapshot.md's table was: the machines these figures come from
    // are shared and a wall-clock run of a few milliseconds there is often preempted (the
    // all-core capture() rows are wall time).
    const double t0 = thread_cpu_seconds();
    for (int rep = 0; rep < reps; ++rep) {
        for (int i = 0; i < in.rows; ++i) {
            const void* row = in.data.data() + std::size_t(i) * row_bytes;
            const std::int32_t s = in.sampled[std::size_t(i)];
            switch (pass) {
            case Pass::oracle:
                reference_row(row, in.dtype, in.vocab, s, 20, out[std::size_t(i)], scratch);
                break;
            case Pass::fast:
                fast_row(row, in.dtype, in.vocab, s, 20, out[std::size_t(i)], scratch, path);
                break;
            case Pass::read: sink += detail::cpu_row_read_pass(row, in.dtype, in.vocab, path); break;
            case Pass::exp:
                sink += detail::cpu_row_exp_pass(row, in.dtype, in.vocab, maxima[std::size_t(i)],
                                                 path);
                break;
            }
        }
    }
    r.seconds = thread_cpu_seconds() - t0;
    r.rows = std::uint64_t(in.rows) * std::uint64_t(reps);
    if (sink != sink) r.problem = "a floor pass summed to NaN";
    return r;
}

// Sets JSONLW_SNAPSHOT_CPU_PATH for its lifetime (a stage reads it when it is created).
struct PinnedPath {
    explicit PinnedPath(const char* value)
    {
        if (const char* v = std::getenv("JSONLW_SNAPSHOT_CPU_PATH")) before = v;
        ::setenv("JSONLW_SNAPSHOT_CPU_PATH", value, 1);
    }
    ~PinnedPath()
    {
        if (before) ::setenv("JSONLW_SNAPSHOT_CPU_PATH", before->c_str(), 1);
        else ::unsetenv("JSONLW_SNAPSHOT_CPU_PATH");
    }
    PinnedPath(const PinnedPath&) = delete;
    PinnedPath& operator=(const PinnedPath&) = delete;
    std::optional<std::string> before;
};

// A cell's rows in µs per row, each named "<variant> <cell>", with the GB/s of logits read
// (`row_bytes` per row) beside.
template <class Result>
std::vector<Row> us_per_row_rows(const std::vector<Variant<Result>>& variants,
                                 const std::vector<std::vector<Result>>& results,
                                 const std::string& cell, double row_bytes)
{
    std::vector<Row> rows = lower_is_better_rows(variants, results, "µs/row", [](const Result& r) {
        return r.seconds / double(r.rows) * 1e6;
    });
    for (Row& row : rows) {
        row.variant = fmt::format("{:<18} {}", row.variant, cell);
        if (!row.skipped)
            row.extra.emplace_back("GB/s", row_bytes / (row.values.median() * 1e-6) / 1e9);
    }
    return rows;
}

}  // namespace

void snapshot_rows_scenario(const Config& cfg, Report& report)
{
    const CpuRowPath best = best_cpu_row_path();
    const std::vector<int> vocabs = {152064, 32000};
    const std::vector<LogitDType> dtypes = {LogitDType::bf16, LogitDType::f16, LogitDType::f32};
    const int rows = 64;
    const double bytes_per_run = cfg.quick ? 8e6 : 48e6;

    Section sec;
    sec.scenario = "snapshot-rows";
    sec.title = fmt::format("snapshot rows, one thread: reference_row, fast_row per path, and the "
                            "read and exp floors at the {} width; k = 20, {} rows of normal(0, 3) "
                            "logits per cell (µs of thread CPU time per row)",
                            cpu_row_path_name(best), rows);
    for (const int vocab : vocabs) {
        for (const LogitDType dt : dtypes) {
            const SnapshotInput in = make_snapshot_input(dt, rows, vocab, 27);
            const double row_bytes = double(vocab) * double(itemsize(dt));
            std::vector<float> maxima(rows);
            for (int i = 0; i < rows; ++i) {
                const void* row = in.data.data() + std::size_t(i) * std::size_t(row_bytes);
                float m = load_logit(row, dt, 0);
                for (int j = 1; j < vocab; ++j) m = std::max(m, load_logit(row, dt, j));
                maxima[std::size_t(i)] = m;
            }
            const int reps = std::max(1, int(bytes_per_run / (row_bytes * rows)));
            std::vector<TokenSnapshot> out(rows);
            std::vector<Variant<RowsResult>> variants;
            variants.emplace_back("reference_row", [&] {
                return run_rows(in, maxima, Pass::oracle, CpuRowPath::reference, reps, out);
            });
            for (const CpuRowPath p : {CpuRowPath::avx512, CpuRowPath::avx2, CpuRowPath::scalar})
                variants.emplace_back(
                    fmt::format("fast_row {}", cpu_row_path_name(p)),
                    [&, p] { return run_rows(in, maxima, Pass::fast, p, reps, out); },
                    cpu_row_path_supported(p), "this CPU lacks it");
            variants.emplace_back(fmt::format("read pass {}", cpu_row_path_name(best)), [&] {
                return run_rows(in, maxima, Pass::read, best, reps, out);
            });
            variants.emplace_back(fmt::format("exp floor {}", cpu_row_path_name(best)), [&] {
                return run_rows(in, maxima, Pass::exp, best, reps, out);
            });
            const std::string cell = fmt::format("{} {}", vocab, dtype_name(dt));
            auto results = alternate<RowsResult>(
                cfg, "snapshot-rows " + cell, variants, [](const RowsResult& r) {
                    return fmt::format("{:.1f} µs/row", r.seconds / double(r.rows) * 1e6);
                });
            const std::size_t first = sec.rows.size();
            for (Row& row : us_per_row_rows(variants, results, cell, row_bytes))
                sec.rows.push_back(std::move(row));
            // fast_row rows: speed-up over reference_row pair by pair, and share of the read pass.
            const Row& ref = sec.rows[first];
            const Row& read = sec.rows[first + 4];
            for (std::size_t v = 1; v <= 3; ++v) {
                Row& fast = sec.rows[first + v];
                if (fast.skipped) continue;
                fast.ratio = pair_ratios(fast.values, ref.values, false);
                fast.ratio_of = "reference_row";
                fast.extra.emplace_back("share of read pass",
                                        read.values.median() / fast.values.median());
            }
            Row& expf = sec.rows[first + 5];
            expf.extra.emplace_back("share of read pass", read.values.median() / expf.values.median());
            const Row& fast_best = sec.rows[first + (best == CpuRowPath::avx512 ? 1
                                                     : best == CpuRowPath::avx2 ? 2
                                                                                : 3)];
            if (fast_best.ratio)
                report.goals.push_back(make_goal(
                    fmt::format("fast_row {} vs reference_row, {}, one thread",
                                cpu_row_path_name(best), cell),
                    ">=", 3.0, fast_best.ratio->median(), "x"));
            if (vocab == 152064 && dt == LogitDType::bf16)
                report.goals.push_back(make_goal(
                    fmt::format("fast_row {} per row, {}, one thread", cpu_row_path_name(best), cell),
                    "<=", 60, fast_best.values.median(), "µs"));
        }
    }
    sec.notes.push_back(fmt::format(
        "each run sweeps the cell's {} rows ({} MB of logits at 152064 fp32) {} times or more; "
        "advantage: reference_row's time over fast_row's, pair by pair; share of read pass: the "
        "read pass's time over this row's (1 = the row costs no more than reading it)",
        rows, 152064 * 4 * rows / 1000000, std::max(1, int(bytes_per_run / (152064.0 * 4 * rows)))));
    sec.notes.push_back("read pass: every logit loaded, widened to fp32 and summed, nothing else; "
                        "exp floor: the same plus exp(x - max) with fast_row's exp, summed; both "
                        "at the best path's SIMD width");
    report.sections.push_back(std::move(sec));

    // The CPU backend on every core: 64 rows per capture(), the oracle pinned against fast_row.
    const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    SnapshotConfig sc;
    sc.k = 20;
    sc.max_rows = rows;
    sc.max_vocab = 152064;
    sc.ring_slots = 2;
    sc.cpu_threads = threads;
    std::unique_ptr<SnapshotStage> oracle_stage, fast_stage;
    {
        PinnedPath pin("reference");
        oracle_stage = SnapshotStage::create(sc, Backend::cpu, [](SnapshotBatch&&) {});
    }
    {
        PinnedPath pin("auto");
        fast_stage = SnapshotStage::create(sc, Backend::cpu, [](SnapshotBatch&&) {});
    }
    Section all;
    all.scenario = "snapshot-rows";
    all.title = fmt::format("snapshot rows through the CPU backend: capture() of {} x 152064 rows, "
                            "k = 20, {} thread{} (µs per row, wall time / rows)",
                            rows, threads, threads > 1 ? "s" : "");
    for (const LogitDType dt : dtypes) {
        const SnapshotInput in = make_snapshot_input(dt, rows, 152064, 28);
        const int reps = std::max(1, int(bytes_per_run / double(in.data.size())));
        std::vector<Variant<SnapshotRunResult>> variants = {
            {"capture reference", [&] { return snapshot_cpu_run(*oracle_stage, in, reps); }},
            {fmt::format("capture {}", cpu_row_path_name(best)),
             [&] { return snapshot_cpu_run(*fast_stage, in, reps); }},
        };
        const std::string cell = fmt::format("{} x 152064 {}", rows, dtype_name(dt));
        auto results = alternate<SnapshotRunResult>(
            cfg, "snapshot-rows " + cell, variants, [](const SnapshotRunResult& r) {
                return fmt::format("{:.2f} GB/s", double(r.bytes) / r.seconds / 1e9);
            });
        const std::size_t first = all.rows.size();
        for (Row& row : us_per_row_rows(variants, results, cell, double(in.data.size()) / rows))
            all.rows.push_back(std::move(row));
        all.rows[first + 1].ratio = pair_ratios(all.rows[first + 1].values, all.rows[first].values, false);
        all.rows[first + 1].ratio_of = "capture reference";
    }
    all.notes.push_back("the same stage settings twice, created with JSONLW_SNAPSHOT_CPU_PATH=reference "
                        "and =auto; the sink drops each batch; the capturing thread works too");
    report.sections.push_back(std::move(all));
}

}  // namespace bench
