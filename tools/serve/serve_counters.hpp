// What `jsonlw serve` counts about its HTTP side: connections, requests by how they ended,
// streams. Touched on the server's loop thread only; printed at exit beside the writers'
// accounting (serve_summary.hpp). The invariant the summary checks: every request that began
// (sent at least one byte) has one request line and one response line in the request trace,
// and every admitted generation one raw-output and one perf-metrics record.
#pragma once

#include <cstdint>
#include <map>

namespace jsonlw::serve {

struct ServeCounters {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_refused = 0;  // over --max-connections: closed at once
    std::uint64_t connections_open_max = 0;
    std::uint64_t idle_closed = 0;          // keep-alive connections closed after idling
    std::uint64_t requests = 0;             // requests begun: each is traced (two lines)
    std::map<int, std::uint64_t> by_status;  // responses by HTTP status (0: none was sent)
    std::uint64_t malformed_http = 0;       // 400 before routing: the request did not parse
    std::uint64_t header_timeouts = 0;      // 408: the request did not arrive in time
    std::uint64_t incomplete = 0;           // the client left in the middle of its request
    std::uint64_t generations = 0;          // completions admitted to the engine
    std::uint64_t completed = 0;            // ... whose response was sent whole
    std::uint64_t streams = 0;              // ... of them streamed
    std::uint64_t client_disconnected = 0;  // ... whose client went away before the end
    std::uint64_t shutdown_aborted = 0;     // ... ended by SIGINT/SIGTERM
    std::uint64_t write_timeouts = 0;       // clients dropped for not reading
    std::uint64_t tokens_streamed = 0;      // tokens sent in responses
};

}  // namespace jsonlw::serve
