// RequestTraceWriter: a replayable per-request dump of what a client sent and what it got
// back, as JSON Lines under UTC-hour folders — <dir>/<YYYY-MM-DDTHH>/requests-<pid>.jsonl and
// responses-<pid>.jsonl — with an optional durable mode (fsync per batch, an accounting
// sidecar, a verifier). A configuration of JsonlRecordWriter: queue 1024, batch 32, 5 s
// shutdown, subject "request trace".
//
// Thread-safety: record_request(), record_response() and everything the base offers may be
// called from any thread; they only queue (no file I/O, no system call). start() from one
// thread. Serialization (redaction, session sanitizing, body validation, timestamps),
// appends and sidecar publications run on the writer's I/O thread. Lifetime: as
// JsonlRecordWriter — destroy the writer before the execution context of its executor.
#pragma once

#include <jsonlw/file_io.hpp>
#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/overflow.hpp>
#include <jsonlw/request_trace_record.hpp>
#include <jsonlw/submit_result.hpp>
#include <jsonlw/writer_options.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace jsonlw {

namespace detail {
class TraceAccounting;  // the durable mode's ledger (src/trace_accounting.hpp)
}

struct RequestTraceOptions {
    // Output directory (TRTLLM_REQUEST_TRACE_DIR). Empty: the writer is inert.
    std::filesystem::path directory{};
    // Durable mode (default off): a record counts as written only once its batch's append is
    // fsync'ed; an accounting sidecar <dir>/_writer/<generation>.json is published at the
    // first batch, at most every 10 s after, after a failed batch and at close.
    bool durable = false;
    // Appended to "requests"/"responses" in file names (default "-<pid>").
    std::optional<std::string> writer_suffix{};
    // Records the queue holds (default 1024); past that, records are dropped (queue_full).
    std::size_t queue_capacity = 1024;
    // async_close() completes at most this long after it was called (default 5 s).
    std::chrono::milliseconds shutdown_timeout{5000};
    // Log sink (default: stderr).
    LogSink log{};
    // System-call seam for the shard appends (default: POSIX). The sidecar is written with
    // plain POSIX calls.
    std::shared_ptr<FileIo> file_io{};
    // Where serialization and appends run (default: a thread the writer owns).
    std::optional<boost::asio::any_io_executor> io_executor{};
    // The {"seq","writer"} envelope for loss detection downstream (docs/shipping.md).
    bool envelope = false;
    // The other WriterOptions fields this writer takes, with WriterOptions' defaults.
    std::chrono::milliseconds flush_interval{0};  // longest a record waits for its batch
    Overflow overflow = Overflow::drop_newest;    // what a full queue does to a record
    std::chrono::milliseconds block_timeout{100};  // Overflow::block only
    std::size_t batch_bytes = std::size_t{1} << 20;  // a batch stops growing at this size
    mode_t file_mode = 0640;                      // of the files it creates, before the umask
    std::chrono::microseconds idle_poll{1000};    // an idle drain's polling before it parks
    // Where lines go (default: a PartitionedFileSink, the hour folders). Any sink gets each
    // group's key, "<UTC hour>/<requests|responses><suffix>.jsonl"; a TeeSink whose first
    // branch is a PartitionedFileSink keeps the files (and the durable sidecar) as they are.
    std::shared_ptr<LineSink> sink{};

    // Set by the writer itself: its layout (hour folders, requests/responses files) makes
    // stem and rotation meaningless, `durable` decides durability (fsync per batch),
    // batches are 32 records, and serialization stays on the I/O thread (serialize() uses
    // the writer's parser and counts the sidecar's drops: a trace is a few records per request).
    static constexpr std::string_view fixed_writer_options[] = {
        "stem", "subject", "batch_records", "durability", "fsync_interval",
        "rotate_bytes", "rotate_interval", "open_suffix", "serializer_threads", "messages"};
};
static_assert(covers_writer_options<RequestTraceOptions>());

// What record_request()/record_response() report: the base's SubmitResult.
using RecordResult = SubmitResult;

class RequestTraceWriter final : public JsonlRecordWriter<RequestTraceRecord> {
public:
    static constexpr std::size_t queue_records = 1024;
    static constexpr std::size_t batch_records = 32;
    static constexpr std::chrono::seconds publish_interval{10};
    static constexpr std::string_view sidecar_schema = "jsonlw-request-trace-writer/1";

    RequestTraceWriter(boost::asio::any_io_executor ex, RequestTraceOptions opts);
    ~RequestTraceWriter() override;

    // Queue one line. A zero recorded_at/finished_at is stamped now (a clock read, no
    // system call). Never blocks; returns what happened to the record.
    RecordResult record_request(RequestTrace rec);
    RecordResult record_response(ResponseTrace rec);

    // This writer lifetime's generation id, "<pid>-<time_ns>-<8 hex>" (durable mode; empty
    // otherwise), and its sidecar <dir>/_writer/<generation>.json.
    const std::string& generation() const noexcept;
    std::filesystem::path sidecar_path() const;
    const std::string& writer_suffix() const noexcept;
    // The files a record stamped `t` goes to.
    std::filesystem::path requests_file(WallClock::time_point t) const;
    std::filesystem::path responses_file(WallClock::time_point t) const;

protected:
    // "Recording request traces to <dir>" (info), once the directory is usable.
    void on_start() override;
    void serialize(const RequestTraceRecord& rec, JsonLine& line) override;
    void write_batch(std::span<const RequestTraceRecord> batch) override;
    std::size_t record_bytes(const RequestTraceRecord& rec) const noexcept override;
    void on_close() override;
    // Durable mode: publishes the closed sidecar with the close report's counts.
    void on_close_timed_out() noexcept override;

private:
    struct Impl;
    RequestTraceWriter(boost::asio::any_io_executor ex, const RequestTraceOptions& opts,
                       std::shared_ptr<detail::TraceAccounting> ledger);
    std::unique_ptr<Impl> impl_;
};

}  // namespace jsonlw
