// `jsonlw serve`'s command line (serve_options.hpp).
#include "serve_options.hpp"
#include "../demo/option_number.hpp"

#include <string_view>
#include <utility>
#include <vector>

namespace jsonlw::serve {
namespace {

using tools::option_number;

bool milliseconds(std::string_view s, std::chrono::milliseconds& out)
{
    std::uint64_t ms = 0;
    if (!option_number(s, ms) || ms == 0 || ms > 24ull * 3600 * 1000) return false;
    out = std::chrono::milliseconds(ms);
    return true;
}

// The timeout an option sets, in milliseconds (null: not a timeout option).
std::chrono::milliseconds ServeOptions::*timeout_of(std::string_view flag)
{
    static constexpr std::pair<std::string_view, std::chrono::milliseconds ServeOptions::*> timeouts[] = {
        {"--header-timeout-ms", &ServeOptions::request_timeout},
        {"--idle-timeout-ms", &ServeOptions::idle_timeout},
        {"--write-timeout-ms", &ServeOptions::write_timeout},
        {"--shutdown-timeout-ms", &ServeOptions::shutdown_timeout},
    };
    for (const auto& [name, field] : timeouts)
        if (flag == name) return field;
    return nullptr;
}

}  // namespace

bool parse_serve_options(std::span<char*> args, ServeOptions& o, std::string& error)
{
    std::vector<char*> model_args;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        std::string_view v;
        const auto value = [&] {
            if (i + 1 >= args.size()) {
                error = std::string(a) + " needs a value";
                return false;
            }
            v = args[++i];
            return true;
        };
        const auto bad = [&] {
            error = "bad value for " + std::string(a) + ": " + std::string(v);
            return false;
        };
        if (a == "--listen") {
            if (!value()) return false;
            const auto colon = v.rfind(':');
            if (colon == std::string_view::npos || colon == 0) return bad();
            o.host = std::string(v.substr(0, colon));
            if (!option_number(v.substr(colon + 1), o.port)) return bad();
        } else if (a == "--writers") {
            if (!value()) return false;
            if (v == "on") o.writers = true;
            else if (v == "off") o.writers = false;
            else return bad();
        } else if (a == "--writer-flush-ms") {
            if (!value()) return false;
            std::uint64_t ms = 0;
            if (!option_number(v, ms) || ms > 10000) return bad();
            o.writer_flush = std::chrono::milliseconds(ms);
        } else if (a == "--max-connections") {
            if (!value()) return false;
            if (!option_number(v, o.max_connections) || o.max_connections == 0) return bad();
        } else if (a == "--header-limit") {
            if (!value()) return false;
            if (!option_number(v, o.header_limit) || o.header_limit < 256) return bad();
        } else if (a == "--body-limit") {
            if (!value()) return false;
            if (!option_number(v, o.body_limit) || o.body_limit == 0) return bad();
        } else if (const auto timeout = timeout_of(a)) {
            if (!value()) return false;
            if (!milliseconds(v, o.*timeout)) return bad();
        } else if (a == "--model-name") {
            if (!value()) return false;
            if (v.empty()) return bad();
            o.api.model = std::string(v);
        } else if (a == "--max-tokens-limit") {
            if (!value()) return false;
            if (!option_number(v, o.api.max_tokens) || o.api.max_tokens == 0) return bad();
        } else {
            model_args.push_back(args[i]);
        }
    }
    if (!tools::parse_demo_options(model_args, o.model, error)) return false;
    // What only the in-process simulation does.
    const char* only_in_process = o.model.kafka                       ? "--kafka"
                                  : o.model.slow_disk_us != 0         ? "--slow-disk-us"
                                  : o.model.server_us != 0            ? "--server-us"
                                  : !o.model.summary_json.empty()     ? "--summary-json"
                                  : o.model.thread_stats              ? "--thread-stats"
                                                                      : nullptr;
    if (only_in_process) {
        error = std::string(only_in_process) + " is only for jsonlw demo --in-process";
        return false;
    }
    o.api.max_top_logprobs = o.model.top_k;
    return true;
}

}  // namespace jsonlw::serve
