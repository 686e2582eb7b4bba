// The typed records behind the configured writers' workloads (runs.hpp: WriterWorkload): a
// raw output's shape and how it is fed to RawOutputWriter's hook, shared by the throughput,
// serialization and by-hand runs.
#pragma once

#include "writer_harness.hpp"

#include <jsonlw/raw_output_writer.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace bench {

// One output of the raw-output workload: its text, token ids and where the 4 chunks split.
struct RawOutputShape {
    std::string text;
    std::vector<std::int32_t> tokens;
    std::array<std::size_t, 5> text_at{};
    std::array<std::size_t, 5> token_at{};
};

constexpr std::uint64_t raw_output_first_id = 1'000'000'000;  // fixed-width ids

// The record the writer's hook builds from the output's 4 chunks (for serialize() alone).
jsonlw::RawOutputRecord raw_output_record(const RawOutputShape& o);

// The hook calls one output takes: 3 chunks, then the final one.
void feed_output(jsonlw::RawOutputWriter& w, const RawOutputShape& o, std::uint64_t id);

// Overflow::block with a timeout no run reaches: nothing is dropped.
jsonlw::RawOutputOptions raw_output_options(const std::filesystem::path& dir, LogTally& logs);


}  // namespace bench
