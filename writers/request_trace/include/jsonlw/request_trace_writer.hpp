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

#include <jsonlw/capture.hpp>
#include <jsonlw/file_io.hpp>
#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/overflow.hpp>
#include <jsonlw/request_trace_record.hpp>
#include <jsonlw/submit_result.hpp>
#include <jsonlw/writer_options.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace jsonlw {

namespace detail {
class TraceAccounting;  // the durable mode's ledger (src/trace_accounting.hpp)
struct TraceCounters;    // what the encoder counts: metadata captures, invalid traceparents
}

// The engine's options (WriterOptions, with its defaults) plus the trace's own. `directory`
// is TRTLLM_REQUEST_TRACE_DIR (empty: the writer is inert); `file_io` is the seam of the shard
// appends (the sidecar is written with plain POSIX calls); `sink`: default a
// PartitionedFileSink (the hour folders) — any sink gets each group's key, "<UTC
// hour>/<requests|responses><suffix>.jsonl", and a TeeSink whose first branch is a
// PartitionedFileSink keeps the files (and the durable sidecar) as they are. The writer sets
// and so ignores: `stem`, `subject`, `messages`, `batch_records` (32), `durability` (from
// `durable`), `serializer_threads` (1: serialize() uses the writer's parser); its layout
// has no rotation (`rotation` does nothing).
struct RequestTraceOptions : WriterOptions {
    // Durable mode (default off): a record counts as written only once its batch's append is
    // fsync'ed; an accounting sidecar <dir>/_writer/<generation>.json is published at the
    // first batch, at most every 10 s after, after a failed batch and at close.
    bool durable = false;
    // Appended to "requests"/"responses" in file names (default "-<pid>").
    std::optional<std::string> writer_suffix{};
    // Capture::metadata: request and response bodies are not written; their lengths and
    // SHA-256 digests stand in for them (docs/writers.md, "Content capture"). Default full:
    // the lines are unchanged.
    Capture capture = Capture::full;
};

// What record_request()/record_response() report: the base's SubmitResult.
using RecordResult = SubmitResult;

class RequestTraceWriter final : public JsonlRecordWriter<RequestTraceRecord> {
public:
    static constexpr std::size_t queue_records = 1024;
    static constexpr std::size_t batch_records = 32;
    static constexpr std::chrono::seconds publish_interval{10};
    static constexpr std::string_view sidecar_schema = "jsonlw-request-trace-writer/1";

    RequestTraceWriter(boost::asio::any_io_executor ex, RequestTraceOptions opts);
    // The engine's options alone, durable off: what {.directory = …, .log = …} (designated
    // initializers name only WriterOptions' fields) selects.
    RequestTraceWriter(boost::asio::any_io_executor ex, WriterOptions opts)
        : RequestTraceWriter(std::move(ex), RequestTraceOptions{std::move(opts)})
    {
    }

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
    // Lines serialized with Capture::metadata (counted once made; a line whose append then
    // failed is also in stats()' dropped / unknown counts). Any thread.
    std::uint64_t metadata_captured() const noexcept;

    // Request lines written without the traceparent their headers sent, because it was
    // invalid (a W3C rule broken, TraceContext::parse_traceparent) or repeated; counted when
    // the line is serialized, on the I/O thread (after async_flush() or close, every queued
    // request is counted). Logged at the first and every 1000th, with the rule broken.
    std::uint64_t invalid_traceparents() const noexcept;

private:
    RequestTraceWriter(boost::asio::any_io_executor ex, const RequestTraceOptions& opts,
                       std::shared_ptr<detail::TraceAccounting> ledger,
                       std::shared_ptr<detail::TraceCounters> counters);
    const std::filesystem::path directory_;
    const std::string suffix_;
    // Durable mode only: the ledger the sink decorator (LedgerSink) fills and publishes.
    const std::shared_ptr<detail::TraceAccounting> accounting_;
    // Shared with the encoder, which counts on the I/O thread.
    const std::shared_ptr<detail::TraceCounters> counters_;
};

}  // namespace jsonlw
