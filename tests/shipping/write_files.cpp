// Writes the files the shipping checks read (docs/shipping.md): three RawJsonWriters with the
// envelope on and rotate_bytes small enough for several numbered files each, with drops the
// writers count — malformed lines, evictions from a tiny drop_oldest queue, refusals of a
// tiny drop_newest queue (queue_full) — then prints what each writer counted, as JSON:
//
//   {"writers":[{"writer":"<id>","written":N,"seq_gaps":N,"unknown":N,"dropped":{...},
//                "files":["…", …]}, …],
//    "expected_lost":{"<id>":N, …}}
//
// expected_lost is seq_gaps + unknown: what max(seq) + 1 - count(DISTINCT seq) per writer
// must give over the files when the writer's last accepted record was written (each writer
// here ends with a valid record). Usage: write_files DIR [STATS.json] (default: stdout);
// a one-line summary per writer follows on stdout.
// Exits 1 when the files the writers report are not there, still carry ".open", or are empty.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// One submitting job: `bursts` bursts of `per_burst` records, a timer tick apart, so a
// small queue overflows inside a burst and drains between them. Every `malformed_every`th
// record is not JSON; the last record of all is always valid.
struct Job {
    jsonlw::RawJsonWriter& writer;
    boost::asio::steady_timer timer;
    int bursts;
    int per_burst;
    int malformed_every;
    int n = 0;

    void burst()
    {
        for (int i = 0; i < per_burst; ++i, ++n) {
            const bool last = n + 1 == bursts * per_burst;
            if (!last && malformed_every > 0 && n % malformed_every == malformed_every - 1)
                writer.submit(fmt::format(R"({{"n":{},"oops")", n));  // truncated: malformed
            else
                writer.submit(fmt::format(R"({{"n":{},"step":{},"text":"{}"}})", n, n % 97,
                                          std::string(static_cast<std::size_t>(n % 61), 'x')));
        }
        if (n == bursts * per_burst / 2) writer.reopen();  // as a SIGHUP handler would
        if (n < bursts * per_burst) {
            timer.expires_after(1ms);
            timer.async_wait([this](jsonlw::error_code ec) {
                if (!ec) burst();
            });
        }
    }
};

std::string json_string(const std::string& s)
{
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: write_files DIR [STATS.json]\n");
        return 2;
    }
    const fs::path dir = argv[1];
    fs::remove_all(dir);

    // Errors only: the malformed-record warnings are expected here.
    const jsonlw::LogSink errors_only = [](jsonlw::LogLevel level, std::string_view message) {
        if (level == jsonlw::LogLevel::error) jsonlw::log_to_stderr(level, message);
    };
    boost::asio::io_context io;
    // Writer 1: a queue of 16 that evicts its oldest record, so bursts of 24 lose some.
    jsonlw::RawJsonWriter a(io.get_executor(),
                            {.directory = dir,
                             .stem = "requests",
                             .subject = "requests",
                             .queue_capacity = 16,
                             .batch_records = 4,
                             .overflow = jsonlw::Overflow::drop_oldest,
                             .log = errors_only,
                             .rotation = {.rotate_bytes = 1024},
                             .envelope = true});
    // Writer 2: in a subfolder (loaders glob recursively), a roomy queue, malformed lines.
    jsonlw::RawJsonWriter b(io.get_executor(),
                            {.directory = dir / "worker-1",
                             .stem = "metrics",
                             .subject = "metrics",
                             .log = errors_only,
                             .rotation = {.rotate_bytes = 8192},
                             .envelope = true});
    // Writer 3: a queue of 16 that refuses the newest record (queue_full, as the perf-metrics
    // writer does): refusals are numbered too, as seq gaps.
    jsonlw::RawJsonWriter c(io.get_executor(),
                            {.directory = dir / "worker-2",
                             .stem = "refusing",
                             .subject = "refusing",
                             .queue_capacity = 16,
                             .batch_records = 4,
                             .log = errors_only,
                             .rotation = {.rotate_bytes = 2048},
                             .envelope = true});
    a.start();
    b.start();
    c.start();
    Job ja{a, boost::asio::steady_timer(io), 30, 24, 23};
    Job jb{b, boost::asio::steady_timer(io), 20, 50, 41};
    Job jc{c, boost::asio::steady_timer(io), 30, 24, 0};
    ja.burst();
    jb.burst();
    jc.burst();

    std::vector<jsonlw::CloseReport> reports;
    int closing = 0;
    boost::asio::steady_timer wait_jobs(io);
    // Close once both jobs have submitted everything.
    std::function<void()> close_when_done = [&] {
        if (ja.n < ja.bursts * ja.per_burst || jb.n < jb.bursts * jb.per_burst ||
            jc.n < jc.bursts * jc.per_burst) {
            wait_jobs.expires_after(5ms);
            wait_jobs.async_wait([&](jsonlw::error_code) { close_when_done(); });
            return;
        }
        // The refusing writer's last record must be written (a drop after a writer's last
        // line is invisible in the files): once its queue is empty, one more record.
        c.async_flush([&](jsonlw::error_code) {
            if (c.submit(R"({"n":"last"})") != jsonlw::SubmitResult::accepted)
                std::fprintf(stderr, "write_files: the last record was refused\n");
            for (auto* w : {&a, &b, &c}) {
                ++closing;
                w->async_close([&](jsonlw::error_code, jsonlw::CloseReport r) {
                    reports.push_back(r);
                    --closing;
                });
            }
        });
    };
    close_when_done();
    io.run();
    if (closing != 0 || reports.size() != 3) {
        std::fprintf(stderr, "write_files: the writers did not close\n");
        return 1;
    }

    int bad = 0;
    std::string out = "{\"writers\":[";
    std::string expected = "{";
    const jsonlw::RawJsonWriter* writers[] = {&a, &b, &c};
    for (int i = 0; i < 3; ++i) {
        const auto& w = *writers[i];
        const jsonlw::WriterStats s = w.stats();
        const auto& d = s.dropped;
        std::string files;
        for (const auto& f : w.files()) {
            if (!fs::is_regular_file(f) || fs::file_size(f) == 0 || f.extension() != ".jsonl") {
                std::fprintf(stderr, "write_files: %s: missing, empty or not *.jsonl\n",
                             f.c_str());
                ++bad;
            }
            files += (files.empty() ? "" : ",") + json_string(f.string());
        }
        if (w.files().size() < 3) {
            std::fprintf(stderr, "write_files: writer %s rotated into only %zu files\n",
                         w.writer_id().c_str(), w.files().size());
            ++bad;
        }
        if (d.seq_gaps() == 0) {
            std::fprintf(stderr, "write_files: writer %s dropped nothing\n",
                         w.writer_id().c_str());
            ++bad;
        }
        out += fmt::format(
            R"({}{{"writer":{},"written":{},"seq_gaps":{},"unknown":{},"files_closed":{},)"
            R"("dropped":{{"queue_full":{},"oldest_evicted":{},"malformed":{},"write_error":{},)"
            R"("shutdown":{},"unexpected":{},"closed":{}}},"files":[{}]}})",
            i ? "," : "", json_string(w.writer_id()), s.written, d.seq_gaps(), s.unknown,
            s.files_closed, d.queue_full, d.oldest_evicted, d.malformed, d.write_error,
            d.shutdown, d.unexpected, d.closed, files);
        expected += fmt::format("{}{}:{}", i ? "," : "", json_string(w.writer_id()),
                                d.seq_gaps() + s.unknown);
    }
    out += "],\"expected_lost\":" + expected + "}}\n";

    if (argc > 2)
        std::ofstream(argv[2]) << out;
    else
        std::fputs(out.c_str(), stdout);
    for (const auto* w : writers)
        std::printf("writer %s: %llu written in %zu files, %llu dropped (seq gaps)\n",
                    w->writer_id().c_str(), static_cast<unsigned long long>(w->stats().written),
                    w->files().size(),
                    static_cast<unsigned long long>(w->stats().dropped.seq_gaps() +
                                                    w->stats().unknown));
    return bad ? 1 : 0;
}
