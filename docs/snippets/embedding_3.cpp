// Futures: the loop runs on its own thread; another thread submits and waits on futures.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <fmt/format.h>

#include <future>
#include <thread>

namespace asio = boost::asio;

int main()
{
    asio::io_context io;
    auto work = asio::make_work_guard(io);  // keeps run() going while this thread works
    std::thread loop([&] { io.run(); });

    {
        jsonlw::RawJsonWriter writer(io.get_executor(), {
            .directory = "jsonlw-out/embedding",
            .stem = "future",
        });
        writer.start();
        for (int i = 0; i < 100; ++i)
            writer.submit(fmt::format(R"({{"seq":{},"from":"worker thread"}})", i));

        // void(error_code) becomes future<void>; void(error_code, CloseReport) becomes
        // future<CloseReport>. A failing error_code is rethrown by get() as system_error.
        std::future<void> flushed = writer.async_flush(asio::use_future);
        flushed.get();
        fmt::print("after flush: written {}\n", writer.stats().written);

        std::future<jsonlw::CloseReport> closed = writer.async_close(asio::use_future);
        const jsonlw::CloseReport report = closed.get();  // at most shutdown_timeout + margin
        fmt::print("closed: written {}, drained {}\n", report.stats.written, report.drained);
    }  // the writer is destroyed before the io_context it was constructed with

    work.reset();
    loop.join();
}
