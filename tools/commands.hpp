// The jsonlw command's subcommands (tools/main.cpp dispatches). Each takes the arguments after
// its name and returns the process exit status documented in `jsonlw --help`; report_main is
// the report library's, declared in its public header <jsonlw/report/report.hpp>.
#pragma once

#include <span>

namespace jsonlw::tools {

int demo_main(std::span<char*> args);      // tools/serve/demo_http.cpp (--in-process: below)
int in_process_demo_main(std::span<char*> args);  // tools/demo/demo.cpp
int serve_main(std::span<char*> args);     // tools/serve/serve_main.cpp
int validate_main(std::span<char*> args);  // tools/validate.cpp
int verify_main(std::span<char*> args);    // tools/verify.cpp

}  // namespace jsonlw::tools
