// The I/O thread's tasks (run there through Impl::on_io(), one at a time, never on the user's
// executor): a step of up to batches_per_hop batches, the final close, fsyncs, the sink's
// reopen and tick.
#include "writer_core_impl.hpp"

namespace jsonlw::detail {

namespace {

// Batches the I/O thread writes per hop before returning to the strand (which completes
// flushes): bounds flush latency without a hop per batch under load.
constexpr int batches_per_hop = 16;

}  // namespace

void WriterCore::Impl::run_io_task(IoTask task) noexcept
{
    switch (task) {
    case IoTask::step: io_step(); break;
    case IoTask::finalize: finalize_io(); break;
    case IoTask::sync: sinks.sync(); break;
    case IoTask::reopen: sinks.reopen(); break;
    case IoTask::tick: sinks.tick(); break;
    }
}

// --- I/O thread ---
void WriterCore::Impl::io_step() noexcept
{
    Guard g(*this);
    if (!g) return;
    const auto& o = self.opts_;
    // A unit: one batch, or up to serializer_threads batches serialized together — popped,
    // written and published as one (one unit in flight, as close's accounting assumes).
    const std::size_t unit = self.unit_batches_;
    for (int i = 0; i < batches_per_hop; ++i) {
        std::size_t n = 0;
        bool full = true;  // the last batch popped was full: the queue may hold more
        handoff.lock();
        if (!handoff.abandoned()) {
            for (std::size_t b = 0; b < unit && full; ++b) {
                const std::size_t m = self.hooks_->pop_batch(o.batch_records, o.batch_bytes);
                n += m;
                full = m == o.batch_records;
            }
            handoff.begin_unit(n);
        }
        handoff.unlock();
        if (n == 0) break;
        space.notify(*self.hooks_);
        accounting.begin_unit();
        handoff.appending(true);
        self.hooks_->write_staged();
        // Close may have given up on the unit and counted it unknown.
        if (handoff.publish_claim()) {
            accounting.publish(n);
            handoff.end_unit();
        }
        sinks.after_batch();
        handoff.appending(false);
        if (!full || life->detaching.load(std::memory_order_relaxed) ||
            drain.yield_requested())
            break;
    }
    accounting.log_queue_drops();
    if (sinks.sync_overdue()) sinks.sync();
}

void WriterCore::Impl::finalize_io() noexcept
{
    accounting.log_queue_drops();
    if (self.opts_.durability != Durability::none) sinks.sync();
    sinks.close(self.opts_.durability != Durability::none);
}

}  // namespace jsonlw::detail
