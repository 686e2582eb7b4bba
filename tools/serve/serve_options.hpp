// `jsonlw serve`'s command line (documented in `jsonlw help serve` and docs/serving.md): where
// it listens, the HTTP limits and timeouts, whether the writers run, and the model's options,
// which are the in-process demo's (DemoOptions: --vocab, --concurrency, --step-us, --out, ...).
#pragma once

#include "../demo/demo_options.hpp"
#include "openai_api.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace jsonlw::serve {

struct ServeOptions {
    tools::DemoOptions model{};         // the engine, the stage, --out and the writers' options
    std::string host = "127.0.0.1";     // --listen HOST:PORT (loopback unless told otherwise)
    std::uint16_t port = 8000;          // ... port 0 picks a free one, printed at start
    bool writers = true;                // --writers on|off: off runs no writer at all (and
                                        // captures no first-gen rows): the cost baseline
    // --writer-flush-ms: how long a record may wait for its batch to fill; past it the batch
    // is written (0: at once, one hand-off per record when the load is light)
    std::chrono::milliseconds writer_flush{20};
    std::size_t max_connections = 10000;  // --max-connections N: past it, new ones are closed
    std::size_t header_limit = 16 * 1024;  // --header-limit BYTES: a larger header block: 431
    std::size_t body_limit = 1024 * 1024;  // --body-limit BYTES: a larger body: 413
    // --header-timeout-ms: a request must arrive whole this long after its first byte (408)
    std::chrono::milliseconds request_timeout{10000};
    // --idle-timeout-ms: a keep-alive connection with no request for this long is closed
    std::chrono::milliseconds idle_timeout{60000};
    // --write-timeout-ms: a client that takes no bytes for this long is dropped (its stream
    // recorded as client_disconnected)
    std::chrono::milliseconds write_timeout{30000};
    // --shutdown-timeout-ms: the writers' close deadline after SIGINT/SIGTERM
    std::chrono::milliseconds shutdown_timeout{5000};
    ApiLimits api{};
};

// Parses the arguments after "serve"; the model's options go through parse_demo_options.
// On an error returns false with a one-line reason.
bool parse_serve_options(std::span<char*> args, ServeOptions& o, std::string& error);

}  // namespace jsonlw::serve
