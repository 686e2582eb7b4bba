// The chain scenario: what the hash chain (WriterOptions::chain, docs/chain.md) costs the I/O
// thread. Two cells, each alternated run by run: LineChain::seal over 1 KiB lines next to the
// plain copy a sink makes without a chain (ns per line; goal: at most 1.0 us for sha256), and
// RawJsonWriter writing the same 1 KiB records with chain none, then sha256 (records/s and the
// pair-by-pair ratio). docs/benchmarks.md, "Per-record features, the file check and the hash
// chain".
#include "scenarios.hpp"
#include "side_by_side.hpp"
#include "writer_harness.hpp"

#include <jsonlw/line_chain.hpp>
#include <jsonlw/raw_json_writer.hpp>

#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace bench {
namespace {

constexpr std::size_t kLineBytes = 1024;

struct Timed {
    double value = 0;  // ns/line, or records/s
    std::string problem;
};

// 64 distinct 1 KiB lines (with their '\n').
std::vector<std::string> lines_1k()
{
    std::vector<std::string> out;
    for (int i = 0; i < 64; ++i) {
        std::string l = fmt::format("{{\"id\":{},\"text\":\"", i);
        l += std::string(kLineBytes - l.size() - 3, static_cast<char>('a' + i % 26));
        l += "\"}\n";
        out.push_back(std::move(l));
    }
    return out;
}

Timed seal_ns(const std::vector<std::string>& lines, std::size_t n, jsonlw::ChainMode mode)
{
    jsonlw::LineChain chain(mode, std::nullopt);
    std::string out;
    out.reserve(64 * (kLineBytes + 80));
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) {
        if (i % 64 == 0) out.clear();  // a batch's buffer, reused
        chain.seal(out, lines[i % 64]);
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    return Timed{ns / static_cast<double>(n), out.empty() ? "nothing sealed" : ""};
}

Timed writer_rate(const std::filesystem::path& dir, const std::vector<std::string>& lines,
                  std::size_t n, jsonlw::ChainMode mode)
{
    std::filesystem::remove_all(dir);
    LogTally logs;
    Timed t;
    {
        Loop loop;
        jsonlw::RawJsonWriter w(loop.executor(),
                                jsonlw::WriterOptions{.directory = dir,
                                                      .stem = "chain",
                                                      .subject = "bench",
                                                      .queue_capacity = 8192,
                                                      .overflow = jsonlw::Overflow::block,
                                                      .block_timeout = std::chrono::hours(1),
                                                      .shutdown_timeout = std::chrono::hours(1),
                                                      .log = logs.sink(),
                                                      .chain = mode},
                                jsonlw::RawJsonOptions{.validation = jsonlw::RawJsonValidation::trusted});
        w.start();
        const auto t0 = std::chrono::steady_clock::now();
        std::uint64_t refused = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::string& l = lines[i % 64];
            if (w.submit(std::string_view(l.data(), l.size() - 1)) != jsonlw::SubmitResult::accepted)
                ++refused;
        }
        const jsonlw::CloseReport report = w.async_close(boost::asio::use_future).get();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        t.value = static_cast<double>(n) / s;
        if (refused) t.problem = fmt::format("{} submits refused", refused);
        else t.problem = stats_problem(report.stats, n);
    }
    std::filesystem::remove_all(dir);
    return t;
}

Row row_of(const std::string& name, const std::string& unit, bool higher,
           const std::vector<Timed>& rs)
{
    Row row;
    row.variant = name;
    row.unit = unit;
    row.higher_is_better = higher;
    for (const Timed& t : rs) row.values.v.push_back(t.value);
    row.problem = first_problem(rs);
    return row;
}

}  // namespace

void chain_scenario(const Config& cfg, Report& report)
{
    const std::vector<std::string> lines = lines_1k();
    const std::size_t seals = cfg.quick ? 100'000 : 400'000;
    std::vector<Variant<Timed>> seal_variants = {
        {"LineChain::seal sha256", [&] { return seal_ns(lines, seals, jsonlw::ChainMode::sha256); }},
        {"copy (chain none)", [&] { return seal_ns(lines, seals, jsonlw::ChainMode::none); }},
    };
    auto sealed = alternate<Timed>(cfg, "chain seal", seal_variants,
                                   [](const Timed& t) { return fmt::format("{:.0f} ns/line", t.value); });
    Section seal;
    seal.scenario = "chain";
    seal.title = fmt::format("hash chain: {} lines of {} B sealed on one thread, ns per line", seals,
                             kLineBytes);
    seal.params = {{"lines", static_cast<double>(seals)}, {"line_bytes", double(kLineBytes)}};
    seal.rows.push_back(row_of(seal_variants[0].name, "ns/line", false, sealed[0]));
    seal.rows.push_back(row_of(seal_variants[1].name, "ns/line", false, sealed[1]));
    seal.notes.push_back("seal: SHA-256 of the previous value and the line (libcrypto EVP), the key "
                         "inserted before the final }; none: the same append without a hash");
    const double seal_median = seal.rows[0].values.median();
    report.sections.push_back(std::move(seal));
    report.goals.push_back(make_goal("chain sha256: LineChain::seal per 1 KiB line", "<=", 1000,
                                     seal_median, "ns/line"));

    const std::size_t records = cfg.quick ? 50'000 : 200'000;
    const auto dir = cfg.dir / "chain";
    std::vector<Variant<Timed>> writer_variants = {
        {"RawJsonWriter chain none", [&] { return writer_rate(dir, lines, records, jsonlw::ChainMode::none); }},
        {"RawJsonWriter chain sha256", [&] { return writer_rate(dir, lines, records, jsonlw::ChainMode::sha256); }},
    };
    auto rates = alternate<Timed>(cfg, "chain writer", writer_variants,
                                  [](const Timed& t) { return fmt::format("{:.0f} records/s", t.value); });
    Section w;
    w.scenario = "chain";
    w.title = fmt::format("hash chain end to end: RawJsonWriter (trusted), {} records of {} B, one "
                          "producer, records/s until closed",
                          records, kLineBytes);
    w.params = {{"records", static_cast<double>(records)}, {"line_bytes", double(kLineBytes)}};
    w.rows.push_back(row_of(writer_variants[0].name, "records/s", true, rates[0]));
    w.rows.push_back(row_of(writer_variants[1].name, "records/s", true, rates[1]));
    w.rows[1].ratio = pair_ratios(w.rows[1].values, w.rows[0].values, true);
    w.notes.push_back("ratio: chain sha256 over chain none, pair by pair (1.0: free); the chain "
                      "also writes the manifest <stem>.chain, one line per file");
    report.sections.push_back(std::move(w));
}

}  // namespace bench
