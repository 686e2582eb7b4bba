// Rotation: the one place a writer's file is configured over time — when it rotates, the
// suffix it carries while written, and which closed files stay (Retention). WriterOptions and
// FileSinkOptions each hold one (`rotation`); docs/shipping.md and docs/sinks.md.
#pragma once

#include <jsonlw/sinks/retention.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace jsonlw {

// A value type (any thread), read once by the FileSink it configures. Applies to the default
// layout (one file per writer); a write_batch() override or a sink with a layout of its own (the
// raw-output and request-trace writers' hour folders) ignores it.
struct Rotation {
    // Rotate once the file holds this many bytes (0: never). A group of lines is split at line
    // boundaries so that no file exceeds it; a single longer line gets a file of its own.
    std::uint64_t rotate_bytes = 0;
    // Rotate once the file has been open this long, whether lines arrive or not (0: never).
    std::chrono::milliseconds rotate_interval{0};
    // The suffix the file being written carries until it is closed or rotated, when a rename
    // drops it ("….jsonl.open" -> "….jsonl"): loaders that glob *.jsonl never read a file
    // still being written. Default (nullopt): ".open" when rotate_bytes or rotate_interval is
    // set, none otherwise. With a suffix or rotation files are numbered,
    // <stem>-<host>-<pid>-<UTC at open>-<000000, 000001, …>.jsonl, and start() renames the
    // files of this stem and host that a process no longer running left with the suffix (a
    // crash), so they get shipped too; without, the one file is <stem>-<host>-<pid>-<UTC>.jsonl.
    std::optional<std::string> open_suffix{};
    // Which closed files stay on disk (default: all). Closed files exist only with rotation or
    // reopen() under numbered names (rotate_bytes, rotate_interval or an open suffix).
    Retention retention{};
};

}  // namespace jsonlw
