// The jsonlw command's subcommands (tools/main.cpp dispatches). Each takes the arguments after
// its name and returns the process exit status documented in `jsonlw --help`.
#pragma once

#include <span>

namespace jsonlw::tools {

int demo_main(std::span<char*> args);      // tools/demo.cpp
int report_main(std::span<char*> args);    // tools/report*.cpp
int validate_main(std::span<char*> args);  // tools/validate.cpp

}  // namespace jsonlw::tools
