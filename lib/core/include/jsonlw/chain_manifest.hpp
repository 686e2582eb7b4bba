// The chain manifest: `<directory>/<stem>.chain`, one JSON line per file event of a writer
// whose lines carry a hash chain (ChainSink writes it; `jsonlw verify` and ChainSink::start
// read it). Its lines, in the order the events happened (docs/chain.md, "The manifest"):
//   {"event":"open","file":"<rel>","prev":"<V>","mode":"sha256|hmac-sha256","host":…,"pid":…,"time":"<UTC>"}
//   {"event":"close","file":"<rel>","records":N,"last":"<V>"}
//   {"event":"delete","file":"<rel>","records":N,"last":"<V>"}
// `file` is relative to the manifest's folder; `prev` is the value the file's first line chains
// onto; `last` the value of the file's last line when it was closed or deleted.
#pragma once

#include <jsonlw/line_chain.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace jsonlw {

struct ChainManifestEvent {
    enum class Kind { open, close, remove };  // "open", "close", "delete"
    Kind kind = Kind::open;
    std::string file;
    std::string prev;             // open
    ChainMode mode = ChainMode::none;  // open
    std::uint64_t records = 0;    // close, delete
    std::string last;             // close, delete
    std::size_t line = 0;         // 1-based line of the manifest
};

// What read_chain_manifest() found: the events, and the first line it could not read (a torn
// last line after a crash is skipped and named here, not an error).
struct ChainManifest {
    std::vector<ChainManifestEvent> events;
    std::optional<std::size_t> bad_line;
    std::string bad_reason;
};

// Reads a manifest (missing file: no events). Throws std::runtime_error when it exists but
// cannot be read.
ChainManifest read_chain_manifest(const std::filesystem::path& path);

// The value of `file`'s last complete line that carries a chain key (read from the file's
// tail, at most its last 1 MiB), or nullopt when there is none (or the file cannot be read).
std::optional<std::string> read_last_chain_value(const std::filesystem::path& file);

// The manifest's path for a writer: <directory>/<stem>.chain.
std::filesystem::path chain_manifest_path(const std::filesystem::path& directory,
                                          const std::string& stem);

const char* chain_mode_name(ChainMode mode) noexcept;  // "none", "sha256", "hmac-sha256"
// nullopt for any other name.
std::optional<ChainMode> parse_chain_mode(std::string_view name) noexcept;

}  // namespace jsonlw
