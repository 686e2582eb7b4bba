// `jsonlw serve` as a program: the loop (an io_context on the thread that calls run()), the
// ModelServer, the acceptor on --listen, the open sessions, and the shutdown that SIGINT,
// SIGTERM or request_stop() begins — stop accepting, end every open stream and request
// (recorded as aborted, counted), let the engine finish, close the writers within their
// timeout — ending in a ServeOutcome to print (serve_summary.hpp). `jsonlw serve` runs it on
// its main thread; `jsonlw demo` runs it on a second thread beside its client.
#pragma once

#include "http_session.hpp"
#include "model_server.hpp"
#include "serve_options.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>

namespace jsonlw::serve {

struct ServeOutcome {
    double seconds = 0;  // from listen() to the end of the shutdown
    ServeCounters counters{};
    bool writers = true;
    WritersOutcome writers_outcome{};
    std::uint64_t steps = 0;
    snapshot::SnapshotStats stage{};
    std::uint64_t forced_closes = 0;  // sessions still open at the shutdown deadline
    // CPU time of the loop's thread (user + system) from run() to the shutdown's start: the
    // HTTP side, the generations, and the writers' work that runs on the loop (submits,
    // drain coroutines); not the writers' I/O threads, the engine or the stage's workers.
    double loop_cpu_seconds = 0;
};

class ServeApp {
public:
    explicit ServeApp(const ServeOptions& o);

    // Binds and listens; returns the port (the one picked, for port 0). Throws
    // boost::system::system_error when the address cannot be bound.
    std::uint16_t listen();
    // Serves until SIGINT/SIGTERM (with handle_signals) or request_stop(), then shuts down.
    ServeOutcome run(bool handle_signals);
    // Begins the shutdown (any thread).
    void request_stop();
    // Begins it once no generation is under way, or after `grace` (any thread): for a client
    // that is done sending — its last closed streams are still on their way to the loop.
    void request_stop_when_idle(std::chrono::milliseconds grace);

private:
    void accept();
    void begin_shutdown();
    void await_sessions(ServeClock::time_point deadline);
    void stop_when_idle(ServeClock::time_point deadline);

    const ServeOptions& o_;
    SessionSet sessions_;  // outlives the loop, whose last handlers may hold sessions
    boost::asio::io_context loop_;
    ModelServer server_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::signal_set signals_;
    boost::asio::steady_timer shutdown_timer_;
    bool stopping_ = false;
    double loop_cpu_at_stop_ = -1;
    std::uint64_t forced_closes_ = 0;
    ServeClock::time_point started_{};
};

}  // namespace jsonlw::serve
