// The output folder of `jsonlw demo` and `jsonlw serve` (output_dir.hpp).
#include "output_dir.hpp"

#include "demo_options.hpp"

#include <cstdio>

namespace jsonlw::tools {

bool fresh_output_dir(const std::filesystem::path& out, const char* command)
{
    std::error_code ec;
    const auto writers_json = out / "writers.json";
    if (std::filesystem::is_regular_file(writers_json, ec))
        std::filesystem::remove(writers_json, ec);
    for (const char* sub : demo_kinds) {
        const auto dir = out / sub;
        if (!std::filesystem::exists(dir, ec)) continue;
        std::filesystem::remove_all(dir, ec);
        if (ec) {
            std::fprintf(stderr, "jsonlw %s: cannot remove the earlier run's %s: %s\n", command,
                         dir.c_str(), ec.message().c_str());
            return false;
        }
        std::fprintf(stderr, "jsonlw %s: removed the earlier run's %s\n", command, dir.c_str());
    }
    std::filesystem::create_directories(out, ec);
    if (ec) {
        std::fprintf(stderr, "jsonlw %s: cannot create %s: %s\n", command, out.c_str(),
                     ec.message().c_str());
        return false;
    }
    return true;
}

}  // namespace jsonlw::tools
