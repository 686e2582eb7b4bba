// TraceAccounting: the durable request trace's ledger — per-shard offsets and extents, write
// errors — and its sidecar <dir>/_writer/<generation>.json, replaced atomically.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/utc_time.hpp>
#include <jsonlw/writer_stats.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jsonlw::detail {

// "<pid>-<time_ns>-<8 hex>": tells apart two lifetimes that reuse a pid on one shard.
std::string new_generation_id();

struct UnknownExtent {
    std::uint64_t start = 0;    // offset of the failed append's payload
    std::uint64_t landed = 0;   // bytes of it that reached the file
    std::uint64_t records = 0;  // lines those bytes belong to (counted unknown)
};

struct ShardAccount {
    std::string file;  // relative to the trace directory, '/'-separated
    bool opened = false;
    std::uint64_t start_offset = 0;   // where this generation's first append began
    std::uint64_t persisted_end = 0;  // end of its last append that was fsync'ed
    std::uint64_t persisted_records = 0;
    std::uint64_t fragments_isolated = 0;
    std::vector<UnknownExtent> unknown_extents;
};

// Used by the I/O thread (LedgerSink), by the sink's close() when the writer stops, and by the
// thread that publishes the closed sidecar when a close times out (the I/O thread may then
// still be stuck in an append, and may resume): every member function locks `mu_`.
class TraceAccounting {
public:
    TraceAccounting(std::filesystem::path directory, std::string writer_suffix, LogSink log);

    const std::string& generation() const noexcept { return generation_; }
    std::filesystem::path sidecar_path() const;

    // An append of `lines` to `file` (relative) returned `r`.
    void on_append(std::string_view file, const Lines& lines, const AppendResult& r);

    bool publication_due(std::chrono::steady_clock::time_point now,
                         std::chrono::steady_clock::duration interval) const noexcept;
    // Writes the sidecar (temp file, fsync, rename, directory fsync). False on failure:
    // counted in errors.sidecar_errors and logged (at 1 and every 100). Once a closed one is
    // published, later publications are skipped (true): the closed sidecar is the last word.
    bool publish(const WriterStats& counts, bool closed) noexcept;

private:
    ShardAccount& shard(std::string_view file);
    void build(LineBuffer& out, const WriterStats& counts, bool closed);
    void log(LogLevel level, std::string_view msg) const noexcept;

    std::filesystem::path directory_;
    std::string writer_suffix_;
    LogSink log_;
    std::string generation_;
    WallClock::time_point started_at_;
    long pid_;

    std::vector<ShardAccount> shards_;
    std::unordered_map<std::string, std::size_t> shard_index_;
    std::uint64_t write_errors_ = 0;
    std::optional<std::string> last_error_;
    std::uint64_t sidecar_errors_ = 0;
    std::uint64_t sequence_ = 0;
    std::optional<std::chrono::steady_clock::time_point> last_publish_;
    bool closed_ = false;
    LineBuffer buffer_;
    mutable std::mutex mu_;
};

}  // namespace jsonlw::detail
