// RawOutputWriter: records what the model generated for each output — text, the chunks it
// came in, token ids — at the post-processor hook, before any parser or formatter touched it
// (the C++ counterpart of TensorRT-LLM's RawOutputDump). One JSON line per finished output in
// <directory>/<YYYY-MM-DDTHH>/raw-<pid>.jsonl, the hour taken from the record's finished_at.
//
// Thread-safety: on_chunk(), on_request_end() and end_all() may be called from any thread,
// concurrently (for different requests, or the same one); they never throw, never block on
// I/O and never touch the caller's buffers. Everything else as JsonlRecordWriter. Lifetime:
// destroy the writer before the execution context of its executor.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/raw_output_record.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace jsonlw {

// The variable TensorRT-LLM reads the directory from.
inline constexpr const char* raw_output_dir_env = "TRTLLM_RAW_OUTPUT_DIR";

// The directory named by TRTLLM_RAW_OUTPUT_DIR, or an empty path when it is unset or empty.
std::filesystem::path raw_output_dir_from_env();

// An aggregate for designated initializers; fields in declaration order.
struct RawOutputOptions {
    // Output directory (the hour folders go in it). Empty: recording is off — one warning at
    // construction, nothing recorded, no state kept, nothing counted.
    std::filesystem::path directory{};
    // Outputs kept in flight (default 4096, at least 1). Past that, the least recently
    // updated one is written with "partial": true, "end_reason": "evicted".
    std::size_t max_pending = 4096;

    // --- passed to JsonlRecordWriter (see WriterOptions) ---
    std::size_t queue_capacity = 1024;          // finished records waiting to be written
    std::size_t batch_records = 64;             // records per append
    std::size_t batch_bytes = std::size_t{1} << 20;
    std::chrono::milliseconds flush_interval{0};
    Overflow overflow = Overflow::drop_newest;  // a full queue drops the newest record
    std::chrono::milliseconds block_timeout{100};
    Durability durability = Durability::none;
    std::chrono::milliseconds fsync_interval{1000};
    std::chrono::milliseconds shutdown_timeout{5000};
    LogSink log{};  // also called from the caller's thread, for the hook's own warnings
    std::optional<boost::asio::any_io_executor> io_executor{};
    std::shared_ptr<FileIo> file_io{};
    // The {"seq","writer"} envelope for loss detection downstream (docs/shipping.md).
    bool envelope = false;
    mode_t file_mode = 0640;                       // permission bits of the files it creates
    std::chrono::microseconds idle_poll{1000};     // as WriterOptions::idle_poll
    std::size_t serializer_threads = 1;            // as WriterOptions::serializer_threads
    // Where lines go (default: a PartitionedFileSink, the hour folders). Any sink gets each
    // group's key, "<UTC hour>/raw-<pid>.jsonl" (docs/sinks.md).
    std::shared_ptr<LineSink> sink{};

    // WriterOptions fields the writer sets itself: its layout (hour folders, raw-<pid>.jsonl)
    // fixes stem and subject and has no rotation.
    static constexpr std::string_view fixed_writer_options[] = {
        "stem", "subject", "rotate_bytes", "rotate_interval", "open_suffix", "messages"};
};
static_assert(covers_writer_options<RawOutputOptions>());

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
};

class RawOutputWriter : public JsonlRecordWriter<RawOutputRecord> {
public:
    RawOutputWriter(boost::asio::any_io_executor ex, RawOutputOptions opts);
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

protected:
    void serialize(const RawOutputRecord& rec, JsonLine& line) override;
    // serialize() reads only its record: serializer_threads > 1 is honoured.
    bool concurrent_serialize() const noexcept override { return true; }
    // Groups the batch by the hour of finished_at: one append per hour folder.
    void write_batch(std::span<const RawOutputRecord> batch) override;
    std::size_t record_bytes(const RawOutputRecord& rec) const noexcept override;
    // Hands the written records' buffers back to the hook for new outputs (RecordShells).
    void recycle(std::span<RawOutputRecord> records) noexcept override;
    // The directory could not be created: the hook stops keeping state.
    void on_disabled() override;
    // Close writes the outputs still in flight as partial, end_reason "shutdown".
    void on_close_requested() override;

    // Where a finished record goes, on the caller's thread, outside the hook's lock: submit()
    // by default. An exception costs this record only (counted in hook_failures).
    virtual void deliver(RawOutputRecord&& rec);

private:
    struct State;
    void deliver_safely(RawOutputRecord&& rec) noexcept;
    void hook_failed(std::uint64_t records, std::string_view what) noexcept;
    void not_recorded(std::uint64_t records) noexcept;
    void disable() noexcept;
    void warn(std::string_view message) const noexcept;

    std::unique_ptr<State> state_;
};

}  // namespace jsonlw
