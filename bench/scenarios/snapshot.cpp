// The snapshot scenario: the snapshot stage's CPU backend, rows/s and GB/s of logits read,
// next to memcpy of the same bytes on as many threads.
#include "runs.hpp"
#include "scenarios.hpp"
#include "side_by_side.hpp"

#include <jsonlw/snapshot/stage.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace bench {

void snapshot_scenario(const Config& cfg, Report& report)
{
    using namespace jsonlw::snapshot;
    const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    SnapshotConfig sc;
    sc.k = 20;
    sc.max_rows = 256;
    sc.max_vocab = 152064;
    sc.ring_slots = 2;
    sc.cpu_threads = threads;
    auto stage = SnapshotStage::create(sc, Backend::cpu, [](SnapshotBatch&&) {});
    std::vector<std::byte> copy_dst;

    const std::vector<int> batches = cfg.quick ? std::vector<int>{1, 64} : std::vector<int>{1, 64, 256};
    const std::vector<int> vocabs = cfg.quick ? std::vector<int>{32000} : std::vector<int>{32000, 152064};
    const std::vector<LogitDType> dtypes = {LogitDType::f32, LogitDType::f16, LogitDType::bf16};
    const double bytes_per_run = cfg.quick ? 16e6 : 128e6;

    Section sec;
    sec.scenario = "snapshot";
    sec.title = fmt::format("snapshot stage, CPU backend: capture() of a [rows, vocab] batch, k = 20, "
                            "{} thread{} (rows/s; GB/s of logits read), next to memcpy of the same "
                            "bytes on as many threads",
                            threads, threads > 1 ? "s" : "");
    for (const int vocab : vocabs) {
        for (const int rows : batches) {
            for (const LogitDType dt : dtypes) {
                const SnapshotInput in = make_snapshot_input(dt, rows, vocab, 7);
                const int reps = std::max(1, static_cast<int>(bytes_per_run / double(in.data.size())));
                std::vector<Variant<SnapshotRunResult>> variants = {
                    {"capture", [&] { return snapshot_cpu_run(*stage, in, reps); }},
                    {"memcpy", [&] { return copy_ceiling_run(in, copy_dst, reps, threads); }},
                };
                const std::string cell = fmt::format("{} x {} {}", rows, vocab, dtype_name(dt));
                auto results = alternate<SnapshotRunResult>(
                    cfg, "snapshot " + cell, variants, [](const SnapshotRunResult& r) {
                        return fmt::format("{:.2f} GB/s", r.bytes / r.seconds / 1e9);
                    });
                for (std::size_t v = 0; v < variants.size(); ++v) {
                    Row row;
                    row.variant = fmt::format("{:<8} {}", variants[v].name, cell);
                    row.unit = "rows/s";
                    for (const auto& r : results[v]) row.values.v.push_back(double(r.rows) / r.seconds);
                    row.unit2 = "GB/s";
                    row.scale2 = double(in.data.size()) / double(rows) / 1e9;
                    row.problem = first_problem(results[v]);
                    sec.rows.push_back(std::move(row));
                }
                // On the capture row: its share of the copy ceiling, pair by pair.
                Row& cap = sec.rows[sec.rows.size() - 2];
                cap.ratio = pair_ratios(cap.values, sec.rows.back().values, true);
                cap.ratio_of = "memcpy";
            }
        }
    }
    sec.notes.push_back("rows/s counts rows fully processed (top-k, rank, log-sum-exp in double, NaN "
                        "and inf counts) and delivered; the ratio on a capture row is its share of "
                        "memcpy's rate over the same bytes (memcpy also writes them: a generous ceiling "
                        "for a read-only pass)");
    report.sections.push_back(std::move(sec));
}

}  // namespace bench
