// Waiting for events, never for time: wait_until() polls a predicate (yielding the CPU)
// until it holds or a generous deadline passes; flush()/close() wait on a writer's
// async_flush/async_close through use_future with a deadline. The io_context must be running
// on another thread.
#pragma once

#include <jsonlw/writer_stats.hpp>

#include <boost/asio/use_future.hpp>

#include <chrono>
#include <future>
#include <ostream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace jsonlw_test {

using namespace std::chrono_literals;

inline constexpr std::chrono::seconds default_deadline{20};

template <class Pred>
bool wait_until(Pred&& pred, std::chrono::milliseconds timeout = default_deadline)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) return pred();
        std::this_thread::yield();
    }
    return true;
}

template <class Future>
auto get_within(Future&& f, std::chrono::milliseconds timeout = default_deadline)
{
    if (f.wait_for(timeout) != std::future_status::ready)
        throw std::runtime_error("timed out waiting for an async operation of the writer");
    return f.get();
}

// async_flush through use_future; throws on a timeout (or if the flush failed).
template <class Writer>
void flush(Writer& w, std::chrono::milliseconds timeout = default_deadline)
{
    get_within(w.async_flush(boost::asio::use_future), timeout);
}

// async_close through use_future; returns the report.
template <class Writer>
jsonlw::CloseReport close(Writer& w, std::chrono::milliseconds timeout = default_deadline)
{
    return get_within(w.async_close(boost::asio::use_future), timeout);
}

// The accounting invariant of every snapshot.
inline bool invariant_holds(const jsonlw::WriterStats& s) noexcept
{
    return s.submitted == s.written + s.dropped.total() + s.unknown + s.pending;
}

}  // namespace jsonlw_test

// Catch2 prints WriterStats with this in failure messages.
namespace jsonlw {
inline std::ostream& operator<<(std::ostream& os, const WriterStats& s)
{
    return os << "{submitted " << s.submitted << ", written " << s.written << ", batches " << s.batches
              << ", bytes " << s.bytes << ", sanitized " << s.sanitized << ", unknown " << s.unknown
              << ", pending " << s.pending << ", dropped {queue_full " << s.dropped.queue_full
              << ", oldest_evicted " << s.dropped.oldest_evicted << ", malformed " << s.dropped.malformed
              << ", write_error " << s.dropped.write_error << ", shutdown " << s.dropped.shutdown
              << ", unexpected " << s.dropped.unexpected << ", closed " << s.dropped.closed << "}}";
}
}  // namespace jsonlw
