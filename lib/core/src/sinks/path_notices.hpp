// PathNotices: the warnings a file sink logs when a file it writes was removed or moved away
// under it — once per kind (later ones are only counted, in FileSinkCounters). Owned by a
// file sink (FileSink, PartitionedFileSink); used on its I/O thread.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <fmt/format.h>

#include <string>

namespace jsonlw::detail {

class PathNotices {
public:
    void notice(const SinkContext& ctx, const std::string& path, bool removed) noexcept
    {
        bool& logged = removed ? removed_ : moved_;
        if (logged) return;
        logged = true;
        try {
            ctx.write_log(LogLevel::warning,
                          removed ? fmt::format("{} JSONL file {} was removed; writing a new one "
                                                "there (the batch that went into the removed "
                                                "one again); later removals are only counted",
                                                ctx.subject, path)
                                  : fmt::format("{} JSONL file {} was moved away; writing a new "
                                                "one there; later moves are only counted",
                                                ctx.subject, path));
        } catch (...) {
            // Out of memory: the counters still tell.
        }
    }

private:
    bool removed_ = false, moved_ = false;
};

}  // namespace jsonlw::detail
