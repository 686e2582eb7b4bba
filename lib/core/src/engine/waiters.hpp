// Waiters: the completions of async_flush(), async_reopen() and async_close() that have not
// run yet, and close's report once it is done. Strand only — the async_*_impl functions post
// there to add one, the drain and close complete them — except complete(), which any thread
// may call. Owns the handlers until it posts them; borrows the writer's executor.
#pragma once

#include <jsonlw/error.hpp>
#include <jsonlw/writer_stats.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace jsonlw::detail {

class Waiters {
public:
    using Handler = boost::asio::any_completion_handler<void(error_code)>;
    using CloseHandler = boost::asio::any_completion_handler<void(error_code, CloseReport)>;

    explicit Waiters(const boost::asio::any_io_executor& ex) noexcept : ex_(ex) {}

    // Runs h(args...) through the writer's executor, then on h's associated executor —
    // never inline, never on the I/O thread. Any thread.
    template <class H, class... Args>
    void complete(H h, Args... args)
    {
        boost::asio::post(ex_, boost::asio::append(std::move(h), std::move(args)...));
    }

    // --- flushes: each completes once the records claimed before it are resolved ---
    void add_flush(std::uint64_t target, Handler h) { flushes_.emplace_back(target, std::move(h)); }
    bool flushing() const noexcept { return !flushes_.empty(); }
    // Completes the flushes whose target is at most `resolved_upto` — all of them on `ec`.
    void complete_flushes(std::uint64_t resolved_upto, error_code ec);

    // --- reopens: taken by the drain together with the request ---
    void add_reopen(Handler h) { reopens_.push_back(std::move(h)); }
    std::vector<Handler> take_reopens() noexcept;

    // --- close ---
    void add_close(CloseHandler h) { closes_.push_back(std::move(h)); }
    bool finished() const noexcept { return report_.has_value(); }
    const CloseReport& report() const noexcept { return *report_; }
    // Close is done: every waiter completes (flushes with timed_out unless `report` says
    // drained), and a later close gets `report` at once.
    void finish(const CloseReport& report);

private:
    const boost::asio::any_io_executor& ex_;
    std::vector<std::pair<std::uint64_t, Handler>> flushes_;
    std::vector<Handler> reopens_;
    std::vector<CloseHandler> closes_;
    std::optional<CloseReport> report_;
};

}  // namespace jsonlw::detail
