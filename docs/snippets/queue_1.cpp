// A writer sized for a high rate: a large queue, long batches, nothing dropped; what starting
// it cost, and whether the submitting thread ever had to wake the drain.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <thread>

int main()
{
    boost::asio::io_context io;
    const auto t0 = std::chrono::steady_clock::now();
    jsonlw::RawJsonWriter writer(io.get_executor(), {
        .directory = "jsonlw-out/queue",
        .stem = "tokens",
        .queue_capacity = std::size_t{1} << 16,  // 65,536 cells of 512 B: 32 MiB, resident now
        .batch_records = 4096,
        .overflow = jsonlw::Overflow::block,  // a full queue makes submit() wait, not drop
    });
    writer.start();
    const double start_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    std::thread loop([&] { io.run(); });
    const std::string line = R"({"step":0,"token":1234,"logprob":-0.25})";
    for (int i = 0; i < 100000; ++i) writer.submit(std::string_view(line));  // copied into its cell

    writer.async_close([&](jsonlw::error_code, jsonlw::CloseReport report) {
        fmt::print("started in {:.0f} ms; written {}, dropped {}; drain woken by submit() {} "
                   "times\n",
                   start_ms, report.stats.written, report.stats.dropped.total(),
                   writer.drain_wakeups());
    });
    loop.join();
}
