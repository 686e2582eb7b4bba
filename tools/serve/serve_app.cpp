// `jsonlw serve` as a program (serve_app.hpp).
#include "serve_app.hpp"

#include <boost/asio/post.hpp>

#include <pthread.h>
#include <sys/resource.h>

namespace jsonlw::serve {
namespace {

double thread_cpu_seconds()
{
    rusage u{};
    if (getrusage(RUSAGE_THREAD, &u) != 0) return 0;
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

namespace asio = boost::asio;
using asio::ip::tcp;

ServeApp::ServeApp(const ServeOptions& o)
    : o_(o), server_(loop_, o), acceptor_(loop_), signals_(loop_), shutdown_timer_(loop_)
{
    // Many concurrent connections need descriptors: take the hard limit.
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

std::uint16_t ServeApp::listen()
{
    const tcp::endpoint ep(asio::ip::make_address(o_.host), o_.port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen(asio::socket_base::max_listen_connections);
    return acceptor_.local_endpoint().port();
}

ServeOutcome ServeApp::run(bool handle_signals)
{
    pthread_setname_np(pthread_self(), "serve-loop");
    started_ = ServeClock::now();
    const double cpu0 = thread_cpu_seconds();
    server_.start();
    if (handle_signals) {
        signals_.add(SIGINT);
        signals_.add(SIGTERM);
        signals_.async_wait([this](boost::system::error_code ec, int) {
            if (!ec) begin_shutdown();
        });
    }
    accept();
    loop_.run();  // until the shutdown's sessions are gone (await_sessions stops it)
    ServeOutcome out;
    out.writers = server_.writers_on();
    out.writers_outcome = server_.finish(std::chrono::seconds(10));
    out.seconds = std::chrono::duration<double>(ServeClock::now() - started_).count();
    out.counters = server_.counters();
    out.steps = server_.steps();
    out.stage = server_.stage_stats();
    out.forced_closes = forced_closes_;
    out.loop_cpu_seconds = (loop_cpu_at_stop_ < 0 ? thread_cpu_seconds() : loop_cpu_at_stop_) - cpu0;
    return out;
}

void ServeApp::request_stop()
{
    asio::post(loop_, [this] { begin_shutdown(); });
}

void ServeApp::request_stop_when_idle(std::chrono::milliseconds grace)
{
    asio::post(loop_, [this, deadline = ServeClock::now() + grace] { stop_when_idle(deadline); });
}

void ServeApp::stop_when_idle(ServeClock::time_point deadline)
{
    if (server_.live_generations() == 0 || ServeClock::now() >= deadline) {
        begin_shutdown();
        return;
    }
    shutdown_timer_.expires_after(std::chrono::milliseconds(2));
    shutdown_timer_.async_wait([this, deadline](boost::system::error_code ec) {
        if (!ec) stop_when_idle(deadline);
    });
}

void ServeApp::accept()
{
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
        if (stopping_) return;
        if (!ec) {
            ServeCounters& c = server_.counters();
            if (sessions_.size() >= o_.max_connections) {
                ++c.connections_refused;
                boost::system::error_code ignored;
                socket.close(ignored);
            } else {
                ++c.connections_accepted;
                std::make_shared<HttpSession>(std::move(socket), server_, o_, sessions_)->start();
                c.connections_open_max = std::max<std::uint64_t>(c.connections_open_max, sessions_.size());
            }
        }
        // EMFILE and the like: keep accepting; the next attempt may find a descriptor.
        accept();
    });
}

void ServeApp::begin_shutdown()
{
    if (stopping_) return;
    stopping_ = true;
    loop_cpu_at_stop_ = thread_cpu_seconds();
    signals_.cancel();
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (const auto& s : sessions_.all()) s->shutdown();
    server_.stop_engine();
    await_sessions(ServeClock::now() + o_.shutdown_timeout);
}

// The sessions flush their last bytes and close; past the deadline the rest are closed.
void ServeApp::await_sessions(ServeClock::time_point deadline)
{
    if (sessions_.size() == 0 || ServeClock::now() >= deadline) {
        forced_closes_ = sessions_.size();
        for (const auto& s : sessions_.all()) s->force_close();
        loop_.stop();
        return;
    }
    shutdown_timer_.expires_after(std::chrono::milliseconds(5));
    shutdown_timer_.async_wait([this, deadline](boost::system::error_code) { await_sessions(deadline); });
}

}  // namespace jsonlw::serve
