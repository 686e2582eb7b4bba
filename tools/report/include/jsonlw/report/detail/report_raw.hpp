// The raw-output part of the report: outputs, tokens, frames per output, frames that do not
// add up to the text, partial records by end_reason, and the logprob / first_gen_logits
// fields when records carry them (docs/writers.md, "Raw output").
#pragma once

#include "report_stats.hpp"

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <string>

namespace jsonlw::tools {

class RawOutputAccumulator {
public:
    // verify_logits: decode every first_gen_logits item (base64 and all) with the snapshot
    // codec; otherwise only its shape, dtype and data length are checked (much cheaper).
    explicit RawOutputAccumulator(bool verify_logits = false) : verify_logits_(verify_logits) {}

    void add(simdjson::dom::object rec);
    void merge(RawOutputAccumulator&& other);

    std::uint64_t outputs = 0;
    std::uint64_t tokens = 0;                  // sum of token_ids lengths
    std::uint64_t token_count_mismatch = 0;    // num_output_tokens != len(token_ids), or missing
    std::uint64_t schema_errors = 0;           // a field of the wrong type (record still counted)
    SampleSet frames_per_output;
    SampleSet tokens_per_output;
    std::uint64_t frames_inconsistent = 0;     // frames_consistent: false
    std::uint64_t aborted = 0, streaming = 0;
    std::uint64_t partial = 0;
    std::map<std::string, std::uint64_t, std::less<>> end_reasons;  // 32 distinct at most
    std::uint64_t end_reason_other = 0;

    // logprobs (parallel to token_ids: a number or null per token)
    std::uint64_t with_logprobs = 0;           // outputs with a logprobs array
    std::uint64_t logprob_values = 0;          // finite numbers
    std::uint64_t logprob_nulls = 0;           // null entries
    std::uint64_t logprob_misaligned = 0;      // outputs whose logprobs length != len(token_ids)
    std::uint64_t nonfinite_positions = 0;     // sum of len(logprobs_nonfinite)
    std::uint64_t missing_positions = 0;       // sum of logprobs_missing (no per-token data)
    double logprob_sum = 0;
    SampleSet mean_logprob_per_output;         // one value per output with a finite logprob
    std::uint64_t with_ranks = 0, ranked_tokens = 0, rank1_tokens = 0;
    std::uint64_t with_top = 0, top_positions = 0, top_entries = 0;

    // first_gen_logits
    std::uint64_t with_first_gen = 0, first_gen_items = 0, first_gen_bad = 0;
    std::map<std::string, std::uint64_t, std::less<>> first_gen_dtypes;
    std::uint64_t first_gen_overflow_to_inf = 0;
    std::string first_gen_first_error;  // the first bad item's reason

private:
    void logprobs(simdjson::dom::object rec, std::uint64_t token_count);
    void first_gen(simdjson::dom::array items);
    bool verify_logits_;
};

}  // namespace jsonlw::tools
