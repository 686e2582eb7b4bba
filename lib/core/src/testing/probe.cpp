// Probe (see probe.hpp): each call is passed to the sink inside a Call, which records it.
#include "probe.hpp"

#include "conformance_lines.hpp"

namespace jsonlw::testing::conformance {

const char* name_of(Event::Kind k) noexcept
{
    switch (k) {
    case Event::Kind::append: return "append()";
    case Event::Kind::sync: return "sync()";
    case Event::Kind::after_batch: return "after_batch()";
    case Event::Kind::reopen: return "reopen()";
    case Event::Kind::tick: return "tick()";
    case Event::Kind::close: return "close()";
    case Event::Kind::close_abandoned: return "close_abandoned()";
    }
    return "?";
}

Probe::Probe(std::shared_ptr<LineSink> inner, std::shared_ptr<ObservedIo> io)
    : SinkDecorator(std::move(inner)), io_(std::move(io))
{
}

std::error_code Probe::start(const SinkContext& ctx)
{
    stats_ = ctx.writer_stats;
    return inner_->start(ctx);
}

AppendResult Probe::append(std::string_view key, const Lines& lines) noexcept
{
    Call c(*this, Event::Kind::append);
    c.e.records = lines.records;
    try {
        c.e.ids = ids_of(lines);
    } catch (...) {
    }
    c.e.result = inner_->append(key, lines);
    return c.e.result;
}

std::error_code Probe::sync() noexcept
{
    Call c(*this, Event::Kind::sync);
    c.e.written = written();
    c.e.ec = inner_->sync();
    return c.e.ec;
}

void Probe::after_batch() noexcept
{
    Call c(*this, Event::Kind::after_batch);
    inner_->after_batch();
    c.e.written = written();
}

std::error_code Probe::reopen() noexcept
{
    Call c(*this, Event::Kind::reopen);
    c.e.ec = inner_->reopen();
    return c.e.ec;
}

void Probe::tick() noexcept
{
    Call c(*this, Event::Kind::tick);
    inner_->tick();
}

void Probe::close(bool durable) noexcept
{
    Call c(*this, Event::Kind::close);
    c.e.durable = durable;
    inner_->close(durable);
}

void Probe::close_abandoned() noexcept
{
    Call c(*this, Event::Kind::close_abandoned);
    inner_->close_abandoned();
}

std::vector<Event> Probe::events() const
{
    std::lock_guard lk(mu_);
    return events_;
}

Probe::Call::Call(Probe& probe, Event::Kind kind) : p(probe)
{
    if (p.in_call_.fetch_add(1) > 0) p.overlapped_.store(true);
    e.kind = kind;
    e.thread = std::this_thread::get_id();
    e.before = p.io_->snapshot();
}

Probe::Call::~Call()
{
    e.after = p.io_->snapshot();
    try {
        std::lock_guard lk(p.mu_);
        p.events_.push_back(std::move(e));
    } catch (...) {
    }
    p.in_call_.fetch_sub(1);
}

std::uint64_t Probe::written() const noexcept
{
    try {
        return stats_ ? stats_().written : 0;
    } catch (...) {
        return 0;
    }
}

}  // namespace jsonlw::testing::conformance
