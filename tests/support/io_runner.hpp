// IoRunner: an io_context kept alive by a work guard and run on its own thread once start()
// is called (so a test can queue records before the drain first runs). Declare it before the
// writer: the writer must be destroyed before the io_context.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>
#include <thread>

namespace jsonlw_test {

class IoRunner {
public:
    IoRunner() : guard_(io_.get_executor()) {}
    IoRunner(const IoRunner&) = delete;
    IoRunner& operator=(const IoRunner&) = delete;
    ~IoRunner() { stop(); }

    void start()
    {
        if (!thread_.joinable()) thread_ = std::thread([this] { io_.run(); });
    }
    void stop()
    {
        guard_.reset();
        io_.stop();
        if (thread_.joinable()) thread_.join();
    }

    boost::asio::io_context& io() noexcept { return io_; }
    boost::asio::io_context::executor_type executor() noexcept { return io_.get_executor(); }
    // The id of the thread that runs the io_context (valid after start()).
    std::thread::id thread_id() const noexcept { return thread_.get_id(); }

private:
    boost::asio::io_context io_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
    std::thread thread_;
};

}  // namespace jsonlw_test
