// The async operations' doors (async_flush/reopen/close_impl: any thread, each posts its
// waiter to the strand) and close's protocol on the strand: intake stops, the drain writes
// what is queued, and the timeout gives up on what is left and counts it.
#include "writer_core_impl.hpp"

namespace jsonlw::detail {

void WriterCore::Impl::finish(bool drained)
{
    if (waiters.finished()) return;
    close_timer.cancel();
    waiters.finish(CloseReport{self.stats(), drained});
    drain.wake();
}

// Close ran out of time: what is mid-append is unknown, what is queued is dropped.
void WriterCore::Impl::abandon()
{
    drain.request_yield();
    handoff.lock();
    if (const std::size_t n = handoff.abandon()) accounting.count_unknown(n);
    if (Guard g{*this}) accounting.count_shutdown(self.units_->discard_queued());
    handoff.unlock();
    accounting.say(LogLevel::warning, &WriterMessages::close_timed_out);
    if (Guard g{*this}) sinks.close_abandoned();
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
    if (waiters.finished()) {
        waiters.complete(std::move(h), error_code{}, waiters.report());
        return;
    }
    waiters.add_close(std::move(h));
    if (drain.closing()) return;
    drain.begin_close();
    self.state_.store(State::closed, std::memory_order_release);
    {
        Guard g(*this);
        if (g) self.ring_->close();
    }
    if (!drain.running()) {
        // Never started: nothing will write what was queued.
        std::size_t n = 0;
        if (Guard g{*this}) n = self.units_->discard_queued();
        accounting.count_shutdown(n);
        finish(n == 0);
        return;
    }
    close_timer.expires_after(self.opts_.shutdown_timeout);
    close_timer.async_wait([core = self.shared_from_this(), this](boost::system::error_code ec) {
        if (ec || waiters.finished()) return;
        abandon();
        finish(false);
    });
    drain.request_yield();
    drain.wake();
}

void WriterCore::async_reopen_impl(asio::any_completion_handler<void(error_code)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled) {
        impl_->waiters.complete(std::move(h), error_code{});
        return;
    }
    asio::post(impl_->strand, [core = shared_from_this(), h = std::move(h)]() mutable {
        Impl& d = *core->impl_;
        if (d.waiters.finished() || d.drain.closing()) {  // close gives the file its final name anyway
            d.waiters.complete(std::move(h), error_code{});
            return;
        }
        // Request and waiter together, on the strand: the drain takes both at once.
        d.sinks.request_reopen();
        d.waiters.add_reopen(std::move(h));
        d.drain.wake();
    });
}

void WriterCore::async_flush_impl(asio::any_completion_handler<void(error_code)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled || !units_) {
        impl_->waiters.complete(std::move(h), error_code{});
        return;
    }
    const std::uint64_t target = ring_->claimed();
    asio::post(impl_->strand, [core = shared_from_this(), target, h = std::move(h)]() mutable {
        Impl& d = *core->impl_;
        if (d.waiters.finished()) {
            d.waiters.complete(std::move(h), error_code{});
            return;
        }
        d.waiters.add_flush(target, std::move(h));
        d.drain.request_yield();
        d.drain.wake();
    });
}

void WriterCore::async_close_impl(
    asio::any_completion_handler<void(error_code, CloseReport)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled) {
        impl_->waiters.complete(std::move(h), error_code{}, CloseReport{stats(), true});
        return;
    }
    // Intake stops now, on the caller's thread: a submit() after async_close() returned is
    // refused (and counted), whenever the strand gets to the rest.
    if (s == State::created || s == State::running) {
        state_.store(State::closed, std::memory_order_release);
        if (units_) ring_->close();
    }
    asio::post(impl_->strand, [core = shared_from_this(), h = std::move(h)]() mutable {
        core->impl_->on_close_request(std::move(h));
    });
}

}  // namespace jsonlw::detail
