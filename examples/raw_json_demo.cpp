// raw_json_demo: the main job until `jsonlw demo` exists. Embeds a RawJsonWriter in an
// io_context, submits N pre-built JSON objects (about 250 bytes each) from the loop thread,
// closes the writer, then prints where every record went, the throughput, and the file.
//
//   raw_json_demo [--records N] [--dir D] [--queue N] [--batch N] [--no-verify]
//
// The producer is a coroutine on the loop: it submits a slice of records, then yields so the
// drain (which runs on the same loop) gets its turn; when the queue is close to full it waits
// a moment instead of dropping. So the loop never blocks and, on a healthy disk, nothing is
// dropped. Records cycle through a pool of pre-built texts so that building them is not timed.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
    std::uint64_t records = 1'000'000;
    std::string dir = "jsonlw-out";
    std::size_t queue = 65'536;
    std::size_t batch = 1'024;
    bool verify = true;
};

[[noreturn]] void usage(int code)
{
    fmt::print(code ? stderr : stdout,
               "usage: raw_json_demo [--records N] [--dir D] [--queue N] [--batch N] [--no-verify]\n"
               "  --records N   records to write (default 1000000)\n"
               "  --dir D       output directory, created if missing (default ./jsonlw-out)\n"
               "  --queue N     queue capacity in records (default 65536)\n"
               "  --batch N     records per append at most (default 1024)\n"
               "  --no-verify   skip reading the file back and validating every line\n");
    std::exit(code);
}

std::uint64_t parse_count(std::string_view flag, const char* text)
{
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || v == 0) {
        fmt::print(stderr, "raw_json_demo: {} needs a positive integer, got '{}'\n", flag, text);
        usage(2);
    }
    return v;
}

Args parse_args(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                fmt::print(stderr, "raw_json_demo: {} needs a value\n", arg);
                usage(2);
            }
            return argv[++i];
        };
        if (arg == "--records") a.records = parse_count(arg, next());
        else if (arg == "--dir") a.dir = next();
        else if (arg == "--queue") a.queue = parse_count(arg, next());
        else if (arg == "--batch") a.batch = parse_count(arg, next());
        else if (arg == "--no-verify") a.verify = false;
        else if (arg == "-h" || arg == "--help") usage(0);
        else {
            fmt::print(stderr, "raw_json_demo: unknown argument '{}'\n", arg);
            usage(2);
        }
    }
    return a;
}

// A pool of distinct JSON objects shaped like a serving process's per-request record. Some
// carry insignificant whitespace, which the writer removes (it minifies every record).
std::vector<std::string> build_pool(std::size_t n)
{
    static constexpr std::string_view models[] = {"llama-3.1-8b-instruct", "mistral-7b-v0.3",
                                                  "qwen2.5-14b-instruct", "gemma-2-9b-it"};
    static constexpr std::string_view reasons[] = {"stop", "length", "stop", "stop"};
    std::vector<std::string> pool;
    pool.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const char* sep = (i % 8 == 0) ? ", " : ",";
        pool.push_back(fmt::format(
            R"({{"request_id":"req-{:08x}-{:04x}"{}"model":"{}","arrival_time":{:.6f},)"
            R"("prompt_tokens":{},"completion_tokens":{},"ttft_ms":{:.3f},"itl_ms":{:.3f},)"
            R"("e2e_ms":{:.3f},"finish_reason":"{}","tags":["demo","jsonlw"],"cached":{}}})",
            0x5eed0000u + i * 2654435761u % 0xffffu, i % 0xffff, sep, models[i % 4],
            1732900000.0 + i * 0.0137, 64 + (i * 37) % 2048, 1 + (i * 13) % 512,
            12.5 + (i % 97) * 0.731, 8.0 + (i % 31) * 0.113, 150.0 + (i % 1000) * 3.77,
            reasons[i % 4], (i % 3 == 0) ? "true" : "false"));
    }
    return pool;
}

// Submits `count` records from the loop: a slice at a time, yielding in between; waits
// briefly (without blocking the loop) when fewer than a slice of free slots remain.
asio::awaitable<void> produce(jsonlw::RawJsonWriter& writer, const std::vector<std::string>& pool,
                              std::uint64_t count, std::size_t capacity)
{
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer backoff(ex);
    const std::uint64_t slice = std::max<std::uint64_t>(1, std::min<std::size_t>(512, capacity / 4));
    std::uint64_t i = 0;
    while (i < count) {
        if (writer.stats().pending + slice > capacity) {
            backoff.expires_after(std::chrono::microseconds(200));
            co_await backoff.async_wait(asio::use_awaitable);
            continue;
        }
        const std::uint64_t end = std::min(count, i + slice);
        for (; i < end; ++i) writer.submit(pool[i % pool.size()]);
        co_await asio::post(ex, asio::use_awaitable);  // let the drain run
    }
}

// Reads the file back: counts lines and parses each one in full.
bool verify_file(const std::filesystem::path& path, std::uint64_t expected_lines)
{
    simdjson::padded_string text;
    if (auto err = simdjson::padded_string::load(path.string()).get(text)) {
        fmt::print("verify:     cannot read {}: {}\n", path.string(), simdjson::error_message(err));
        return false;
    }
    simdjson::dom::parser parser;
    std::string_view rest(text.data(), text.size());
    std::uint64_t lines = 0, invalid = 0;
    while (!rest.empty()) {
        const auto nl = rest.find('\n');
        if (nl == std::string_view::npos) {  // a torn last line
            ++invalid;
            break;
        }
        simdjson::dom::element doc;
        if (parser.parse(rest.data(), nl, true).get(doc)) ++invalid;
        ++lines;
        rest.remove_prefix(nl + 1);
    }
    const bool ok = invalid == 0 && lines == expected_lines;
    fmt::print("verify:     {} lines read back, {} invalid, {} expected -> {}\n", lines, invalid,
               expected_lines, ok ? "ok" : "MISMATCH");
    return ok;
}

}  // namespace

int main(int argc, char** argv)
try {
    const Args args = parse_args(argc, argv);
    const std::vector<std::string> pool = build_pool(1000);
    std::size_t pool_bytes = 0;
    for (const auto& s : pool) pool_bytes += s.size();

    asio::io_context io;
    jsonlw::RawJsonWriter writer(io.get_executor(), {
        .directory = args.dir,
        .stem = "raw_json_demo",
        .subject = "demo",
        .queue_capacity = args.queue,
        .batch_records = args.batch,
        .shutdown_timeout = std::chrono::seconds(30),
    });
    writer.start();
    if (writer.file_path().empty()) {
        fmt::print(stderr, "raw_json_demo: the writer is disabled (see the log above)\n");
        return 1;
    }

    fmt::print("jsonlw {} raw_json_demo: {} records of ~{} B (a pool of {} pre-built texts), "
               "queue {}, batch {}\n",
               jsonlw::version_string, args.records, pool_bytes / pool.size(), pool.size(),
               args.queue, args.batch);

    const auto t0 = Clock::now();
    Clock::time_point t_submitted{}, t_closed{};
    jsonlw::CloseReport report;
    bool closed = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await produce(writer, pool, args.records, args.queue);
            t_submitted = Clock::now();
            auto [ec, r] = co_await writer.async_close(asio::as_tuple(asio::use_awaitable));
            t_closed = Clock::now();
            if (ec) fmt::print(stderr, "raw_json_demo: async_close: {}\n", ec.message());
            report = r;
            closed = true;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.run();
    if (!closed) {
        fmt::print(stderr, "raw_json_demo: the loop stopped before the writer closed\n");
        return 1;
    }

    const jsonlw::WriterStats& s = report.stats;
    const jsonlw::DropCounts& d = s.dropped;
    const double secs = std::chrono::duration<double>(t_closed - t0).count();
    const double submit_secs = std::chrono::duration<double>(t_submitted - t0).count();
    const bool balanced = s.submitted == s.written + d.total() + s.unknown + s.pending;

    fmt::print("submitted:  {}\n", s.submitted);
    fmt::print("written:    {}\n", s.written);
    fmt::print("dropped:    {} (queue_full {}, oldest_evicted {}, malformed {}, write_error {}, "
               "shutdown {}, unexpected {}, closed {})\n",
               d.total(), d.queue_full, d.oldest_evicted, d.malformed, d.write_error, d.shutdown,
               d.unexpected, d.closed);
    fmt::print("unknown:    {}, pending: {}, sanitized: {}\n", s.unknown, s.pending, s.sanitized);
    fmt::print("batches:    {} (avg {:.1f} records per append)\n", s.batches,
               s.batches ? double(s.written) / double(s.batches) : 0.0);
    fmt::print("bytes:      {} ({:.1f} MB)\n", s.bytes, s.bytes / 1e6);
    fmt::print("accounting: submitted == written + dropped + unknown + pending -> {}\n",
               balanced ? "ok" : "BROKEN");
    fmt::print("drained:    {}\n", report.drained ? "yes" : "no (shutdown_timeout passed)");
    fmt::print("time:       {:.1f} ms ({:.1f} ms to submit, the rest to drain and close)\n",
               secs * 1e3, submit_secs * 1e3);
    fmt::print("throughput: {:.0f} records/s, {:.1f} MB/s\n", secs > 0 ? s.written / secs : 0.0,
               secs > 0 ? s.bytes / 1e6 / secs : 0.0);
    fmt::print("file:       {}\n", writer.file_path().string());

    bool ok = balanced && report.drained;
    if (args.verify) ok = verify_file(writer.file_path(), s.written) && ok;
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    fmt::print(stderr, "raw_json_demo: {}\n", e.what());
    return 1;
}
