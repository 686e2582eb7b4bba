// One HTTP/1.1 connection of `jsonlw serve` (docs/serving.md), after the Beast server examples'
// session (boostorg/beast example/http/server/async/http_server_async.cpp): it owns its socket,
// its read buffer and Beast's request parser, reads requests one after another (keep-alive,
// pipelined bytes kept), routes each, and answers — a whole body, or a Server-Sent Event stream
// in chunked transfer encoding fed by its Generation. Bytes are read throughout a generation,
// so a client that goes away is seen at once and its generation ended as client_disconnected.
// One deadline timer bounds each phase: idle (no request yet), request (its header and body
// must arrive), write (a client that reads nothing). Created by the ServeApp's acceptor and
// run on the server's loop thread only; it lives while an operation of its own holds it.
#pragma once

#include "generation.hpp"
#include "generation_response.hpp"
#include "model_server.hpp"
#include "serve_options.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace jsonlw::serve {

class HttpSession;

// The open sessions, for SIGINT/SIGTERM (loop thread only).
class SessionSet {
public:
    void add(HttpSession* s, std::weak_ptr<HttpSession> w) { sessions_.emplace(s, std::move(w)); }
    void remove(HttpSession* s) noexcept { sessions_.erase(s); }
    std::size_t size() const noexcept { return sessions_.size(); }
    std::vector<std::shared_ptr<HttpSession>> all() const;

private:
    std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions_;
};

class HttpSession final : public std::enable_shared_from_this<HttpSession>,
                          public GenerationListener {
public:
    HttpSession(boost::asio::ip::tcp::socket socket, ModelServer& server, const ServeOptions& o,
                SessionSet& sessions);
    ~HttpSession();

    void start();
    // SIGINT/SIGTERM: a generation in flight ends (its stream closed, recorded as aborted), a
    // request half read is recorded, an idle connection closes.
    void shutdown();
    // Past the shutdown's deadline: closed now, whatever is under way.
    void force_close();
    void on_generation_progress() override;

private:
    enum class Phase { none, idle, request, write, linger };
    using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

    void await_request();
    void read_more();
    void on_read(boost::system::error_code ec, std::size_t n);
    void parse();
    void reject_unparsed(boost::system::error_code ec);
    void dispatch();
    RequestInfo request_info(bool header_fields = false);
    void generate(Endpoint endpoint, RequestInfo&& info);
    void respond(RequestInfo&& info, int status, std::string body, ExchangeEnd end,
                 std::string_view extra_headers = {});
    void flush();
    void on_written(boost::system::error_code ec);
    void response_done();
    void peer_gone(const char* why);
    void linger();
    void close();
    void arm(std::chrono::milliseconds d, Phase p);
    void disarm();
    void on_deadline(Phase p);

    boost::asio::ip::tcp::socket socket_;
    ModelServer& server_;
    const ServeOptions& o_;
    SessionSet& sessions_;
    boost::asio::steady_timer deadline_;
    boost::beast::flat_buffer buffer_;
    std::optional<Parser> parser_;
    std::string peer_;

    bool reading_ = false;            // a read is in flight
    bool parsing_ = false;            // between requests: bytes are a request's
    bool request_began_ = false;      // its first byte came
    bool continue_sent_ = false;      // "100 Continue" answered an Expect header
    bool keep_alive_ = true;
    bool closed_ = false;
    bool lingering_ = false;          // our side shut down; the client's bytes discarded
    bool close_after_write_ = false;
    bool response_complete_ = false;  // every byte of the response is queued
    ServeClock::time_point first_byte_{};
    Phase phase_ = Phase::none;
    std::uint64_t timer_gen_ = 0;

    std::string out_;      // bytes queued behind the write in flight
    std::string writing_;  // the write in flight
    bool write_in_flight_ = false;

    std::shared_ptr<Generation> gen_;  // the generation this connection answers
    std::string json_body_;            // a whole response's body, for the trace
    GenerationResponse answer_;        // gen_'s bytes as its tokens settle
};

}  // namespace jsonlw::serve
