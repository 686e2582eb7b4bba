// What every jsonlw run needs around its writer: the user's event loop on a thread of its own,
// a tally of the writer's log lines, and the check of its counters after a full run.
#pragma once

#include <jsonlw/jsonlw.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

namespace bench {

namespace asio = boost::asio;

// The user's event loop: an io_context run by one thread until the run is over.
class Loop {
public:
    Loop() : guard_(asio::make_work_guard(ctx_)), thread_([this] { ctx_.run(); }) {}
    ~Loop()
    {
        guard_.reset();
        thread_.join();
    }
    asio::any_io_executor executor() { return ctx_.get_executor(); }

private:
    asio::io_context ctx_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_;
    std::thread thread_;
};

// Counts the writer's log lines instead of printing them into the table.
struct LogTally {
    std::atomic<std::uint64_t> warnings{0}, errors{0};
    jsonlw::LogSink sink()
    {
        return [this](jsonlw::LogLevel level, std::string_view) {
            if (level == jsonlw::LogLevel::error) ++errors;
            else if (level == jsonlw::LogLevel::warning) ++warnings;
        };
    }
};

// Empty when the writer wrote `expect_written` records and lost or kept none.
inline std::string stats_problem(const jsonlw::WriterStats& st, std::uint64_t expect_written)
{
    if (st.written == expect_written && st.dropped.total() == 0 && st.unknown == 0 &&
        st.pending == 0)
        return {};
    return fmt::format("stats: written {} (expected {}), dropped {}, unknown {}, pending {}",
                       st.written, expect_written, st.dropped.total(), st.unknown, st.pending);
}

}  // namespace bench
