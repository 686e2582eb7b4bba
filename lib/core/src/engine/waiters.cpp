// Flush, reopen and close waiters (strand): async_*_impl (any thread) queue them, the drain
// and close complete them; close's timeout gives up on what is left and counts it.
#include "writer_core_impl.hpp"

#include <fmt/format.h>

namespace jsonlw::detail {

void WriterCore::Impl::complete_flushes(std::uint64_t resolved_upto, error_code ec)
{
    if (flush_waiters.empty()) return;
    // Never erase() from the middle: that move-assigns any_completion_handler, whose move
    // assignment recurses without end in Boost 1.81. Move-construct the rest instead.
    decltype(flush_waiters) rest;
    for (auto& [target, h] : flush_waiters) {
        if (ec || target <= resolved_upto) complete(std::move(h), ec);
        else rest.emplace_back(target, std::move(h));
    }
    flush_waiters.swap(rest);
}

void WriterCore::Impl::finish(bool drained)
{
    if (finished) return;
    finished = true;
    close_timer.cancel();
    report = CloseReport{self.stats(), drained};
    for (auto& h : close_waiters) complete(std::move(h), error_code{}, *report);
    close_waiters.clear();
    for (auto& h : reopen_waiters) complete(std::move(h), error_code{});
    reopen_waiters.clear();
    complete_flushes(0, drained ? error_code{} : error_code(make_error_code(errc::timed_out)));
    wake_drain();
}

// Close ran out of time: what is mid-append is unknown, what is queued is dropped.
void WriterCore::Impl::abandon()
{
    yield_hop.store(true, std::memory_order_relaxed);
    handoff.lock();
    if (const std::size_t n = handoff.abandon()) unknown.fetch_add(n, std::memory_order_release);
    if (Guard g{*this}) shutdown.fetch_add(self.hooks_->discard_queued(), std::memory_order_release);
    handoff.unlock();
    say(LogLevel::warning, &WriterMessages::close_timed_out);
    // The sink was set by start() and never changes; close_abandoned() must not block.
    if (Guard g{*this}; g && sink && sinks_started_once) sink->close_abandoned();
}

bool WriterCore::appending() const noexcept
{
    return impl_->handoff.appending();
}

bool WriterCore::append_outlived_close() const noexcept
{
    return impl_->handoff.append_outlived_close();
}

void WriterCore::Impl::on_close_request(asio::any_completion_handler<void(error_code, CloseReport)> h)
{
    if (finished) {
        complete(std::move(h), error_code{}, *report);
        return;
    }
    close_waiters.push_back(std::move(h));
    if (closing) return;
    closing = true;
    self.state_.store(State::closed, std::memory_order_release);
    {
        Guard g(*this);
        if (g) self.hooks_->close_intake();
    }
    if (!drain_running) {
        // Never started: nothing will write what was queued.
        std::size_t n = 0;
        if (Guard g{*this}) n = self.hooks_->discard_queued();
        shutdown.fetch_add(n, std::memory_order_release);
        finish(n == 0);
        return;
    }
    close_timer.expires_after(self.opts_.shutdown_timeout);
    close_timer.async_wait([core = self.shared_from_this(), this](boost::system::error_code ec) {
        if (ec || finished) return;
        abandon();
        finish(false);
    });
    yield_hop.store(true, std::memory_order_relaxed);
    wake_drain();
}

void WriterCore::async_reopen_impl(asio::any_completion_handler<void(error_code)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled) {
        impl_->complete(std::move(h), error_code{});
        return;
    }
    asio::post(impl_->strand, [core = shared_from_this(), h = std::move(h)]() mutable {
        Impl& d = *core->impl_;
        if (d.finished || d.closing) {  // close gives the file its final name anyway
            d.complete(std::move(h), error_code{});
            return;
        }
        // Request and waiter together, on the strand: the drain takes both at once.
        d.reopen_requested.store(true, std::memory_order_release);
        d.reopen_waiters.push_back(std::move(h));
        d.wake_drain();
    });
}

void WriterCore::async_flush_impl(asio::any_completion_handler<void(error_code)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled || !hooks_) {
        impl_->complete(std::move(h), error_code{});
        return;
    }
    const std::uint64_t target = hooks_->claimed();
    asio::post(impl_->strand, [core = shared_from_this(), target, h = std::move(h)]() mutable {
        Impl& d = *core->impl_;
        if (d.finished) {
            d.complete(std::move(h), error_code{});
            return;
        }
        d.flush_waiters.emplace_back(target, std::move(h));
        d.yield_hop.store(true, std::memory_order_relaxed);
        d.wake_drain();
    });
}

void WriterCore::async_close_impl(
    asio::any_completion_handler<void(error_code, CloseReport)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled) {
        impl_->complete(std::move(h), error_code{}, CloseReport{stats(), true});
        return;
    }
    // Intake stops now, on the caller's thread: a submit() after async_close() returned is
    // refused (and counted), whenever the strand gets to the rest.
    if (s == State::created || s == State::running) {
        state_.store(State::closed, std::memory_order_release);
        if (hooks_) hooks_->close_intake();
    }
    asio::post(impl_->strand, [core = shared_from_this(), h = std::move(h)]() mutable {
        core->impl_->on_close_request(std::move(h));
    });
}

}  // namespace jsonlw::detail
