#include "load_client.hpp"

#include "client_events.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <memory>
#include <random>

namespace jsonlw::serve {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Outcome = ClientResult::Outcome;

// Errors come back as values: a failed request is the normal case here, not an exception.
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

constexpr std::uint64_t body_limit = std::uint64_t{64} << 20;

std::string make_traceparent(std::mt19937_64& g)
{
    std::uint64_t hi = 0, lo = 0, parent = 0;
    while (hi == 0 && lo == 0) hi = g(), lo = g();  // all-zero ids are invalid (W3C)
    while (parent == 0) parent = g();
    return fmt::format("00-{:016x}{:016x}-{:016x}-01", hi, lo, parent);
}

// One socket, kept alive across the requests it carries one after another.
struct Connection {
    explicit Connection(asio::io_context& io) : stream(io) {}

    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    EventStream events;
    bool open = false;
    std::uint64_t served = 0;  // responses read on the current socket
};

// One run_load() call: owns the io_context, the plan, the sockets and the results being
// filled; everything runs on the calling thread, inside run().
class LoadRun {
public:
    LoadRun(const LoadOptions& opts, LoadResult& out) : opts_(opts), out_(out) {}

    void run();

private:
    void plan();
    asio::awaitable<void> arrivals();
    void arrive(std::uint64_t i);
    void start_on(Connection& c, std::uint64_t i);
    bool next_work(std::uint64_t& i);
    asio::awaitable<void> serve(Connection& c, std::uint64_t i);
    asio::awaitable<void> exchange(Connection& c, ClientResult& r);
    asio::awaitable<void> read_response(Connection& c, ClientResult& r,
                                        http::response_parser<http::string_body>& p);
    std::string request_body(const ClientResult& r) const;
    static void close(Connection& c);
    static void fail(ClientResult& r, std::string why);

    const LoadOptions& opts_;
    LoadResult& out_;
    asio::io_context io_{1};  // one thread: no locking inside Asio
    tcp::endpoint endpoint_;
    std::string endpoint_error_;  // set: every request fails with it
    std::string host_header_;
    std::vector<Clock::duration> offsets_;  // open loop: arrival i at start_ + offsets_[i]
    Clock::time_point start_{};
    std::vector<std::unique_ptr<Connection>> connections_;
    std::vector<Connection*> idle_;
    std::deque<std::uint64_t> queue_;
    std::uint64_t next_ = 0;  // closed loop: the next request not yet taken
    std::uint64_t finished_ = 0;
    ResponseReader reader_;
};

void LoadRun::plan()
{
    auto& rs = out_.results;
    rs.resize(opts_.requests);
    std::mt19937_64 g(opts_.seed);
    // Trace ids must differ between runs, so they come from a generator that is not seeded.
    std::mt19937_64 ids(std::random_device{}() ^ (opts_.seed * 0x9e3779b97f4a7c15ull));
    std::bernoulli_distribution stream(std::clamp(opts_.stream_share, 0.0, 1.0));
    std::bernoulli_distribution chat(std::clamp(opts_.chat_share, 0.0, 1.0));
    const auto [lo, hi] = std::minmax(std::max(opts_.min_tokens, 1u), std::max(opts_.max_tokens, 1u));
    std::uniform_int_distribution<std::uint32_t> tokens(lo, hi);
    std::exponential_distribution<double> gap(opts_.rate > 0 ? opts_.rate : 1.0);
    std::uint64_t streams = 0;
    double at = 0;
    if (opts_.rate > 0) offsets_.reserve(rs.size());
    for (std::uint64_t i = 0; i < rs.size(); ++i) {
        ClientResult& r = rs[i];
        r.index = i;
        r.stream = stream(g);
        r.chat = chat(g);
        r.max_tokens = tokens(g);
        if (r.stream) ++streams;
        r.disconnect_planned = r.stream && opts_.disconnect_every > 0 &&
                               streams % opts_.disconnect_every == 0;
        r.traceparent = make_traceparent(ids);
        if (opts_.rate > 0) {
            if (i > 0) at += gap(g);
            offsets_.push_back(std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double>(at)));
        }
    }
}

void LoadRun::run()
{
    plan();
    if (out_.results.empty()) return;
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(opts_.host, ec);
    if (!ec) {
        endpoint_ = tcp::endpoint(address, opts_.port);
    } else {
        tcp::resolver resolver(io_);
        const auto found = resolver.resolve(opts_.host, std::to_string(opts_.port), ec);
        if (ec || found.empty())
            endpoint_error_ = "resolve " + opts_.host + ": " + (ec ? ec.message() : "no address");
        else
            endpoint_ = *found.begin();
    }
    if (opts_.port == 0) endpoint_error_ = "no port given";
    host_header_ = fmt::format("{}:{}", opts_.host, opts_.port);

    start_ = Clock::now();
    if (opts_.rate > 0) {
        asio::co_spawn(io_, arrivals(), [](std::exception_ptr) {});
    } else {
        const std::uint64_t first = std::min<std::uint64_t>(std::max<std::size_t>(opts_.connections, 1),
                                                            out_.results.size());
        for (next_ = 0; next_ < first; ++next_) arrive(next_);
    }
    io_.run();

    Clock::time_point last = start_;
    for (auto& r : out_.results) {
        if (r.done == Clock::time_point{}) {  // its coroutine died with an exception
            fail(r, "internal error: the request was never finished");
            r.done = Clock::now();
        }
        last = std::max(last, r.done);
    }
    out_.seconds = std::chrono::duration<double>(last - start_).count();
}

asio::awaitable<void> LoadRun::arrivals()
{
    asio::steady_timer timer(io_);
    for (std::uint64_t i = 0; i < offsets_.size(); ++i) {
        const Clock::time_point due = start_ + offsets_[i];
        if (due > Clock::now()) {
            timer.expires_at(due);
            co_await timer.async_wait(tuple_awaitable);
        }
        out_.results[i].intended = due;
        arrive(i);
    }
}

void LoadRun::arrive(std::uint64_t i)
{
    if (opts_.rate <= 0) out_.results[i].intended = Clock::now();
    if (!idle_.empty()) {
        Connection* c = idle_.back();  // the most recently used: its socket is the warmest
        idle_.pop_back();
        start_on(*c, i);
    } else if (connections_.size() < std::max<std::size_t>(opts_.connections, 1)) {
        connections_.push_back(std::make_unique<Connection>(io_));
        start_on(*connections_.back(), i);
    } else {
        queue_.push_back(i);
        ++out_.queued;
        out_.max_queue_depth = std::max<std::uint64_t>(out_.max_queue_depth, queue_.size());
    }
}

void LoadRun::start_on(Connection& c, std::uint64_t i)
{
    asio::co_spawn(io_, serve(c, i), [](std::exception_ptr) {
        // Only allocation can throw in serve(); run() fails what it left unfinished.
    });
}

bool LoadRun::next_work(std::uint64_t& i)
{
    if (!queue_.empty()) {
        i = queue_.front();
        queue_.pop_front();
        return true;
    }
    if (opts_.rate <= 0 && next_ < out_.results.size()) {
        i = next_++;
        out_.results[i].intended = Clock::now();
        return true;
    }
    return false;
}

asio::awaitable<void> LoadRun::serve(Connection& c, std::uint64_t i)
{
    for (;;) {
        ClientResult& r = out_.results[i];
        if (!endpoint_error_.empty()) {
            r.sent = Clock::now();
            fail(r, endpoint_error_);
        } else {
            co_await exchange(c, r);
        }
        if (r.done == Clock::time_point{}) r.done = Clock::now();
        ++finished_;
        if (!next_work(i)) break;
    }
    idle_.push_back(&c);
    if (finished_ == out_.results.size())
        for (auto& conn : connections_) close(*conn);
}

std::string LoadRun::request_body(const ClientResult& r) const
{
    // A prompt that differs per request, so the server's records can be told apart by eye.
    std::string body;
    body.reserve(256);
    auto it = std::back_inserter(body);
    const auto prompt = fmt::format("Request {}: tell me why a writer batches its lines.", r.index);
    if (r.chat)
        fmt::format_to(it, R"({{"model":"jsonlw-demo","messages":[{{"role":"user","content":"{}"}}],"max_tokens":{})",
                       prompt, r.max_tokens);
    else
        fmt::format_to(it, R"({{"model":"jsonlw-demo","prompt":"{}","max_tokens":{})", prompt,
                       r.max_tokens);
    if (r.stream) body += R"(,"stream":true,"stream_options":{"include_usage":true})";
    if (opts_.top_logprobs >= 0) {
        if (r.chat)
            fmt::format_to(it, R"(,"logprobs":true,"top_logprobs":{})", opts_.top_logprobs);
        else
            fmt::format_to(it, R"(,"logprobs":{})", opts_.top_logprobs);
    }
    body += '}';
    return body;
}

asio::awaitable<void> LoadRun::exchange(Connection& c, ClientResult& r)
{
    http::request<http::string_body> req{http::verb::post,
                                         r.chat ? "/v1/chat/completions" : "/v1/completions", 11};
    req.set(http::field::host, host_header_);
    req.set(http::field::user_agent, "jsonlw-demo-client/1");
    req.set(http::field::authorization, fmt::format("Bearer sk-demo-{}", r.index));
    req.set(http::field::content_type, "application/json");
    req.set("traceparent", r.traceparent);
    req.keep_alive(true);
    req.body() = request_body(r);
    req.prepare_payload();

    const Clock::time_point deadline = Clock::now() + opts_.request_timeout;
    for (int attempt = 0;; ++attempt) {
        // A kept-alive socket the server closed while idle fails before any reply: resend
        // once on a fresh socket (the server never saw the request, so nothing is doubled).
        const bool may_retry = attempt == 0 && c.open && c.served > 0;
        c.stream.expires_at(deadline);
        if (!c.open) {
            auto [ec] = co_await c.stream.async_connect(endpoint_, tuple_awaitable);
            if (ec) {
                close(c);
                fail(r, (ec == beast::error::timeout ? "timeout: " : "connect: ") + ec.message());
                co_return;
            }
            c.open = true;
            c.served = 0;
            ++out_.connects;
            c.stream.socket().set_option(tcp::no_delay(true), ec);
        }
        r.sent = Clock::now();
        auto [wec, wn] = co_await http::async_write(c.stream, req, tuple_awaitable);
        if (wec) {
            close(c);
            if (may_retry && wec != beast::error::timeout) {
                ++out_.keepalive_retries;
                continue;
            }
            fail(r, (wec == beast::error::timeout ? "timeout: " : "write: ") + wec.message());
            co_return;
        }
        http::response_parser<http::string_body> p;
        p.body_limit(body_limit);
        auto [hec, hn] = co_await http::async_read_header(c.stream, c.buffer, p, tuple_awaitable);
        if (hec) {
            const bool nothing = !p.got_some();
            close(c);
            if (may_retry && nothing && hec != beast::error::timeout) {
                ++out_.keepalive_retries;
                continue;
            }
            fail(r, (hec == beast::error::timeout ? "timeout: " : "read: ") + hec.message());
            co_return;
        }
        co_await read_response(c, r, p);
        co_return;
    }
}

asio::awaitable<void> LoadRun::read_response(Connection& c, ClientResult& r,
                                             http::response_parser<http::string_body>& p)
{
    const auto& head = p.get();
    r.http_status = static_cast<int>(head.result_int());
    if (const auto it = head.find("x-request-id"); it != head.end())
        r.server_request_id = std::string(it->value());
    const bool sse = r.stream && r.http_status == 200 && p.chunked();
    // Chunks of an event stream go to the reader as they arrive, never into the body.
    c.events.reset(r.chat);
    auto on_chunk = [&](std::uint64_t, beast::string_view data, beast::error_code&) {
        reader_.feed(c.events, std::string_view(data.data(), data.size()), r);
        return data.size();
    };
    if (sse) p.on_chunk_body(on_chunk);

    while (!p.is_done()) {
        auto [ec, n] = co_await http::async_read_some(c.stream, c.buffer, p, tuple_awaitable);
        if (ec) {
            close(c);
            fail(r, (ec == beast::error::timeout ? "timeout: " : "read: ") + ec.message());
            co_return;
        }
        if (r.disconnect_planned && r.tokens > 0 && !p.is_done()) {
            close(c);
            r.done = Clock::now();
            r.outcome = Outcome::disconnected_by_client;
            co_return;
        }
    }
    r.done = Clock::now();
    if (head.keep_alive())
        ++c.served;
    else
        close(c);

    if (r.http_status != 200) {
        fail(r, fmt::format("HTTP {}: {}", r.http_status, reader_.error_message(head.body())));
        co_return;
    }
    if (!r.stream) {
        r.first_token = r.done;
        r.outcome = reader_.read_body(head.body(), r.chat, r) ? Outcome::completed : Outcome::failed;
        co_return;
    }
    if (!sse) reader_.feed(c.events, head.body(), r);  // a stream sent without chunking
    r.stream_well_formed = ResponseReader::finish(c.events);
    r.outcome = c.events.error_event ? Outcome::failed : Outcome::completed;
}

void LoadRun::close(Connection& c)
{
    boost::system::error_code ec;
    c.stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    c.stream.close();
    c.buffer.clear();
    c.open = false;
}

void LoadRun::fail(ClientResult& r, std::string why)
{
    r.outcome = Outcome::failed;
    if (r.error.empty()) r.error = std::move(why);
    r.done = Clock::now();
}

}  // namespace

LoadResult run_load(const LoadOptions& opts)
{
    LoadResult out;
    try {
        LoadRun run(opts, out);
        run.run();
    } catch (const std::exception& e) {
        // Only allocation or the io_context itself can throw: the unfinished fail with it.
        for (auto& r : out.results)
            if (r.done == Clock::time_point{}) {
                r.outcome = Outcome::failed;
                r.error = std::string("internal error: ") + e.what();
                r.done = Clock::now();
            }
    }
    return out;
}

}  // namespace jsonlw::serve
