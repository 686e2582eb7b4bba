// SinkRig: a file sink driven directly, as a writer's I/O thread drives it — start() with a
// SinkContext in a temp dir, then append() groups of numbered lines — for scenarios about
// what lands on disk, with no queue or timing in between.
#pragma once

#include "files.hpp"
#include "log_capture.hpp"
#include "seam_file_io.hpp"
#include "temp_dir.hpp"

#include <jsonlw/sinks/line_sink.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <string>

namespace jsonlw_test {

// {"id":i} for i in [from, from + n), one per line: 9 bytes each for ids 0..9, 10 for 10..99.
inline std::string numbered(int from, int n)
{
    std::string s;
    for (int i = from; i < from + n; ++i) s += "{\"id\":" + std::to_string(i) + "}\n";
    return s;
}

struct SinkRig {
    TempDir dir;
    LogCapture logs;
    std::shared_ptr<SeamFileIo> seam = std::make_shared<SeamFileIo>();
    jsonlw::SinkContext ctx;

    explicit SinkRig(jsonlw::Durability durability = jsonlw::Durability::none)
    {
        ctx.directory = dir.path();
        ctx.stem = "t";
        ctx.subject = "test";
        ctx.host = "h";
        ctx.pid = 42;
        ctx.durability = durability;
        ctx.file_io = seam;
        ctx.log = logs.sink();
    }

    void start(jsonlw::LineSink& sink) { REQUIRE_FALSE(sink.start(ctx)); }

    // Appends records [from, from + n) under `key` and returns what the sink reported.
    static jsonlw::AppendResult put(jsonlw::LineSink& sink, std::string_view key, int from, int n)
    {
        const std::string bytes = numbered(from, n);
        return sink.append(key, jsonlw::Lines{bytes, static_cast<std::size_t>(n), 0});
    }
};

}  // namespace jsonlw_test
