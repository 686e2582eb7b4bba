// What `jsonlw demo`'s options make of its snapshot stage and its three writers: the stage's
// configuration, the retention of every file sink, and each writer's options (format, chain,
// capture, envelope, the slow-disk seam, its sink teed with Kafka under --kafka). Free
// functions, called once by the Demo's constructor.
#pragma once

#include "demo_kafka.hpp"
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

// `files` is the writer's own file sink; `kafka` null without --kafka.
RawOutputOptions demo_raw_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                  KafkaShip* kafka, std::shared_ptr<LineSink> files);
RequestTraceOptions demo_trace_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                       KafkaShip* kafka, std::shared_ptr<LineSink> files);
// Rotation is the perf-metrics writer's alone (its FileSink's options): the other two write
// hour folders.
PerfMetricsOptions demo_perf_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                     KafkaShip* kafka, std::shared_ptr<LineSink> files);

}  // namespace jsonlw::tools
