// From snapshot-stage results to the raw-output writer's per-token data: what a decode loop
// puts in OutputChunk::logprobs_diff and OutputChunk::first_gen_logits when it emits the
// chunk of a captured step (docs/snapshot.md, "Feeding the raw-output writer").
#pragma once

#include <jsonlw/raw_output_record.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <cstdint>
#include <limits>
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
    return FirstGenLogitsView{std::string_view(f.dtype), f.shape[1], f.bytes, f.overflow_to_inf};
}

}  // namespace jsonlw
