// What the snapshot-stage tests share: a small CPU stage's config (cpu_config), a seeded host
// step to capture (Step), a sink that keeps every batch and so its slot until the test lets go
// (Keeper), and the lines of every .jsonl file under a directory (lines_under). Test threads
// only; each owns what it holds.
#pragma once

#include <jsonlw/snapshot/stage.hpp>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace jsonlw_test {

// A CPU stage of one row worker: k, the largest step and the ring as given.
inline jsonlw::snapshot::SnapshotConfig cpu_config(int k, int max_rows, int max_vocab,
                                                   int ring_slots)
{
    jsonlw::snapshot::SnapshotConfig c;
    c.k = k;
    c.max_rows = max_rows;
    c.max_vocab = max_vocab;
    c.ring_slots = ring_slots;
    c.cpu_threads = 1;
    return c;
}

// Host logits of a seeded normal distribution, with meta (request 1000 + row, seq_index
// row % 2, `step`) and sampled ids.
struct Step {
    int rows, vocab;
    std::vector<float> logits;
    std::vector<std::int32_t> sampled;
    std::vector<jsonlw::snapshot::RowMeta> meta;

    Step(int rows_, int vocab_, std::uint64_t seed, std::uint32_t step = 0)
        : rows(rows_), vocab(vocab_), logits(std::size_t(rows_) * std::size_t(vocab_)),
          sampled(std::size_t(rows_)), meta(std::size_t(rows_))
    {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> normal(0.f, 3.f);
        for (float& x : logits) x = normal(rng);
        for (int r = 0; r < rows; ++r) {
            sampled[std::size_t(r)] = std::int32_t(rng() % std::uint64_t(vocab));
            meta[std::size_t(r)] =
                jsonlw::snapshot::RowMeta{1000u + std::uint64_t(r), std::uint32_t(r % 2), step, 0};
        }
    }
    jsonlw::snapshot::LogitsView view() const
    {
        return jsonlw::snapshot::LogitsView{logits.data(), jsonlw::snapshot::LogitDType::f32, rows,
                                            vocab, vocab, -1};
    }
    jsonlw::snapshot::CaptureResult capture(jsonlw::snapshot::SnapshotStage& s) const
    {
        return s.capture(view(), sampled.data(), meta);
    }
};

// A sink that keeps every batch (and so its lease) until told to let go.
struct Keeper {
    std::mutex mutex;
    std::vector<jsonlw::snapshot::SnapshotBatch> batches;
    std::vector<std::thread::id> threads;

    jsonlw::snapshot::BatchSink sink()
    {
        return [this](jsonlw::snapshot::SnapshotBatch&& b) {
            std::lock_guard lock(mutex);
            threads.push_back(std::this_thread::get_id());
            batches.push_back(std::move(b));
        };
    }
    std::size_t size()
    {
        std::lock_guard lock(mutex);
        return batches.size();
    }
    void release(std::size_t i)
    {
        std::lock_guard lock(mutex);
        batches[i].lease.release();
    }
};

inline std::vector<std::string> lines_under(const std::filesystem::path& dir)
{
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
        if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line);) out.push_back(line);
    }
    return out;
}

}  // namespace jsonlw_test
