// The options most tests start from: a directory, stem and subject "test", logs captured.
#pragma once

#include "log_capture.hpp"

#include <jsonlw/writer_options.hpp>

#include <filesystem>

namespace jsonlw_test {

inline jsonlw::WriterOptions test_options(const std::filesystem::path& dir, const LogCapture& logs)
{
    jsonlw::WriterOptions o;
    o.directory = dir;
    o.stem = "test";
    o.subject = "test";
    o.log = logs.sink();
    return o;
}

}  // namespace jsonlw_test
