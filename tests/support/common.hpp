// Everything an integration test TU needs.
#pragma once

#include "files.hpp"
#include "harness.hpp"
#include "io_runner.hpp"
#include "log_capture.hpp"
#include "options.hpp"
#include "seam_file_io.hpp"
#include "temp_dir.hpp"
#include "test_writer.hpp"
#include "wait.hpp"

#include <jsonlw/jsonlw.hpp>
