// The raw-output writer the snapshot tests feed: a RawOutputWriter with default options in a
// temp dir, started, on an IoRunner whose thread the test starts (after building what it
// posts to the loop). A Catch2 fixture (TEST_CASE_METHOD); members in destruction order:
// the writer first, the io_context after it.
#pragma once

#include <jsonlw/raw_output_writer.hpp>

#include "io_runner.hpp"
#include "temp_dir.hpp"

namespace jsonlw_test {

struct RawOutputInTempDir {
    RawOutputInTempDir() : writer(loop.executor(), options_in(dir)) { writer.start(); }

    TempDir dir;
    IoRunner loop;
    jsonlw::RawOutputWriter writer;

private:
    static jsonlw::RawOutputOptions options_in(const TempDir& d)
    {
        jsonlw::RawOutputOptions o;
        o.directory = d.path();
        return o;
    }
};

}  // namespace jsonlw_test
