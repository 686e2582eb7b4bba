// SinkCounters: a file sink's FileSinkCounters, written by its I/O thread and read anywhere.
#pragma once

#include <jsonlw/sinks/file_sink.hpp>

#include <mutex>

namespace jsonlw::detail {

// Updated by the sink's I/O thread on events only (a reopen, a roll-back, a deletion),
// never once per append, so a lock is cheap; get() from any thread. Owned by the sink.
class SinkCounters {
public:
    template <class F>
    void update(F&& f) noexcept
    {
        std::lock_guard lk(mu_);
        f(c_);
    }
    FileSinkCounters get() const
    {
        std::lock_guard lk(mu_);
        return c_;
    }

private:
    mutable std::mutex mu_;
    FileSinkCounters c_;
};

}  // namespace jsonlw::detail
