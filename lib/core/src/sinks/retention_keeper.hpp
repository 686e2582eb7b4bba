// RetentionKeeper: which of a sink's closed files stay on disk (Retention), oldest first.
#pragma once

#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/line_sink.hpp>

#include "sink_counters.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace jsonlw::detail {

// Owned by a file sink and called from its I/O thread only. The sink reports each file it
// closes (sealed(); tracked with or without rules, so that audit() can tell which of them
// someone else removed) and each it writes again (opened()); enforce() deletes closed files,
// oldest first, until every rule of the Retention holds, and counts each deletion in the
// sink's counters (the first per rule is logged). A deleted file's folder is removed when it
// is left empty, unless it is the writer's directory. Never throws.
class RetentionKeeper {
public:
    using clock = std::chrono::steady_clock;

    // `ctx` (the sink's) and `counters` outlive the keeper.
    RetentionKeeper(const Retention& rules, const SinkContext& ctx, SinkCounters& counters);

    bool active() const noexcept { return rules_.any(); }
    // `path` was closed for good now, holding `records` more records of ours.
    void sealed(const std::filesystem::path& path, std::uint64_t records, clock::time_point now) noexcept;
    // `path` is being written again (a late record for a sealed hour): not a candidate now.
    void opened(const std::string& path) noexcept;
    // The files deleted since the last call, for the sink's files() list.
    std::vector<std::string> take_deleted() noexcept;
    void enforce(clock::time_point now) noexcept;
    // When the next closed file passes retain_age (nullopt: none will).
    std::optional<clock::time_point> next_expiry() const noexcept;
    // Closed files that no longer exist (removed or moved by someone else): their records
    // are counted as removed and the files forgotten. Called when the sink closes.
    void audit() noexcept;

private:
    struct Entry {
        std::string path;
        std::uint64_t records = 0;
        clock::time_point sealed_at{};
        bool open = false;   // written again since it was sealed
        bool gone = false;   // deleted or found missing: skipped, erased in compact()
        std::uint64_t bytes = 0;  // its size when sealed
    };
    enum Rule { by_files, by_bytes, by_age, rule_count };

    void remove(Entry& e, Rule rule) noexcept;
    void compact() noexcept;

    Retention rules_;
    const SinkContext& ctx_;
    SinkCounters& counters_;
    std::vector<Entry> entries_;  // in the order they were sealed: oldest first
    std::unordered_map<std::string, std::size_t> index_;  // path -> entries_ position
    std::vector<std::string> deleted_;
    bool logged_[rule_count] = {false, false, false};
};

}  // namespace jsonlw::detail
