// Probe: the outermost decorator of a check_sink() writer run. The engine calls it from the
// writer's I/O thread (a second thread at once is recorded, not prevented); the Checker reads
// events() and overlapped() after the writer is gone. Owns the record of every call it passed
// on (an Event each: which, on which thread, what the writer had counted by then, the
// ObservedIo seam around it); shares the seam with the sink.
#pragma once

#include "observed_io.hpp"

#include <jsonlw/sinks/sink_decorator.hpp>
#include <jsonlw/writer_stats.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace jsonlw::testing::conformance {

// One call the engine made to the sink.
struct Event {
    enum class Kind { append, sync, after_batch, reopen, tick, close, close_abandoned };
    Kind kind = Kind::append;
    std::thread::id thread;
    std::uint64_t written = 0;        // sync, after_batch: the writer's stats().written then
    std::size_t records = 0;          // append: the group's
    std::vector<std::uint64_t> ids;   // append: its lines' ids
    AppendResult result;              // append: as reported (behind the FaultySink)
    std::error_code ec;               // sync, reopen
    bool durable = false;             // close
    ObservedIo::Snapshot before, after;  // the seam around the call
};

// "append()", "sync()", … as the report names a call.
const char* name_of(Event::Kind k) noexcept;

class Probe final : public SinkDecorator {
public:
    Probe(std::shared_ptr<LineSink> inner, std::shared_ptr<ObservedIo> io);

    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;
    void after_batch() noexcept override;
    std::error_code reopen() noexcept override;
    void tick() noexcept override;
    void close(bool durable) noexcept override;
    void close_abandoned() noexcept override;

    std::vector<Event> events() const;
    bool overlapped() const noexcept { return overlapped_.load(); }

private:
    // Records one call: the seam before and after, the thread, overlap with another call.
    struct Call {
        Probe& p;
        Event e;
        Call(Probe& probe, Event::Kind kind);
        ~Call();
    };

    std::uint64_t written() const noexcept;

    const std::shared_ptr<ObservedIo> io_;
    std::function<WriterStats()> stats_;
    std::atomic<int> in_call_{0};
    std::atomic<bool> overlapped_{false};
    mutable std::mutex mu_;
    std::vector<Event> events_;
};

}  // namespace jsonlw::testing::conformance
