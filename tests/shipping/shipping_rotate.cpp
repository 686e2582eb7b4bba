// Files for a shipper: rotated by size and age, renamed from *.jsonl.open to *.jsonl when
// done, every line numbered by the envelope; SIGHUP closes the current file (rotates it),
// SIGTERM or SIGINT closes the writer. Usage: shipping_rotate [DIR] (default: records).
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include <chrono>
#include <csignal>

using namespace std::chrono_literals;

// Re-arms itself: every SIGHUP rotates the file at the next batch boundary.
void reopen_on_sighup(boost::asio::signal_set& hup, jsonlw::RawJsonWriter& writer)
{
    hup.async_wait([&hup, &writer](jsonlw::error_code ec, int) {
        if (ec) return;  // cancelled: shutting down
        writer.reopen();
        reopen_on_sighup(hup, writer);
    });
}

int main(int argc, char** argv)
{
    boost::asio::io_context io;
    jsonlw::RawJsonWriter writer(io.get_executor(),
                                 {.directory = argc > 1 ? argv[1] : "records",
                                  .stem = "requests",
                                  .rotation = {.rotate_bytes = 64 << 20,  // at most 64 MiB a file
                                               .rotate_interval = 10min},  // at most 10 min old
                                  .envelope = true});        // {"seq":N,"writer":"…",…}
    writer.start();

    boost::asio::signal_set hup(io, SIGHUP);
    boost::asio::signal_set term(io, SIGTERM, SIGINT);
    reopen_on_sighup(hup, writer);
    term.async_wait([&](jsonlw::error_code ec, int) {
        if (ec) return;
        hup.cancel();
        writer.async_close([&](jsonlw::error_code, jsonlw::CloseReport r) {
            // Every file now has its final name; the last one too.
            for (const auto& f : writer.files()) fmt::print("{}\n", f.string());
            fmt::print("writer {}: written {}, dropped {}\n", writer.writer_id(),
                       r.stats.written, r.stats.dropped.seq_gaps() + r.stats.unknown);
        });
    });

    // The demonstration: records, a SIGHUP (logrotate's postrotate would send it), more
    // records, then SIGTERM. Prints two files: …-000000.jsonl and …-000001.jsonl.
    boost::asio::steady_timer later(io);
    boost::asio::post(io, [&] {
        for (int i = 0; i < 100; ++i) writer.submit(fmt::format(R"({{"step":{}}})", i));
        std::raise(SIGHUP);
        later.expires_after(20ms);
        later.async_wait([&](jsonlw::error_code) {
            for (int i = 100; i < 200; ++i) writer.submit(fmt::format(R"({{"step":{}}})", i));
            std::raise(SIGTERM);
        });
    });
    io.run();
}
