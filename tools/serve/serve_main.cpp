// `jsonlw serve`: the OpenAI-compatible server on --listen until SIGINT/SIGTERM, then its
// accounting (docs/serving.md).
#include "../commands.hpp"
#include "../demo/output_dir.hpp"
#include "serve_app.hpp"
#include "serve_summary.hpp"

#include <cstdio>
#include <filesystem>

namespace jsonlw::tools {

int serve_main(std::span<char*> args)
{
    serve::ServeOptions o;
    std::string error;
    if (!serve::parse_serve_options(args, o, error)) {
        std::fprintf(stderr, "jsonlw serve: %s (see jsonlw help serve)\n", error.c_str());
        return 2;
    }
    if (!fresh_output_dir(o.model.out, "serve")) return 2;
    try {
        serve::ServeApp app(o);
        const std::uint16_t port = app.listen();
        std::printf("jsonlw serve: listening on http://%s:%u (writers %s, out %s)\n",
                    o.host.c_str(), unsigned(port), o.writers ? "on" : "off",
                    o.model.out.c_str());
        std::fflush(stdout);
        const serve::ServeOutcome r = app.run(true);
        return serve::print_serve_summary(stdout, o, r);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jsonlw serve: %s\n", e.what());
        return 1;
    }
}

}  // namespace jsonlw::tools
