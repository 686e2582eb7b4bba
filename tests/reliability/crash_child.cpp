// The child of the crash test (crash.cpp): writes request-trace records through a durable
// RequestTraceWriter into <dir>, in batches of random size, and after each batch is flushed
// (so fsync'ed) prints "persisted <written> <submitted>" on stdout — from the flush's
// completion, while it goes on submitting — and the parent kills it with SIGKILL at a moment
// of its choosing.
//
//   crash_child DIR RUN stream          until killed
//   crash_child DIR RUN close COUNT     COUNT records, then async_close; prints "closed N"
//
// Records: trace_id "tr_<RUN>_<SEQ>", SEQ from 0 in submission order; a JSON body with a
// random-length padding, so batches vary from a few hundred bytes to tens of kilobytes.
#include <jsonlw/request_trace_writer.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <thread>

namespace {

void say(const std::string& line)
{
    std::string s = line + "\n";
    const char* p = s.data();
    std::size_t n = s.size();
    while (n > 0) {
        const ssize_t w = ::write(1, p, n);
        if (w <= 0) std::_Exit(4);
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: crash_child DIR RUN stream|close [COUNT]\n");
        return 2;
    }
    const std::string dir = argv[1];
    const int run = std::atoi(argv[2]);
    const bool close_mode = std::string_view(argv[3]) == "close";
    const long count = argc > 4 ? std::atol(argv[4]) : 0;

    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    std::thread loop([&] { io.run(); });

    int rc = 0;
    {
        jsonlw::RequestTraceOptions o{{.directory = dir,
                                       .log = [](jsonlw::LogLevel, std::string_view) {}}};
        o.durable = true;
        o.writer_suffix = std::string("-crash");
        jsonlw::RequestTraceWriter w(io.get_executor(), std::move(o));
        w.start();
        say("sidecar " + w.sidecar_path().string());
        std::mt19937 rng(static_cast<unsigned>(run) * 7919u + 17u);
        long seq = 0;
        for (;;) {
            const long n = close_mode ? count : 1 + static_cast<long>(rng() % 48);
            for (long k = 0; k < n; ++k, ++seq) {
                jsonlw::RequestTrace r;
                r.trace_id = fmt::format("tr_{}_{}", run, seq);
                r.session = "crash";
                r.route = "/v1/completions";
                r.headers = {{"Content-Type", "application/json"}};
                r.body = fmt::format(R"({{"run":{},"seq":{},"pad":"{}"}})", run, seq,
                                     std::string(rng() % 1500, 'x'));
                if (w.record_request(std::move(r)) != jsonlw::SubmitResult::accepted) {
                    say("refused");
                    std::_Exit(3);
                }
            }
            if (close_mode) {
                const auto report = w.async_close(boost::asio::use_future).get();
                say(fmt::format("closed {} {}", report.stats.written, report.stats.submitted));
                rc = report.drained && report.stats.written == static_cast<unsigned long>(count) ? 0 : 1;
                break;
            }
            // Reported from the loop thread while this one goes on submitting: the kill
            // lands in the middle of appends and fsyncs, not between them.
            w.async_flush([&w](jsonlw::error_code) {
                const auto s = w.stats();
                say(fmt::format("persisted {} {}", s.written, s.submitted));
            });
            if (w.stats().pending > 512) w.async_flush(boost::asio::use_future).get();
        }
    }
    guard.reset();
    loop.join();
    return rc;
}
