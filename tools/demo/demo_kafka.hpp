// jsonlw demo --kafka (tools/demo/demo_kafka.cpp): a KafkaSink per record kind, each producing to
// its own topic of an in-process librdkafka mock cluster, teed (TeeSink) with the kind's
// file sink, so the topic gets exactly the lines the files get; a consumer reads every topic
// back meanwhile, and summarize() compares what it read with the files. Used on the demo's
// loop thread; the sinks run on the writers' I/O threads.
#pragma once

#include "demo_options.hpp"

#include <jsonlw/sinks/line_sink.hpp>

#include <filesystem>
#include <memory>
#include <string_view>

// Set by tools/meson.build: 1 when Meson found librdkafka (the Kafka sink is built).
#ifndef JSONLW_HAVE_KAFKA
#define JSONLW_HAVE_KAFKA 0
#endif

namespace jsonlw::tools {

class KafkaShip {
public:
    // Starts the mock cluster and makes a sink per kind (its producer starts with its writer).
    KafkaShip();
    ~KafkaShip();
    KafkaShip(const KafkaShip&) = delete;
    KafkaShip& operator=(const KafkaShip&) = delete;

    // The sink to give the writer of `kind` (one of demo_kinds): `files` (its own file sink)
    // teed with the kind's Kafka sink. Once per kind, before the writers start.
    std::shared_ptr<LineSink> sink(std::string_view kind, std::shared_ptr<LineSink> files);
    // Starts the consumer that reads every topic back.
    void start();
    // Prints a row per topic; false when a line was lost on the way (or a topic holds
    // something else than the files).
    bool summarize(const std::filesystem::path& out);

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jsonlw::tools
