// PerfMetricsWriter: per-request performance metrics as JSON Lines, the C++ counterpart of
// TensorRT-LLM's PerfMetricsJsonlWriter. A configuration of JsonlRecordWriter: the base owns
// the queue, batching, I/O thread, accounting and logs; this class fixes the constants and
// gives it PerfMetricsEncoder (a PerfMetricsRecord as a line: serialize_perf_metrics()).
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
#include <jsonlw/perf_metrics_encoder.hpp>
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
#include <utility>

namespace jsonlw {

// The engine's options (WriterOptions, whose defaults are those of TensorRT-LLM's writer), for
// everything an embedder may set; the writer has no field of its own yet. PerfMetricsWriter
// sets the rest itself and ignores what the fields below say: `directory` (a constructor
// argument), `stem` (from the kind), `subject`, `messages` and TensorRT-LLM's constants
// queue_capacity (1024), batch_records (64) and shutdown_timeout (5 s). `sink` may name another
// destination than the file TensorRT-LLM's writer writes (a KafkaSink, a TeeSink of a file and
// Kafka: docs/sinks.md).
struct PerfMetricsOptions : WriterOptions {};

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
    // The engine's options alone: what {.log = …} (designated initializers name only
    // WriterOptions' fields) selects.
    PerfMetricsWriter(boost::asio::any_io_executor ex, std::filesystem::path directory,
                      std::string kind, WriterOptions extra)
        : PerfMetricsWriter(std::move(ex), std::move(directory), std::move(kind),
                            PerfMetricsOptions{std::move(extra)})
    {
    }

    const std::string& kind() const noexcept { return kind_; }

    // The WriterOptions this writer runs with (exposed for tests and tools).
    static WriterOptions writer_options(std::filesystem::path directory, const std::string& kind,
                                        PerfMetricsOptions extra);

private:
    std::string kind_;
};

}  // namespace jsonlw
