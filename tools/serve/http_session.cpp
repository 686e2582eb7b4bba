// One HTTP/1.1 connection of `jsonlw serve` (http_session.hpp).
#include "http_session.hpp"

#include <jsonlw/trace_context.hpp>

#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace jsonlw::serve {
namespace {

namespace http = boost::beast::http;
using boost::system::error_code;

// A traceparent for a request that came without a valid one: random ids, sampled.
TraceContext made_trace_context()
{
    thread_local std::mt19937_64 rng{std::random_device{}()};
    TraceContext tc;
    for (std::uint8_t& b : tc.trace_id) b = std::uint8_t(rng());
    for (std::uint8_t& b : tc.span_id) b = std::uint8_t(rng());
    tc.trace_id.back() |= 1;  // never all zeros (W3C trace-context: invalid)
    tc.span_id.back() |= 1;
    tc.flags = TraceContext::flag_sampled;
    return tc;
}

ExchangeEnd error_end(const ApiError& e, std::string_view loc)
{
    ExchangeEnd end;
    end.http_status = e.status;
    end.body = error_body(e);
    std::vector<std::string> where{std::string(loc)};
    if (e.param) where.push_back(*e.param);
    end.validation_errors = std::vector<TraceValidationError>{
        TraceValidationError{std::move(where), e.code.value_or(e.type), e.message}};
    return end;
}

}  // namespace

std::vector<std::shared_ptr<HttpSession>> SessionSet::all() const
{
    std::vector<std::shared_ptr<HttpSession>> v;
    v.reserve(sessions_.size());
    for (const auto& [p, w] : sessions_)
        if (auto s = w.lock()) v.push_back(std::move(s));
    return v;
}

HttpSession::HttpSession(boost::asio::ip::tcp::socket socket, ModelServer& server,
                         const ServeOptions& o, SessionSet& sessions)
    : socket_(std::move(socket)), server_(server), o_(o), sessions_(sessions),
      deadline_(socket_.get_executor())
{
    error_code ec;
    const auto peer = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("unknown") : peer.address().to_string();
    socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
}

HttpSession::~HttpSession() { sessions_.remove(this); }

void HttpSession::start()
{
    sessions_.add(this, weak_from_this());
    await_request();
}

// --- reading ----------------------------------------------------------------------------

void HttpSession::await_request()
{
    parser_.emplace();
    parser_->header_limit(std::uint32_t(o_.header_limit));
    parser_->body_limit(o_.body_limit);
    parser_->eager(true);
    parsing_ = true;
    request_began_ = false;
    continue_sent_ = false;
    response_complete_ = false;
    json_body_.clear();
    answer_.reset();
    if (buffer_.size() != 0) {
        parse();  // pipelined bytes already here
    } else {
        arm(o_.idle_timeout, Phase::idle);
    }
    if (!closed_) read_more();
}

void HttpSession::read_more()
{
    // While a response is under way the bytes that come are the next request's; past this
    // many, reading pauses (the client is pipelining more than one request's worth).
    if (reading_ || closed_ || buffer_.size() > o_.header_limit + o_.body_limit) return;
    reading_ = true;
    socket_.async_read_some(buffer_.prepare(16 * 1024),
                            [self = shared_from_this()](error_code ec, std::size_t n) {
                                self->on_read(ec, n);
                            });
}

void HttpSession::on_read(error_code ec, std::size_t n)
{
    reading_ = false;
    if (closed_) return;
    if (ec) {
        peer_gone(ec == boost::asio::error::eof ? "eof" : "error");
        return;
    }
    buffer_.commit(n);
    if (lingering_) buffer_.clear();
    else if (parsing_) parse();
    read_more();
}

void HttpSession::parse()
{
    while (parsing_ && !closed_ && buffer_.size() != 0) {
        if (!request_began_) {
            // At least one empty line before a request line is ignored (RFC 9112, 2.2).
            const auto* p = static_cast<const char*>(buffer_.data().data());
            std::size_t crlf = 0;
            while (crlf < buffer_.size() && (p[crlf] == '\r' || p[crlf] == '\n')) ++crlf;
            buffer_.consume(crlf);
            if (buffer_.size() == 0) break;
            request_began_ = true;
            first_byte_ = ServeClock::now();
            arm(o_.request_timeout, Phase::request);
        }
        error_code ec;
        const std::size_t n = parser_->put(buffer_.data(), ec);
        buffer_.consume(n);
        if (ec == http::error::need_more) break;
        if (ec) {
            reject_unparsed(ec);
            return;
        }
        if (parser_->is_header_done() && !continue_sent_ && !parser_->is_done()) {
            continue_sent_ = true;
            const auto expect = parser_->get()[http::field::expect];
            if (boost::beast::iequals(expect, "100-continue")) {
                out_ += "HTTP/1.1 100 Continue\r\n\r\n";
                flush();
            }
        }
        if (parser_->is_done()) {
            dispatch();
            return;
        }
        if (n == 0) break;
    }
}

// The bytes are not an HTTP request we take: answered, recorded, the connection closed.
void HttpSession::reject_unparsed(error_code ec)
{
    ApiError e;
    std::string_view loc = "http";
    if (ec == http::error::header_limit) {
        e = ApiError{431, fmt::format("request header fields exceed {} bytes", o_.header_limit),
                     "invalid_request_error", std::nullopt, "header_too_large"};
        loc = "headers";
    } else if (ec == http::error::body_limit) {
        e = ApiError{413, fmt::format("request body exceeds {} bytes", o_.body_limit),
                     "invalid_request_error", std::nullopt, "body_too_large"};
        loc = "body";
    } else {
        e = ApiError{400, "malformed HTTP request: " + ec.message(), "invalid_request_error",
                     std::nullopt, "bad_request"};
        ++server_.counters().malformed_http;
    }
    keep_alive_ = false;
    // A body over the limit is refused from its Content-Length, as the header ends: its
    // fields are all there.
    RequestInfo info = request_info(ec == http::error::body_limit);
    respond(std::move(info), e.status, error_body(e), error_end(e, loc));
}

// What the parser has of the request (all of it once it is done; the header, if that much
// came, otherwise nothing), with its trace context.
RequestInfo HttpSession::request_info(bool header_fields)
{
    RequestInfo info;
    info.arrival = request_began_ ? first_byte_ : ServeClock::now();
    info.session = peer_;
    if (parser_ && (parser_->is_header_done() || header_fields)) {
        auto& req = parser_->get();
        info.method = std::string(req.method_string());
        const std::string_view target = req.target();
        info.route = std::string(target.substr(0, target.find('?')));
        info.headers.reserve(16);
        for (const auto& f : req) info.headers.push_back({std::string(f.name_string()), std::string(f.value())});
        info.body = std::move(req.body());  // what came of it, when the request was cut short
    }
    const HeaderTraceContext tc = trace_context_of(info.headers);
    info.trace_from_client = tc.context.has_value();
    info.trace = tc.context ? *tc.context : made_trace_context();
    return info;
}

void HttpSession::dispatch()
{
    parsing_ = false;
    disarm();
    keep_alive_ = parser_->get().keep_alive();
    const bool is_get = parser_->get().method() == http::verb::get;
    const bool is_post = parser_->get().method() == http::verb::post;
    RequestInfo info = request_info();
    const std::string route = info.route;
    const auto refuse = [&](int status, std::string_view code, std::string message,
                            std::string_view allow) {
        ApiError e{status, std::move(message), "invalid_request_error", std::nullopt,
                   std::string(code)};
        ExchangeEnd end = error_end(e, "route");
        respond(std::move(info), status, error_body(e), std::move(end),
                allow.empty() ? std::string() : fmt::format("Allow: {}\r\n", allow));
    };
    if (route == "/health") {
        if (!is_get) return refuse(405, "method_not_allowed", "Method Not Allowed", "GET");
        ExchangeEnd end;
        end.http_status = 200;
        end.request_status = RequestTraceStatus::accepted;
        end.body = R"({"status":"ok"})";
        std::string body = end.body;
        return respond(std::move(info), 200, std::move(body), std::move(end));
    }
    if (route == "/v1/models") {
        if (!is_get) return refuse(405, "method_not_allowed", "Method Not Allowed", "GET");
        ExchangeEnd end;
        end.http_status = 200;
        end.request_status = RequestTraceStatus::accepted;
        end.body = models_body(o_.api.model, 0);
        std::string body = end.body;
        return respond(std::move(info), 200, std::move(body), std::move(end));
    }
    const bool completions = route == "/v1/completions";
    if (completions || route == "/v1/chat/completions") {
        if (!is_post) return refuse(405, "method_not_allowed", "Method Not Allowed", "POST");
        return generate(completions ? Endpoint::completions : Endpoint::chat_completions,
                        std::move(info));
    }
    refuse(404, "not_found", fmt::format("Not Found: {} {}", info.method, route), {});
}

// --- answering --------------------------------------------------------------------------

void HttpSession::generate(Endpoint endpoint, RequestInfo&& info)
{
    auto parsed = parse_completion_request(endpoint, info.body, o_.api);
    if (const ApiError* e = std::get_if<ApiError>(&parsed)) {
        const int status = e->status;
        std::string body = error_body(*e);
        return respond(std::move(info), status, std::move(body), error_end(*e, "body"));
    }
    CompletionRequest& req = std::get<CompletionRequest>(parsed);
    if (!req.user.empty()) info.session = req.user;
    gen_ = server_.admit(std::move(req), std::move(info), weak_from_this());
    if (gen_->request.stream) {
        out_ += fmt::format(
            "HTTP/1.1 200 OK\r\nServer: jsonlw\r\nContent-Type: text/event-stream\r\n"
            "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nx-request-id: {}\r\n"
            "traceparent: {}\r\n{}\r\n",
            gen_->id, gen_->trace.traceparent(), keep_alive_ ? "" : "Connection: close\r\n");
        flush();
    }
}

void HttpSession::on_generation_progress()
{
    if (!gen_ || closed_ || gen_->ended || response_complete_) return;
    const std::size_t before = out_.size();
    response_complete_ = answer_.progress(*gen_, keep_alive_, server_.writers_on(), out_, json_body_);
    if (out_.size() != before) flush();
}

// A whole response to a request that did not reach the engine; recorded as it is queued.
void HttpSession::respond(RequestInfo&& info, int status, std::string body, ExchangeEnd end,
                          std::string_view extra_headers)
{
    parsing_ = false;
    disarm();
    const std::string tp = info.trace.traceparent();
    server_.record_exchange(std::move(info), std::move(end));
    out_ += response_head(status, "application/json", body.size(),
                          fmt::format("{}traceparent: {}\r\n", extra_headers, tp), keep_alive_);
    out_ += body;
    response_complete_ = true;
    if (!keep_alive_) close_after_write_ = true;
    flush();
}

void HttpSession::flush()
{
    if (write_in_flight_ || closed_ || out_.empty()) return;
    write_in_flight_ = true;
    writing_.swap(out_);
    out_.clear();
    if (!parsing_) arm(o_.write_timeout, Phase::write);
    boost::asio::async_write(socket_, boost::asio::buffer(writing_),
                             [self = shared_from_this()](error_code ec, std::size_t) {
                                 self->on_written(ec);
                             });
}

void HttpSession::on_written(error_code ec)
{
    write_in_flight_ = false;
    writing_.clear();
    if (closed_) return;
    if (ec) {
        peer_gone("write");
        return;
    }
    if (!out_.empty()) {
        flush();
        return;
    }
    if (phase_ == Phase::write) disarm();
    if (response_complete_ && !parsing_) response_done();
}

// Every byte of the response reached the socket: the generation ends completed; the next
// request follows on a keep-alive connection.
void HttpSession::response_done()
{
    if (gen_) {
        server_.end(*gen_, GenerationEnd::completed, std::move(json_body_));
        gen_.reset();
    }
    if (!keep_alive_ || close_after_write_) {
        linger();
        return;
    }
    await_request();
}

// Closing right after an error response while the client is still sending (a body past
// --body-limit) would reset the connection under the answer it has yet to read: our side is
// shut down first, and what still comes is read and dropped until the client closes, or for a
// second at most (the lingering close of RFC 9112, section 9.6).
void HttpSession::linger()
{
    parsing_ = false;
    lingering_ = true;
    error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    if (ec) {
        close();
        return;
    }
    buffer_.clear();
    arm(std::chrono::milliseconds(1000), Phase::linger);
    read_more();
}

// The client closed, reset, or stopped taking bytes: whatever was under way ends here.
void HttpSession::peer_gone(const char*)
{
    if (gen_ && !gen_->ended) {
        server_.end(*gen_, GenerationEnd::client_disconnected);
    } else if (parsing_ && request_began_) {
        ++server_.counters().incomplete;
        RequestInfo info = request_info();
        ExchangeEnd end;
        end.termination = TraceTermination{"client_disconnected", "the request was incomplete"};
        end.response_status = ResponseTraceStatus::client_disconnected;
        server_.record_exchange(std::move(info), std::move(end));
    }
    gen_.reset();
    close();
}

void HttpSession::shutdown()
{
    if (closed_) return;
    keep_alive_ = false;
    close_after_write_ = true;
    if (gen_ && !gen_->ended) {
        server_.end(*gen_, GenerationEnd::server_shutdown);
        const ApiError e{503, "the server is shutting down", "server_error", std::nullopt,
                         "server_shutdown"};
        if (gen_->request.stream) {
            append_chunk(out_, "data: " + error_body(e) + "\n\n");
            out_ += chunked_end;
        } else {
            const std::string body = error_body(e);
            out_ += response_head(503, "application/json", body.size(), {}, keep_alive_);
            out_ += body;
        }
        gen_.reset();
        response_complete_ = true;
        flush();
        if (!write_in_flight_) close();
        return;
    }
    if (parsing_ && request_began_) {
        RequestInfo info = request_info();
        ExchangeEnd end;
        end.termination = TraceTermination{"server_shutdown", "the request was incomplete"};
        end.response_status = ResponseTraceStatus::unknown;
        server_.record_exchange(std::move(info), std::move(end));
        close();
        return;
    }
    if (!write_in_flight_) close();  // else it closes once the response is out
}

void HttpSession::force_close()
{
    if (gen_ && !gen_->ended) server_.end(*gen_, GenerationEnd::server_shutdown);
    gen_.reset();
    close();
}

void HttpSession::close()
{
    if (closed_) return;
    closed_ = true;
    parsing_ = false;
    ++timer_gen_;
    deadline_.cancel();
    error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
}

// --- deadlines --------------------------------------------------------------------------

void HttpSession::arm(std::chrono::milliseconds d, Phase p)
{
    phase_ = p;
    deadline_.expires_after(d);
    deadline_.async_wait([self = shared_from_this(), gen = ++timer_gen_, p](error_code ec) {
        if (ec || gen != self->timer_gen_ || self->closed_) return;
        self->on_deadline(p);
    });
}

void HttpSession::disarm()
{
    if (phase_ == Phase::none) return;
    phase_ = Phase::none;
    ++timer_gen_;
    deadline_.cancel();
}

void HttpSession::on_deadline(Phase p)
{
    phase_ = Phase::none;
    switch (p) {
    case Phase::idle:
        ++server_.counters().idle_closed;
        close();
        return;
    case Phase::request: {
        ++server_.counters().header_timeouts;
        keep_alive_ = false;
        const ApiError e{408, fmt::format("the request did not arrive within {} ms",
                                          o_.request_timeout.count()),
                         "invalid_request_error", std::nullopt, "request_timeout"};
        ExchangeEnd end = error_end(e, "http");
        end.termination = TraceTermination{"header_timeout", std::nullopt};
        RequestInfo info = request_info();
        respond(std::move(info), 408, error_body(e), std::move(end));
        return;
    }
    case Phase::linger:
        close();
        return;
    case Phase::write:
        ++server_.counters().write_timeouts;
        peer_gone("write timeout");
        return;
    case Phase::none:
        return;
    }
}

}  // namespace jsonlw::serve
