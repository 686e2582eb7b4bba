// What `jsonlw demo`'s options make of its snapshot stage and its three writers: the stage's
// configuration, the retention of every file sink, and each writer's options (format, chain,
// capture, envelope, the slow-disk seam, its sink). Free functions, called once by the
// in-process demo's constructor and by `jsonlw serve`'s writers (tools/serve/serve_writers.hpp).
#pragma once

#include "demo_options.hpp"

#include <jsonlw/file_io.hpp>
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/request_trace_writer.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <memory>

namespace jsonlw::tools {

// The OTLP resource's service.name of the three writers (--format otlp).
inline constexpr const char* demo_service_name = "jsonlw-demo";

snapshot::SnapshotConfig demo_stage_config(const DemoOptions& o);
Retention demo_retention(const DemoOptions& o);

// `sink` is where the writer's lines go: its file sink, or that teed with Kafka.
RawOutputOptions demo_raw_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                  std::shared_ptr<LineSink> sink);
RequestTraceOptions demo_trace_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                       std::shared_ptr<LineSink> sink);
// Rotation is the perf-metrics writer's alone (its FileSink's options): the other two write
// hour folders.
PerfMetricsOptions demo_perf_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                     std::shared_ptr<LineSink> sink);

}  // namespace jsonlw::tools
