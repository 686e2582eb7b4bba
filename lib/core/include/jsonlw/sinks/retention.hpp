// Retention: how many of a file sink's closed files stay on disk — the roles of spdlog's
// rotating_file_sink max_files, Python's RotatingFileHandler backupCount and logrotate's
// rotate / maxsize / maxage (docs/sinks.md, "Retention: a bounded disk").
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace jsonlw {

// A value type (any thread). The file being written is never touched, only files the sink
// closed — by rotation, reopen(), close(), or (a PartitionedFileSink) an hour that passed or a
// descriptor evicted. Oldest first; every rule that is set applies. Each deletion is counted
// (FileSinkCounters) and the first one per rule is logged. Files of other processes, or of an
// earlier run, are never deleted.
struct Retention {
    // Keep at most this many closed files (0: no limit).
    std::size_t retain_files = 0;
    // Keep at most this many bytes of closed files (0: no limit).
    std::uint64_t retain_bytes = 0;
    // Delete a closed file once it has been closed this long (0: never).
    std::chrono::milliseconds retain_age{0};

    bool any() const noexcept
    {
        return retain_files > 0 || retain_bytes > 0 || retain_age.count() > 0;
    }
};

}  // namespace jsonlw
