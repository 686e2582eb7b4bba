// jsonlw demo --kafka (tools/demo_kafka.cpp): a KafkaJsonWriter per record kind, each
// producing to its own topic of an in-process librdkafka mock cluster, fed with exactly the
// lines the kind's file writer appends (a FileIo tee); a consumer reads every topic back
// meanwhile, and summarize() compares what it read with the files.
#pragma once

#include <jsonlw/file_io.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <filesystem>
#include <memory>
#include <string_view>

// Set by tools/meson.build: 1 when Meson found librdkafka (the Kafka sink is built).
#ifndef JSONLW_HAVE_KAFKA
#define JSONLW_HAVE_KAFKA 0
#endif

namespace jsonlw::tools {

// The demo's three writers, in the order of the summary's rows; writers.json and the Kafka
// topics (jsonlw.<kind>) use them as the kind's name, and they are the folders under --out.
inline constexpr const char* demo_kinds[] = {"raw_output", "request_trace", "perf_metrics"};

class KafkaShip {
public:
    // Starts the mock cluster and creates the producers (not yet started).
    explicit KafkaShip(boost::asio::any_io_executor ex);
    ~KafkaShip();
    KafkaShip(const KafkaShip&) = delete;
    KafkaShip& operator=(const KafkaShip&) = delete;

    // The FileIo to give the file writer of `kind` (one of demo_kinds).
    std::shared_ptr<FileIo> tee(std::string_view kind) const;
    // Before the file writers start: their first line is teed.
    void start();
    // Once the file writers have closed (every line teed): drains and closes the producers.
    void close();
    // Prints a row per topic; false when a line was lost on the way (or a topic holds
    // something else than the files).
    bool summarize(const std::filesystem::path& out);

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jsonlw::tools
