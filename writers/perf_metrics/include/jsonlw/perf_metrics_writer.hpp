// PerfMetricsWriter: per-request performance metrics as JSON Lines, the C++ counterpart of
// TensorRT-LLM's PerfMetricsJsonlWriter. A configuration of JsonlRecordWriter: the base owns
// the queue, batching, I/O thread, accounting and logs; this class fixes the constants and
// says how a PerfMetricsRecord becomes a line (serialize_perf_metrics()).
//
// Files: <directory>/perf_metrics-<kind>-<hostname>-<pid>-<YYYYMMDDTHHMMSSZ>.jsonl, one per
// writer lifetime (the time is taken at start()). Log subject "performance metrics", e.g.
// "Dropped malformed performance metrics record: 'server'".
//
// Thread-safety and lifetime: as JsonlRecordWriter (submit() from any thread, never blocks;
// destroy the writer before the execution context of its executor).
#pragma once

#include <jsonlw/durability.hpp>
#include <jsonlw/file_io.hpp>
#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/overflow.hpp>
#include <jsonlw/perf_metrics_record.hpp>
#include <jsonlw/writer_options.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace jsonlw {

// What an embedder may set besides the directory and kind: the WriterOptions fields below,
// under their WriterOptions names and with the defaults TensorRT-LLM's writer has (see
// WriterOptions for what each does). The rest is fixed (fixed_writer_options, constants of
// PerfMetricsWriter). Fields in declaration order, for designated initializers.
struct PerfMetricsOptions {
    // Log sink (default: stderr).
    LogSink log{};
    // When appended bytes are fsync'ed (default none, as TensorRT-LLM's writer).
    Durability durability = Durability::none;
    // Where serialization and appends run (default: a thread the writer owns).
    std::optional<boost::asio::any_io_executor> io_executor{};
    // System-call seam for appends (default: POSIX); tests inject faults through it.
    std::shared_ptr<FileIo> file_io{};
    // Files for shippers (WriterOptions, docs/shipping.md): rotation by size and age, the
    // open suffix, the {"seq","writer"} envelope. Defaults: off, as TensorRT-LLM's writer.
    std::uint64_t rotate_bytes = 0;
    std::chrono::milliseconds rotate_interval{0};
    std::optional<std::string> open_suffix{};
    bool envelope = false;
    // Durability::fsync_interval only: longest unsynced data waits for fsync (default 1 s).
    std::chrono::milliseconds fsync_interval{1000};
    // Longest a record waits for its batch to fill (default 0: write at once).
    std::chrono::milliseconds flush_interval{0};
    // A full queue (1024 records) drops the newest record (default, as TensorRT-LLM's).
    Overflow overflow = Overflow::drop_newest;
    // Overflow::block only: longest submit() waits for room (default 100 ms).
    std::chrono::milliseconds block_timeout{100};
    // A batch stops growing at this many bytes of records (default 1 MiB).
    std::size_t batch_bytes = std::size_t{1} << 20;
    // Permission bits of the files the writer creates (default 0640, before the umask).
    mode_t file_mode = 0640;
    // How often an idle drain looks at the queue before it parks (default 1 ms).
    std::chrono::microseconds idle_poll{1000};
    // Threads that serialize records (default 1: the I/O thread; see WriterOptions).
    std::size_t serializer_threads = 1;
    // Where lines go (default: the file TensorRT-LLM's writer writes; a KafkaSink, a TeeSink
    // of a file and Kafka, ... see docs/sinks.md). The directory is still needed.
    std::shared_ptr<LineSink> sink{};

    // Set by PerfMetricsWriter itself: the directory is a constructor argument, the stem
    // comes from the kind, and the sizes are TensorRT-LLM's constants (queue 1024, batch 64,
    // shutdown 5 s).
    static constexpr std::string_view fixed_writer_options[] = {
        "directory", "stem", "subject", "queue_capacity", "batch_records", "shutdown_timeout",
        "messages"};
};
static_assert(covers_writer_options<PerfMetricsOptions>());

class PerfMetricsWriter final : public JsonlRecordWriter<PerfMetricsRecord> {
public:
    // TensorRT-LLM's constants: past 1024 queued records submit() drops the newest.
    static constexpr std::size_t queue_capacity = 1024;
    static constexpr std::size_t batch_records = 64;
    static constexpr std::chrono::milliseconds shutdown_timeout{5000};
    static constexpr const char* subject = "performance metrics";

    // `directory` empty: the writer is inert. `kind` names the file ("server" for workers,
    // "disagg" for the disaggregated server); it must be non-empty and made of
    // [A-Za-z0-9._-] (std::invalid_argument otherwise: it becomes part of a file name).
    PerfMetricsWriter(boost::asio::any_io_executor ex, std::filesystem::path directory,
                      std::string kind, PerfMetricsOptions extra = {});
    ~PerfMetricsWriter() override;

    const std::string& kind() const noexcept { return kind_; }

    // The WriterOptions this writer runs with (exposed for tests and tools).
    static WriterOptions writer_options(std::filesystem::path directory, const std::string& kind,
                                        PerfMetricsOptions extra);

protected:
    void serialize(const PerfMetricsRecord& rec, JsonLine& line) override;
    // serialize() reads only its record: serializer_threads > 1 is honoured.
    bool concurrent_serialize() const noexcept override { return true; }
    std::size_t record_bytes(const PerfMetricsRecord& rec) const noexcept override;

private:
    std::string kind_;
};

}  // namespace jsonlw
