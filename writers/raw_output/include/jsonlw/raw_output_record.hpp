// What the raw-output recorder is handed (OutputChunk, TokenLogprob) and what it writes (one
// RawOutputRecord per finished output). The chunk only borrows the caller's buffers; the
// record owns copies of everything it keeps.
#pragma once

#include <jsonlw/capture.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/snapshot/types.hpp>
#include <jsonlw/trace_context.hpp>
#include <jsonlw/utc_time.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw {

// One of the top-k alternatives at a position.
struct TopLogprob {
    std::int32_t token_id = 0;
    double logprob = 0;  // natural log; a non-finite value is written as null
};

// Per-token log-probability data of one generated token (raw_output_snapshot.hpp makes it
// from a snapshot-stage row).
struct TokenLogprob {
    std::int32_t token_id = 0;
    double logprob = 0;                // of the sampled token; non-finite is written as null
    std::optional<std::int32_t> rank{};  // 1 = the most likely token; absent: not computed
    std::vector<TopLogprob> top{};     // the k most likely tokens, best first; may be empty
    // False for a token whose chunk carried no logprob data while others did: written as
    // null / null / [] without counting as non-finite (with no rank and no top-k either, the
    // position counts in the record's logprobs_missing).
    bool known = true;
};

// The whole logits row of an output's first generated token (TensorRT-LLM's
// first_gen_logits item), borrowed by a chunk. bytes are little-endian elements of dtype.
struct FirstGenLogitsView {
    snapshot::LogitDType dtype = snapshot::LogitDType::f16;  // of bytes' elements
    std::int64_t vocab = 0;                                  // shape is [1, vocab]
    std::span<const std::byte> bytes{};
    std::uint32_t overflow_to_inf = 0;  // finite logits that became inf in the conversion
};

// The same, owned by a record.
struct FirstGenLogitsData {
    snapshot::LogitDType dtype = snapshot::LogitDType::f16;
    std::int64_t vocab = 0;
    std::vector<std::byte> bytes;
    std::uint32_t overflow_to_inf = 0;
};

// One post-processor-hook call: what one output of a request added at one step. Every view
// and span borrows the caller's memory for the duration of the call only; the recorder
// copies what it keeps and never writes through them.
struct OutputChunk {
    std::uint64_t request_id = 0;  // the engine's request id
    std::uint32_t output_index = 0;  // which of the request's outputs (n > 1, beams)
    std::string_view text_diff{};  // the text this chunk added (may be empty)
    std::span<const std::int32_t> token_ids_diff{};  // the token ids this chunk added
    // The output is complete: its record is written now. With n > 1 the caller sends one
    // chunk per output, each with is_final set.
    bool is_final = false;
    bool aborted = false;    // the request was aborted (the record keeps it if any chunk says so)
    bool streaming = false;  // taken from the output's first chunk
    // The id the disaggregated server gave the request, shared by its context and
    // generation phases; absent on aggregated serving.
    std::optional<std::uint64_t> disagg_request_id{};
    // The whole text of the output so far, as the engine reports it (optional). When given,
    // frames_consistent says whether the frames add up to it — false, for instance, when
    // chunks of two sampled sequences arrive under one output index.
    std::optional<std::string_view> text{};
    // Per-token log-probability data for token_ids_diff, one entry per id (optional; empty:
    // none). Once any chunk of an output carries some, the record's logprob arrays stay
    // aligned with token_ids: ids without an entry get null, surplus entries are ignored.
    std::span<const TokenLogprob> logprobs_diff{};
    // The per-token data for these ids comes later, from RawOutputWriter::on_token_data()
    // (the snapshot stage's results arrive after the engine's tokens, or never for a step
    // the stage dropped): the record's logprob arrays exist from this chunk on, and every
    // position that no data reaches is written as null and counted in logprobs_missing.
    bool token_data_follows = false;
    // The first generated token's whole logits row, when the snapshot stage captured it.
    std::optional<FirstGenLogitsView> first_gen_logits{};
    // The W3C trace context of the request (its traceparent header), set on the output's
    // first chunk: the record keeps the first one any chunk carries and writes it as its last
    // key, "traceparent", joining the request's perf-metrics and request-trace lines.
    std::optional<TraceContext> trace_context{};
};

// A logprob as the raw-output line spells it: a value that is exactly a float (what the
// snapshot stage computes) with the float's shortest round-trip digits, any other as a
// double, a non-finite one as null. `jsonlw serve` writes its responses' logprobs with it too,
// so a client's numbers and the record's agree digit for digit.
void write_logprob(JsonLine& line, double d);

// One line of raw-<pid>.jsonl: everything one output generated. Movable, owns its data.
struct RawOutputRecord {
    std::uint64_t request_id = 0;
    std::optional<std::uint64_t> disagg_request_id{};
    std::uint32_t output_index = 0;
    WallClock::time_point started_at{};   // the output's first chunk
    WallClock::time_point finished_at{};  // its final chunk, or when it was ended or evicted
    bool streaming = false;
    bool aborted = false;
    std::string frames_text;              // the non-empty text diffs, concatenated
    std::vector<std::size_t> frame_ends;  // where each frame ends in frames_text
    // The engine's full text, kept only when it differs from frames_text.
    std::optional<std::string> reported_text{};
    std::vector<std::int32_t> token_ids;
    std::vector<TokenLogprob> logprobs;  // empty, or one per token id
    std::optional<FirstGenLogitsData> first_gen_logits{};
    bool frames_consistent = true;
    // Empty: the output finished with its final chunk. Otherwise the record is partial and
    // this says why it was written ("evicted", "shutdown", or the caller's reason).
    std::string end_reason;
    // Absent: no "traceparent" key, the line as without trace contexts.
    std::optional<TraceContext> trace_context{};

    bool partial() const noexcept { return !end_reason.empty(); }
    // The record's "text": the engine's full text when it reported one, else the frames.
    std::string_view text() const noexcept
    {
        return reported_text ? std::string_view(*reported_text) : std::string_view(frames_text);
    }
    std::size_t num_frames() const noexcept { return frame_ends.size(); }
    std::string_view frame(std::size_t i) const noexcept
    {
        const std::size_t begin = i == 0 ? 0 : frame_ends[i - 1];
        return std::string_view(frames_text).substr(begin, frame_ends[i] - begin);
    }
};

// The line a record becomes (RawOutputWriter's encoder; docs/writers.md has the schema).
// Throws MalformedRecord for a record it cannot represent (frame ends that do not match the
// text, a first_gen_logits row of the wrong size). Reads only its record: any thread.
void serialize_raw_output(const RawOutputRecord& rec, JsonLine& line);
// The same with a capture level: Capture::metadata writes lengths and SHA-256 digests in
// place of the content (docs/writers.md, "Content capture"; this form sets up libcrypto's
// SHA-256 on every call, the writer once per thread).
void serialize_raw_output(const RawOutputRecord& rec, JsonLine& line, Capture capture);
// A size estimate of that line in bytes (for WriterOptions::batch_bytes).
std::size_t raw_output_record_bytes(const RawOutputRecord& rec) noexcept;

}  // namespace jsonlw
