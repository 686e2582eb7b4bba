// Callbacks: construct, start, submit, flush, read the stats, close.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

int main()
{
    boost::asio::io_context io;
    jsonlw::RawJsonWriter writer(io.get_executor(), {
        .directory = "jsonlw-out/embedding",
        .stem = "events",
        .subject = "event",  // logs say "Dropped 3 event records"
        .queue_capacity = 4096,
        .flush_interval = std::chrono::milliseconds(50),
    });
    writer.start();  // creates the directory, opens nothing yet, starts the drain

    // submit() never blocks; its result says what happened to this one record.
    jsonlw::SubmitResult r = writer.submit(R"({"event":"boot","ok":true})");
    if (r != jsonlw::SubmitResult::accepted)
        fmt::print("not queued: {}\n", jsonlw::to_string(r));

    writer.async_flush([&](jsonlw::error_code ec) {  // everything submitted so far is resolved
        const jsonlw::WriterStats s = writer.stats();  // a snapshot; callable from any thread
        fmt::print("flush: {} | written {} pending {}\n", ec.message(), s.written, s.pending);
        writer.submit(R"({"event":"shutdown"})");
        writer.async_close([](jsonlw::error_code, jsonlw::CloseReport report) {
            fmt::print("closed: written {}, dropped {}, drained {}\n", report.stats.written,
                       report.stats.dropped.total(), report.drained);
        });
    });
    io.run();  // returns once the close has completed
}
