// What both sides of RawOutputWriter agree a logprob entry without data is: the hook side
// (raw_output_writer.cpp) counts such positions in tokens_without_data, the line
// (raw_output_line.cpp) in logprobs_missing. Stateless; any thread.
#pragma once

#include <jsonlw/raw_output_record.hpp>

namespace jsonlw::detail {

// A position without per-token data: no logprob, rank or top-k (written null / null / []).
inline bool missing(const TokenLogprob& t) noexcept { return !t.known && !t.rank && t.top.empty(); }

}  // namespace jsonlw::detail
