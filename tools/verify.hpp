// `jsonlw verify DIR [--key FILE]`: recomputes the hash chain of every writer whose manifest
// (<stem>.chain, <jsonlw/chain_manifest.hpp>) lies under DIR, file by file in the manifest's
// order, and reports the first place where it breaks (docs/chain.md, "Verifying a directory").
#pragma once

#include <jsonlw/line_chain.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace jsonlw::tools {

// The first place a chain breaks. `line` is 1-based; 0 for a break of a whole file (deleted,
// inserted) or of the manifest itself.
struct ChainVerifyBreak {
    std::string file;  // relative to DIR
    std::size_t line = 0;
    // edited, deleted_or_inserted, reordered, truncated, missing_key, not_json_object (a line,
    // as verify_chain says); "deleted file", "inserted file", "broken link" (a file that
    // starts from no value of an earlier file), "manifest" (an unreadable manifest line).
    std::string kind;
    std::string detail;
};

// One writer's chain that verified.
struct ChainWriterSummary {
    std::string manifest;  // relative to DIR
    ChainMode mode = ChainMode::none;
    std::size_t files = 0;          // present and verified
    std::uint64_t lines = 0;        // lines of those files
    std::size_t deleted_files = 0;  // deleted by retention (recorded in the manifest)
    std::string last;               // the chain's last value
};

struct ChainVerifyResult {
    std::vector<ChainWriterSummary> writers;  // those verified before the first break
    std::optional<ChainVerifyBreak> broken;
    std::string error;  // set with exit_status 2: no manifest, a key missing, unreadable
    int exit_status = 0;
};

// Verifies every manifest under `dir` (recursively, sorted); stops at the first break. Never
// throws for bad content.
ChainVerifyResult verify_chain_directory(const std::filesystem::path& dir,
                                         const std::optional<ChainKey>& key);

// What `jsonlw verify` prints for `r`: the break as "<file>:<line>: <kind>: <detail>" (no
// ":<line>" for a whole file), or one summary line per writer.
std::string format_chain_verify(const ChainVerifyResult& r);

int verify_main(std::span<char*> args);

}  // namespace jsonlw::tools
