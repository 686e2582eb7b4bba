// Coroutines: the same operations with use_awaitable, plus async_submit under Overflow::block.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

namespace asio = boost::asio;

asio::awaitable<void> run(jsonlw::RawJsonWriter& writer)
{
    writer.start();
    for (int i = 0; i < 10'000; ++i) {
        // Under Overflow::block this waits (at most block_timeout) for room without
        // blocking the loop thread; with the other policies it completes at once.
        jsonlw::SubmitResult r = co_await writer.async_submit(
            fmt::format(R"({{"seq":{}}})", i), asio::use_awaitable);
        if (r != jsonlw::SubmitResult::accepted) break;
    }
    co_await writer.async_flush(asio::use_awaitable);  // throws system_error on failure
    jsonlw::CloseReport report = co_await writer.async_close(asio::use_awaitable);
    fmt::print("written {} of {} in {} batches\n", report.stats.written,
               report.stats.submitted, report.stats.batches);
}

int main()
{
    asio::io_context io;
    jsonlw::RawJsonWriter writer(io.get_executor(), {
        .directory = "jsonlw-out/embedding",
        .stem = "awaitable",
        .queue_capacity = 256,
        .overflow = jsonlw::Overflow::block,
        .block_timeout = std::chrono::milliseconds(500),
    });
    asio::co_spawn(io, run(writer), asio::detached);
    io.run();
}
