// UnitContext: the record-type-independent side of a unit, which the typed engine's
// run_unit() (record_engine.hpp) goes through on the I/O thread, top to bottom: the consumer
// lock around the pop (close's handoff of the records in flight), the producers waiting for
// room, the records serialize() refused, and the unit's counts once its lines are handed to
// the sink stack (the typed engine appends; SinkSet, sink_set.hpp, counts what came back).
// Owned by WriterCore (one per writer); every function runs on the I/O thread, inside
// run_unit().
// Implemented in lib/core/src/engine/unit_context.cpp over the engine's objects.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/lines.hpp>

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace jsonlw::detail {

class UnitContext {
public:
    explicit UnitContext(WriterCore& core) noexcept : core_(core) {}
    UnitContext(const UnitContext&) = delete;
    UnitContext& operator=(const UnitContext&) = delete;

    // Before the pop: takes the consumer lock (which keeps the pop apart from close's and
    // shutdown's discard of the queue). False, with no lock held, once close gave up on the
    // writer: nothing is popped any more.
    bool lock_for_pop() noexcept;
    // After the pop, still under the lock: the unit's `n` records are in flight (close counts
    // them unknown if it gives up before written()); releases the lock, wakes producers
    // blocked for room, and starts the unit's counts.
    void popped(std::size_t n) noexcept;

    // A record serialize() refused (MalformedRecord) or failed on unexpectedly: counted,
    // logged (rate-limited).
    void malformed(std::string_view what) noexcept;
    void unexpected(Stage stage, std::string_view what) noexcept;

    // After the unit's batches: publishes its counts (unless close gave up on it and counted
    // it already) and tells the sinks the batch is over.
    void written(std::size_t n) noexcept;

private:
    WriterCore& core_;
};

}  // namespace jsonlw::detail
