// FaultySink: a decorator that makes the sink it wraps fail on demand — its next appends or
// its next syncs, with the error you choose — so that a sink of your own, and the writer's
// counting in front of it, can be tested under faults. MemorySink::fail_next() does the same
// for lines kept in memory, and the SinkContext::file_io seam for the system calls of a sink
// that writes files; this one works in front of any sink (docs/sinks.md, "Testing a sink";
// jsonlw/testing/sink_conformance.hpp drives it).
#pragma once

#include <jsonlw/sinks/sink_decorator.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <system_error>

namespace jsonlw {

// Called by the writer's engine as every LineSink is (through SinkDecorator, every call but
// append() and sync() goes on unchanged); fail_appends(), fail_syncs() and counts() from any
// thread (a mutex guards them). Shares the sink it wraps.
class FaultySink final : public SinkDecorator {
public:
    // What went through, for a test's assertions.
    struct Counts {
        std::uint64_t appends = 0;         // append() calls
        std::uint64_t syncs = 0;           // sync() calls
        std::uint64_t appends_failed = 0;  // appends failed on purpose
        std::uint64_t syncs_failed = 0;    // syncs failed on purpose
        std::uint64_t records_failed = 0;  // records those appends kept from the wrapped sink
    };

    explicit FaultySink(std::shared_ptr<LineSink> inner);

    // The next `times` appends fail with `ec`: the first `landed` lines of each still go on
    // to the wrapped sink and count as it reports them; the rest never reach it and count
    // failed (write_error). landed = 0: nothing reaches it (AppendResult::attempted false).
    // A group of Lines::log_records is one line: landed > 0 passes it whole.
    void fail_appends(std::error_code ec, std::size_t times = 1, std::size_t landed = 0);
    // The next `times` syncs return `ec` without reaching the wrapped sink, as an fsync that
    // failed: what it holds unsynced stays so until a later sync. Under fsync_batch the
    // writer counts the records of the append before such a sync unknown.
    void fail_syncs(std::error_code ec, std::size_t times = 1);
    Counts counts() const;

    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;

private:
    mutable std::mutex mu_;
    Counts counts_;
    std::error_code append_ec_, sync_ec_;
    std::size_t appends_left_ = 0, syncs_left_ = 0, landed_ = 0;
};

}  // namespace jsonlw
