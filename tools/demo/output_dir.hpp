// The output folder of `jsonlw demo` and `jsonlw serve`: an earlier run's three writer
// folders (and writers.json) are removed first, since appending to them would mix two runs
// in one report; nothing else under it is touched.
#pragma once

#include <filesystem>

namespace jsonlw::tools {

// Removes the earlier run's folders and creates `out`; false, with the reason printed to
// stderr under "jsonlw <command>:", when either fails.
bool fresh_output_dir(const std::filesystem::path& out, const char* command);

}  // namespace jsonlw::tools
