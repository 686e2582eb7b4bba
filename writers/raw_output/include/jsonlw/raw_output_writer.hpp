// RawOutputWriter: records what the model generated for each output — text, the chunks it
// came in, token ids — at the post-processor hook, before any parser or formatter touched it
// (the C++ counterpart of TensorRT-LLM's RawOutputDump). One JSON line per finished output in
// <directory>/<YYYY-MM-DDTHH>/raw-<pid>.jsonl, the hour taken from the record's finished_at.
//
// A JsonlRecordWriter<RawOutputRecord> given its encoder (a finished output as one line under
// its hour folder's key), plus the hook that collects each output's chunks into its record.
//
// Thread-safety: on_chunk(), on_request_end() and end_all() may be called from any thread,
// concurrently (for different requests, or the same one); they never throw, never block on
// I/O and never touch the caller's buffers. The writer's own calls as JsonlRecordWriter's.
// Lifetime: destroy the writer before the execution context of its executor.
#pragma once

#include <jsonlw/capture.hpp>
#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/raw_output_record.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace jsonlw {

// The variable TensorRT-LLM reads the directory from.
inline constexpr const char* raw_output_dir_env = "TRTLLM_RAW_OUTPUT_DIR";

// The directory named by TRTLLM_RAW_OUTPUT_DIR, or an empty path when it is unset or empty.
std::filesystem::path raw_output_dir_from_env();

// The engine's options (WriterOptions, with its defaults) plus the hook's own. `directory`:
// where the hour folders go; empty, recording is off (one warning at construction, nothing
// recorded, no state kept, nothing counted). `sink`: default a PartitionedFileSink (the hour
// folders); any sink gets each group's key, "<UTC hour>/raw-<pid>.jsonl" (docs/sinks.md).
// `log` is also called from the hook's caller, for its own warnings. The writer sets and so
// ignores `stem`, `subject` and `messages`; its layout (hour folders, raw-<pid>.jsonl) has no
// rotation, so `rotation` does nothing.
struct RawOutputOptions : WriterOptions {
    // Outputs kept in flight (default 4096, at least 1). Past that, the least recently
    // updated one is written with "partial": true, "end_reason": "evicted".
    std::size_t max_pending = 4096;
    // Capture::metadata: the text, frames, token ids and top-k alternatives are not written;
    // lengths and SHA-256 digests stand in for them (docs/writers.md, "Content capture").
    // Default full: the lines are unchanged.
    Capture capture = Capture::full;
    // A seam for fault tests, as WriterOptions::file_io is for system calls: called with each
    // finished record on the hook's caller thread, outside the hook's lock, just before the
    // record is submitted; it may change the record or throw (an exception costs that record
    // only, counted in hook_failures). Default none: the record is submitted as made.
    std::function<void(RawOutputRecord&)> before_submit{};
};

// What the hook side did (the base's stats() count what reached the writer's queue).
struct RawOutputCounters {
    std::uint64_t pending = 0;        // outputs in flight now
    std::uint64_t finished = 0;       // records of outputs that got their final chunk
    std::uint64_t partial = 0;        // records written without one (ended, evicted, shutdown)
    std::uint64_t evicted = 0;        // of which evicted past max_pending
    std::uint64_t released_empty = 0;  // outputs ended or evicted having produced nothing:
                                       // no record
    std::uint64_t not_recorded = 0;   // outputs lost because the writer is disabled (its
                                      // directory could not be created)
    std::uint64_t hook_failures = 0;  // records lost to an exception inside the hook
    // Token positions written without per-token data (null logprob, rank and top-k), summed
    // over the records handed to the queue: the steps the snapshot stage dropped, for one.
    std::uint64_t tokens_without_data = 0;
    // Token positions whose on_token_data() found no output in flight (already written,
    // evicted, or never started): not recorded.
    std::uint64_t token_data_orphaned = 0;
    // Non-final chunks of outputs that had not started before async_close(): not kept (the
    // output could never be written); its final chunk, if it comes, counts as dropped closed.
    std::uint64_t chunks_after_close = 0;
    // Records serialized with Capture::metadata (counted once a line was made; a line whose
    // append then failed is also in the writer's dropped / unknown counts).
    std::uint64_t metadata_captured = 0;
};

// The hook collects chunks and per-token data into the outputs in flight (the LRU past
// max_pending) and submits each finished output, as a record, to the writer it is. Called
// from any thread (the hook and JsonlRecordWriter's calls alike); owns the hook's state, which
// it shares with the encoder the engine owns.
class RawOutputWriter final : public JsonlRecordWriter<RawOutputRecord> {
public:
    RawOutputWriter(boost::asio::any_io_executor ex, RawOutputOptions opts);
    // The engine's options alone, max_pending at its default: what {.directory = …, .log = …}
    // (designated initializers name only WriterOptions' fields) selects.
    RawOutputWriter(boost::asio::any_io_executor ex, WriterOptions opts)
        : RawOutputWriter(std::move(ex), RawOutputOptions{std::move(opts)})
    {
    }
    ~RawOutputWriter() override;

    // The post-processor hook: what one output added at one step. A final chunk writes the
    // output's record. Never throws; a failure costs the record and is counted.
    void on_chunk(const OutputChunk& chunk) noexcept;

    // Per-token data that arrives after the tokens it describes (the snapshot stage's results
    // for a step whose ids the engine already sent with on_chunk): data[i] is for the output's
    // token at `position + i` (0 = its first generated token). Kept even for positions whose
    // ids have not arrived yet; entries past the output's last token are ignored when it is
    // written. first_gen, when given, is the first token's whole logits row (copied). For an
    // output no longer in flight the data is counted in token_data_orphaned and dropped.
    // Never throws, never blocks on I/O.
    void on_token_data(std::uint64_t request_id, std::uint32_t output_index, std::size_t position,
                       std::span<const TokenLogprob> data,
                       std::optional<FirstGenLogitsView> first_gen = std::nullopt) noexcept;

    // The request ended without final chunks (an error, a cancelled stream): each pending
    // output of it that produced text or tokens is written with "partial": true and
    // "end_reason": reason (empty: "ended"); all its state is released. An unknown request
    // is harmless.
    void on_request_end(std::uint64_t request_id, std::string_view reason) noexcept;

    // on_request_end() for every pending request.
    void end_all(std::string_view reason) noexcept;

    // Whether chunks are being recorded (false without a directory, or once disabled).
    bool recording() const noexcept;
    std::size_t pending_outputs() const noexcept;
    std::uint64_t hook_failures() const noexcept;
    RawOutputCounters counters() const noexcept;
    std::size_t max_pending() const noexcept;

    // --- the writer (JsonlRecordWriter's calls; these two do the hook's part first) ---
    // Starts the writer; when its directory cannot be created the hook stops keeping state.
    void start();
    // Writes the outputs still in flight as partial, end_reason "shutdown" (first call only,
    // while intake is open), then closes the writer. (Called through a JsonlRecordWriter&,
    // the base's async_close() closes without writing them.)
    template <class Token>
    auto async_close(Token&& token)
    {
        close_requested();
        return JsonlRecordWriter<RawOutputRecord>::async_close(std::forward<Token>(token));
    }
    // The writer itself, as JsonlRecordWriter (from when the hook owned one).
    JsonlRecordWriter<RawOutputRecord>& records() noexcept { return *this; }

private:
    struct State;
    RawOutputWriter(boost::asio::any_io_executor ex, const RawOutputOptions& opts,
                    std::shared_ptr<State> state);
    // The engine's encoder, sharing the hook's state (it hands buffers back to `shells` and
    // counts metadata lines there).
    static std::shared_ptr<RecordEncoder<RawOutputRecord>> make_encoder(
        const std::shared_ptr<State>& state, const RawOutputOptions& opts);
    void close_requested() noexcept;
    // Where a finished record goes, on the caller's thread, outside the hook's lock: through
    // before_submit (when set) to submit(). An exception costs this record only (counted in
    // hook_failures).
    void deliver(RawOutputRecord&& rec);
    void deliver_safely(RawOutputRecord&& rec) noexcept;
    void hook_failed(std::uint64_t records, std::string_view what) noexcept;
    void not_recorded(std::uint64_t records) noexcept;
    void disable() noexcept;
    void warn(std::string_view message) const noexcept;

    // Shared with the engine's encoder, so it lives until the engine is done with it too.
    const std::shared_ptr<State> state_;
    const std::function<void(RawOutputRecord&)> before_submit_;  // RawOutputOptions'
    std::atomic<bool> close_requested_{false};
};

}  // namespace jsonlw
