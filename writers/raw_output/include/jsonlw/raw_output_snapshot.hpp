// From snapshot-stage results to the raw-output writer's per-token data: what a decode loop
// puts in OutputChunk::logprobs_diff and OutputChunk::first_gen_logits when it emits the
// chunk of a captured step, or hands to RawOutputWriter::on_token_data() when the engine's
// tokens went ahead (docs/snapshot.md, "Feeding the raw-output writer").
#pragma once

#include <jsonlw/raw_output_record.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

namespace jsonlw {

// The sampled token's logprob and rank and the top-k alternatives of one captured row, as
// far as `config` asks for them (sampled_logprob, sampled_rank, topk_logprobs). An invalid
// sampled id gives a NaN logprob (written as null and listed in logprobs_nonfinite) and no
// rank; k > vocab padding is left out.
inline TokenLogprob token_logprob(const snapshot::TokenSnapshot& row,
                                  const snapshot::SnapshotConfig& config)
{
    TokenLogprob t;
    t.token_id = row.sampled_id;
    t.logprob = config.sampled_logprob ? double(row.sampled_logprob)
                                       : std::numeric_limits<double>::quiet_NaN();
    t.known = config.sampled_logprob;
    if (config.sampled_rank && row.sampled_rank > 0)
        t.rank = static_cast<std::int32_t>(row.sampled_rank);
    if (config.topk_logprobs) {
        t.top.reserve(row.k);
        for (int i = 0; i < row.k; ++i) {
            if (row.topk_ids[i] < 0) break;  // padding past the vocabulary
            t.top.push_back(TopLogprob{row.topk_ids[i], double(row.topk_logprobs[i])});
        }
    }
    return t;
}

// A captured first_gen_logits row, borrowed (valid while the batch's lease is held).
inline FirstGenLogitsView first_gen_view(const snapshot::FirstGenLogits& f) noexcept
{
    return FirstGenLogitsView{f.dtype, f.shape[1], f.bytes, f.overflow_to_inf};
}

// One delivered batch into the writer, for the pattern where the engine sends every step's
// text and ids with on_chunk (token_data_follows) and the stage's results follow: each row's
// per-token data goes to its output at position row.step, with the step's first-gen row when
// there is one; then the batch's slot is released, before this returns, so that nothing
// downstream (the writer's queue, the rest of the caller's handler) holds the stage's ring.
// A failed batch (the device failed the step) attaches nothing: its positions stay null and
// count in logprobs_missing. Returns the rows attached. Call it on any thread; never throws.
inline std::size_t record_token_data(RawOutputWriter& writer, snapshot::SnapshotBatch&& batch,
                                     const snapshot::SnapshotConfig& config) noexcept
{
    std::size_t attached = 0;
    if (!batch.failed) {
        try {
            for (const snapshot::TokenSnapshot& row : batch.rows) {
                const TokenLogprob lp = token_logprob(row, config);
                std::optional<FirstGenLogitsView> fg;
                for (const snapshot::FirstGenLogits& f : batch.first_gen)
                    if (f.request_id == row.request_id && f.seq_index == row.seq_index)
                        fg = first_gen_view(f);
                writer.on_token_data(row.request_id, row.seq_index, row.step,
                                     std::span<const TokenLogprob>(&lp, 1), fg);
                ++attached;
            }
        } catch (...) {
            // Out of memory building one row's entry: the rest of the batch stays null.
        }
    }
    batch.lease.release();
    return attached;
}

}  // namespace jsonlw
