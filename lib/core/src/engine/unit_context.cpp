// UnitContext (see jsonlw/detail/unit_context.hpp): a unit's way through the engine's
// objects — CloseHandoff around the pop, SpaceWait after it, Accounting for the counts.
#include <jsonlw/detail/unit_context.hpp>

#include "writer_core_impl.hpp"

namespace jsonlw::detail {

UnitContext& WriterCore::unit_context() noexcept { return impl_->unit; }
SinkSet& WriterCore::sink_set() noexcept { return impl_->sinks; }

bool UnitContext::lock_for_pop() noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    d.handoff.lock();
    if (!d.handoff.abandoned()) return true;
    d.handoff.unlock();
    return false;
}

void UnitContext::popped(std::size_t n) noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    d.handoff.begin_unit(n);
    d.handoff.unlock();
    if (n == 0) return;
    d.space.notify(*core_.ring_);
    d.accounting.begin_unit();
    d.handoff.appending(true);
}

void UnitContext::malformed(std::string_view what) noexcept
{
    core_.impl_->accounting.on_malformed(what);
}

void UnitContext::unexpected(Stage stage, std::string_view what) noexcept
{
    core_.impl_->accounting.on_unexpected(stage, what);
}

void UnitContext::written(std::size_t n) noexcept
{
    WriterCore::Impl& d = *core_.impl_;
    // Close may have given up on the unit and counted it unknown.
    if (d.handoff.publish_claim()) {
        d.accounting.publish(n);
        d.handoff.end_unit();
    }
    d.sinks.after_batch();
    d.handoff.appending(false);
}

}  // namespace jsonlw::detail
