// Checks a durable RequestTraceWriter's shards against its accounting sidecar.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace jsonlw {

// One shard of the sidecar, as read back.
struct ShardVerification {
    std::string file;                     // relative to the trace directory, as in the sidecar
    std::uint64_t persisted_records = 0;  // what the sidecar says this generation persisted
    std::uint64_t records = 0;            // lines of [start_offset, persisted_end) that parse
    std::uint64_t bad = 0;                // non-blank lines there that do not parse as JSON
    std::string error;                    // why the range could not be read (empty if it was)
    bool consistent = false;              // read, records == persisted_records, bad == 0
};

struct VerifyReport {
    // The sidecar was read and every shard is consistent.
    bool consistent = false;
    // The sidecar's own numbers add up: submitted == persisted + dropped + unknown + pending,
    // and the shards' persisted_records sum to persisted. Informational: a batch that close
    // gave up on but that landed later is counted unknown while its lines are in a shard.
    bool counts_consistent = false;
    std::uint64_t records = 0;  // over all shards
    std::uint64_t bad = 0;
    std::string error;  // the sidecar could not be read or is not this schema
    std::vector<ShardVerification> shards;
};

// For each shard of the sidecar (<dir>/_writer/<generation>.json): reads the bytes
// [start_offset, persisted_end) of <dir>/<file>, blanks out its unknown extents, and parses
// every non-blank line with simdjson. Never throws for bad files; reports them.
VerifyReport verify_request_trace_shards(const std::filesystem::path& sidecar_file);

}  // namespace jsonlw
