// JsonlRecordWriter basics: the file and its lines, batching, malformed and unexpected
// records, sanitized text, flush_interval, which thread writes, inert and disabled writers
// (TensorRT-LLM's Python writer's tests among them, ported).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/thread_pool.hpp>

#include <unistd.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <ctime>
#include <limits>
#include <cctype>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

std::string line_of(int id, const std::string& text, const std::string& value = "0.0")
{
    return R"({"id":)" + std::to_string(id) + R"(,"text":")" + text + R"(","value":)" + value + "}";
}

std::string hostname()
{
    char buf[HOST_NAME_MAX + 1] = {};
    ::gethostname(buf, sizeof buf - 1);
    return buf;
}

Rec malformed(int id)
{
    Rec r = rec(id);
    r.throw_malformed = true;
    return r;
}
Rec buggy(int id)
{
    Rec r = rec(id);
    r.throw_other = true;
    return r;
}
Rec key_error(int id)
{
    Rec r = rec(id);
    r.throw_key_error = true;
    return r;
}
Rec layout_bug(int id)
{
    Rec r = rec(id);
    r.fail_write_batch = true;
    return r;
}

// async_flush / async_close through a callback: the error_code whatever it is.
template <class W>
std::error_code flush_ec(W& w)
{
    std::promise<std::error_code> p;
    auto f = p.get_future();
    w.async_flush([&p](std::error_code ec) { p.set_value(ec); });
    return get_within(f);
}
template <class W>
std::pair<std::error_code, jsonlw::CloseReport> close_ec(W& w)
{
    std::promise<std::pair<std::error_code, jsonlw::CloseReport>> p;
    auto f = p.get_future();
    w.async_close([&p](std::error_code ec, jsonlw::CloseReport r) { p.set_value({ec, r}); });
    return get_within(f);
}

}  // namespace

TEST_CASE("records become one compact JSON line each, in submission order, in <stem>-<host>-<pid>-<UTC>.jsonl; a second start() changes nothing",
          "[integration][writer]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    CHECK(w.file_path().empty());
    CHECK(w.options().stem == "test");
    CHECK(w.options().subject == "test");
    CHECK(w.get_executor() == boost::asio::any_io_executor(h.executor()));

    const std::time_t before = std::time(nullptr);
    w.start();
    const std::time_t after = std::time(nullptr);
    const std::filesystem::path path = w.file_path();
    REQUIRE_FALSE(path.empty());
    CHECK(path.parent_path() == h.dir.path());

    // <stem>-<hostname>-<pid>-<YYYYMMDDTHHMMSSZ>.jsonl, the time taken at start().
    const std::string name = path.filename().string();
    const std::string prefix = "test-" + hostname() + "-" + std::to_string(::getpid()) + "-";
    INFO("file name " << name);
    REQUIRE(name.rfind(prefix, 0) == 0);
    // YYYYMMDDTHHMMSSZ.jsonl
    const std::string stamp = name.substr(prefix.size());
    REQUIRE(stamp.size() == 22);
    for (std::size_t i : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 9u, 10u, 11u, 12u, 13u, 14u})
        REQUIRE(std::isdigit(static_cast<unsigned char>(stamp[i])));
    REQUIRE(stamp[8] == 'T');
    REQUIRE(stamp.substr(15) == "Z.jsonl");
    const auto num = [&](std::size_t pos, std::size_t len) { return std::stoi(stamp.substr(pos, len)); };
    std::tm tm{};
    tm.tm_year = num(0, 4) - 1900;
    tm.tm_mon = num(4, 2) - 1;
    tm.tm_mday = num(6, 2);
    tm.tm_hour = num(9, 2);
    tm.tm_min = num(11, 2);
    tm.tm_sec = num(13, 2);
    const std::time_t t = ::timegm(&tm);
    CHECK(t >= before - 1);
    CHECK(t <= after + 1);

    std::vector<std::string> want;
    for (int i = 0; i < 100; ++i) {
        const std::string text = "text " + std::to_string(i);
        const double value = i * 0.5;
        REQUIRE(w.submit(rec(i, text, value)) == SubmitResult::accepted);
        want.push_back(line_of(i, text, std::to_string(i / 2) + (i % 2 ? ".5" : ".0")));
    }
    h.loop.start();  // the drain finds all 100 queued: batches of exactly 64 and 36
    flush(w);

    w.start();  // a second start(): same file, nothing new
    CHECK(w.file_path() == path);
    REQUIRE(w.submit(rec(100, "after")) == SubmitResult::accepted);
    want.push_back(line_of(100, "after"));
    flush(w);

    const std::string content = read_file(path);
    REQUIRE_FALSE(content.empty());
    CHECK(content.back() == '\n');
    CHECK(split_lines(content) == want);
    CHECK(files_in(h.dir.path()) == std::vector<std::string>{name});

    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.submitted == 101);
    CHECK(s.written == 101);
    CHECK(s.pending == 0);
    CHECK(s.dropped.total() == 0);
    CHECK(s.bytes == content.size());
    CHECK(s.batches == 3);  // 64 + 36, then the record after the second start()
    CHECK(invariant_holds(s));
    CHECK(h.logs.count(LogLevel::warning) == 0);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("10 queued records with batch_records = 4 are appended as 4, 4 and 2", "[integration][writer]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 4;
    TestWriter w(h.executor(), o);
    w.start();
    // All ten are queued before the drain first runs.
    for (int i = 0; i < 10; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{4, 4, 2});
    const auto calls = h.seam->writev_calls();
    REQUIRE(calls.size() == 3);
    std::size_t bytes = 0;
    for (const auto& c : calls) {
        CHECK(c.result == static_cast<ssize_t>(c.bytes));
        bytes += c.bytes;
    }
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.batches == 3);
    CHECK(s.written == 10);
    CHECK(s.bytes == bytes);
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    CHECK(invariant_holds(s));
}

TEST_CASE("while an append is slow, queued records are gathered into full batches", "[integration][writer][batching]")
{
    Harness h(with_seam);
    TestWriter w(h.executor(), h.options());  // batch_records: the default 64
    ReleaseOnExit release(h.seam);
    h.start(w);
    h.seam->hold_writev();
    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(h.seam->wait_writev_held());
    for (int i = 1; i <= 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.seam->release();
    flush(w);
    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{1, 64, 36});
    CHECK(w.stats().batches == 3);
    CHECK(count_lines(w.file_path()) == 101);
}

TEST_CASE("with a long flush_interval, a full batch is written at once, and flush and close do not wait for the interval",
          "[integration][writer]")
{
    Harness h;
    auto o = h.options();
    o.flush_interval = std::chrono::hours(1);
    o.batch_records = 4;
    TestWriter w(h.executor(), o);
    h.start(w);
    for (int i = 0; i < 4; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 4; }));
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    flush(w);
    CHECK(count_lines(w.file_path()) == 5);
    REQUIRE(w.submit(rec(5)) == SubmitResult::accepted);
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == 6);
    CHECK(count_lines(w.file_path()) == 6);
}

TEST_CASE("records submitted before start() wait in the queue and are written once it starts", "[integration][writer]")
{
    Harness h;
    h.loop.start();
    TestWriter w(h.executor(), h.options());
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    CHECK(files_in(h.dir.path()).empty());  // nothing on disk before start()
    w.start();
    flush(w);
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{1, 2});
    CHECK(w.stats().written == 2);
}

TEST_CASE("a record JSON cannot represent (NaN, infinity) is dropped alone and logged once", "[integration][writer][malformed]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    w.start();
    REQUIRE(w.submit(rec(0, "a", 1.5)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(1, "nan", std::nan(""))) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2, "inf", std::numeric_limits<double>::infinity())) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(3, "b", -2)) == SubmitResult::accepted);
    h.loop.start();  // the four are one batch
    flush(w);

    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(0, "a", "1.5"), line_of(3, "b", "-2.0")});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 2);
    CHECK(s.dropped.malformed == 2);
    CHECK(s.dropped.unexpected == 0);
    CHECK(s.batches == 1);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Dropped malformed test record") == 1);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("a malformed record (MalformedRecord from serialize) is dropped alone and logged; the rest of its batch is written",
          "[integration][writer][malformed]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 8192;  // the section queues 2,501 records at once
    o.batch_records = 4096;
    TestWriter w(h.executor(), o);
    w.start();
    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(w.submit(malformed(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(0, "r0"), line_of(2, "r2")});
    CHECK(w.stats().dropped.malformed == 1);
    INFO(h.logs.dump());
    const auto warnings = h.logs.matching(LogLevel::warning, "Dropped malformed test record");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].rfind("Dropped malformed test record: record 1 is bad", 0) == 0);

    SECTION("the malformed warning is rate-limited: the first, then every 1000th")
    {
        // 2,500 more malformed records (2,501 in all): warnings for the 1st, 1000th and 2000th.
        for (int i = 0; i < 2500; ++i) REQUIRE(w.submit(malformed(10 + i)) == SubmitResult::accepted);
        REQUIRE(w.submit(rec(9999)) == SubmitResult::accepted);
        flush(w);
        CHECK(h.logs.count(LogLevel::warning, "Dropped malformed test record") == 3);
        const auto s = w.stats();
        INFO("stats: " << s);
        CHECK(s.dropped.malformed == 2501);
        CHECK(s.written == 3);
        CHECK(invariant_holds(s));
        CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 2, 9999});
    }
}

TEST_CASE("a configuration decides which errors are malformed: KeyError is malformed, a serializer bug is unexpected with its message logged, the rest is written",
          "[integration][writer]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    w.start();
    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(w.submit(key_error(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    REQUIRE(w.submit(buggy(3)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(0, "r0"), line_of(2, "r2"), line_of(4, "r4")});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 3);
    CHECK(s.dropped.malformed == 1);
    CHECK(s.dropped.unexpected == 1);
    CHECK(invariant_holds(s));

    INFO(h.logs.dump());
    const auto warnings = h.logs.matching(LogLevel::warning, "Dropped malformed test record");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("'server'") != std::string::npos);
    const auto errors = h.logs.matching(LogLevel::error);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].find("serializer bug in 3") != std::string::npos);
}

TEST_CASE("unexpected errors are logged first, then every 1000th, per stage", "[integration][writer]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 1;  // one write_batch() per record
    o.queue_capacity = 8192;
    TestWriter w(h.executor(), o);
    w.start();
    // 2,500 serializer bugs (stage serialize), then 1,500 layout bugs (stage write), then one
    // good record. Per stage: serialize logs #1, #1000, #2000; write logs its #1 and #1000 even
    // though 2,500 unexpected errors came before it.
    for (int i = 0; i < 2500; ++i) REQUIRE(w.submit(buggy(i)) == SubmitResult::accepted);
    for (int i = 0; i < 1500; ++i) REQUIRE(w.submit(layout_bug(10000 + i)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(99999)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    INFO(h.logs.dump().substr(0, 4000));
    CHECK(h.logs.count(LogLevel::error, "serializer bug") == 3);
    CHECK(h.logs.count(LogLevel::error, "layout bug") == 2);
    CHECK(h.logs.count(LogLevel::error) == 5);
    CHECK(h.logs.matching(LogLevel::error, "layout bug").front().find("layout bug at 10000") != std::string::npos);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.dropped.unexpected == 4000);
    CHECK(s.written == 1);
    CHECK(invariant_holds(s));
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{99999});
}

TEST_CASE("an unexpected failure in write_batch costs its batch, not the drain, and is logged with its message",
          "[integration][writer]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    flush(w);
    REQUIRE(w.submit(layout_bug(2)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(3)) == SubmitResult::accepted);  // same batch as 2 (or not): checked by counts
    flush(w);
    REQUIRE(w.submit(rec(4)) == SubmitResult::accepted);
    flush(w);

    const auto s = w.stats();
    INFO("stats: " << s);
    INFO(h.logs.dump());
    const auto ids = ids_of(read_lines(w.file_path()));
    REQUIRE(ids.size() >= 2);
    CHECK(ids.front() == 1);
    CHECK(ids.back() == 4);
    CHECK(s.written == ids.size());
    CHECK(s.dropped.unexpected == 4 - ids.size());
    CHECK(s.dropped.unexpected >= 1);
    CHECK(invariant_holds(s));
    CHECK(h.logs.count(LogLevel::error, "layout bug at 2") == 1);
}

TEST_CASE("invalid UTF-8 in a record is replaced by U+FFFD and counted as sanitized; the record is kept", "[integration][writer][utf8]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    REQUIRE(w.submit(rec(1, "caf\xC3\xA9")) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2, "bad\xFF" "byte")) == SubmitResult::accepted);
    flush(w);
    CHECK(read_lines(w.file_path()) ==
          std::vector<std::string>{line_of(1, "caf\xC3\xA9"), line_of(2, "bad\xEF\xBF\xBD" "byte")});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 2);
    CHECK(s.sanitized == 1);
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));
}

TEST_CASE("with flush_interval a lone record reaches the file without further submits or a flush", "[integration][writer]")
{
    Harness h;
    auto o = h.options();
    o.flush_interval = std::chrono::milliseconds(50);
    TestWriter w(h.executor(), o);
    h.start(w);
    REQUIRE(w.submit(rec(42)) == SubmitResult::accepted);
    // Waits on the file itself (generous deadline), not on a sleep and not on async_flush.
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 1; }));
    CHECK(read_lines(w.file_path()) == std::vector<std::string>{line_of(42, "r42")});
    CHECK(wait_until([&] { return w.stats().written == 1; }));

    // And again for a second lone record, after the drain went idle.
    REQUIRE(w.submit(rec(43)) == SubmitResult::accepted);
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 2; }));
}

TEST_CASE("without flush_interval a lone record also reaches the file without a flush", "[integration][writer]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    REQUIRE(w.submit(rec(7)) == SubmitResult::accepted);
    CHECK(wait_until([&] { return count_lines(w.file_path()) == 1; }));
}

TEST_CASE("the user's executor never runs the append or the serialization", "[integration][writer][threads]")
{
    Harness h(with_seam);
    TestWriter w(h.executor(), h.options());
    h.start(w);
    for (int i = 0; i < 50; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    flush(w);
    const auto calls = h.seam->writev_calls();
    REQUIRE_FALSE(calls.empty());
    for (const auto& c : calls) {
        CHECK(c.thread != h.loop.thread_id());
        CHECK(c.thread != std::this_thread::get_id());
    }
    const auto ser = w.serialize_threads();
    REQUIRE_FALSE(ser.empty());
    CHECK(ser.count(h.loop.thread_id()) == 0);
    CHECK(w.stats().written == 50);
}

TEST_CASE("with io_executor given, appends run on that executor and not on the user's", "[integration][writer][threads]")
{
    Harness h(with_seam);
    boost::asio::thread_pool pool(1);
    std::atomic<int> on_pool{0}, on_loop{0}, calls{0};
    h.seam->on_writev([&] {
        ++calls;
        on_pool += pool.get_executor().running_in_this_thread() ? 1 : 0;
        on_loop += h.executor().running_in_this_thread() ? 1 : 0;
    });
    auto o = h.options();
    o.io_executor = pool.get_executor();
    {
        TestWriter w(h.executor(), o);
        h.start(w);
        for (int i = 0; i < 20; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        flush(w);
        CHECK(w.stats().written == 20);
        CHECK(count_lines(w.file_path()) == 20);
    }
    REQUIRE(calls.load() > 0);
    CHECK(on_pool.load() == calls.load());
    CHECK(on_loop.load() == 0);
}

TEST_CASE("a writer without an output directory is inert: nothing created, nothing counted, submit returns disabled",
          "[integration][writer]")
{
    Harness h;
    // Run from inside the empty temp dir, to see that nothing is created relative to it.
    const auto old_cwd = std::filesystem::current_path();
    std::filesystem::current_path(h.dir.path());
    struct Restore {
        std::filesystem::path p;
        ~Restore() { std::filesystem::current_path(p); }
    } restore{old_cwd};

    jsonlw::WriterOptions o;
    o.log = h.logs.sink();
    TestWriter w(h.executor(), o);
    w.start();
    w.start();
    h.loop.start();
    CHECK(w.file_path().empty());
    for (int i = 0; i < 5; ++i) CHECK(w.submit(rec(i)) == SubmitResult::disabled);
    CHECK(w.stats() == jsonlw::WriterStats{});

    const auto fec = flush_ec(w);
    CHECK((!fec || fec == jsonlw::errc::disabled));
    const auto [cec, report] = close_ec(w);
    CHECK((!cec || cec == jsonlw::errc::disabled));
    CHECK(report.stats == jsonlw::WriterStats{});
    CHECK(w.stats() == jsonlw::WriterStats{});
    CHECK(files_in(h.dir.path()).empty());
    CHECK(h.logs.count(LogLevel::warning) == 0);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("an output directory that cannot be created disables the writer with one error log", "[integration][writer]")
{
    Harness h;
    write_file(h.dir / "blocker", "a regular file\n");
    auto o = test_options(h.dir / "blocker" / "sub", h.logs);
    TestWriter w(h.executor(), o);
    REQUIRE_NOTHROW(w.start());
    REQUIRE_NOTHROW(w.start());
    h.loop.start();

    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::error) == 1);
    CHECK(h.logs.count(LogLevel::error, "Disabling test JSONL output") == 1);
    CHECK(w.file_path().empty());
    for (int i = 0; i < 3; ++i) CHECK(w.submit(rec(i)) == SubmitResult::disabled);
    CHECK(w.stats() == jsonlw::WriterStats{});
    const auto fec = flush_ec(w);
    CHECK((!fec || fec == jsonlw::errc::disabled));
    const auto [cec, report] = close_ec(w);
    CHECK((!cec || cec == jsonlw::errc::disabled));
    CHECK(h.logs.count(LogLevel::error) == 1);
    CHECK(std::filesystem::is_regular_file(h.dir / "blocker"));
    CHECK(files_in(h.dir.path()) == std::vector<std::string>{"blocker"});
}

TEST_CASE("stats are per writer, never process-global", "[integration][writer][stats]")
{
    Harness h;
    auto oa = h.options();
    oa.stem = "a";
    auto ob = h.options();
    ob.stem = "b";
    TestWriter a(h.executor(), oa);
    TestWriter b(h.executor(), ob);
    a.start();
    b.start();
    h.loop.start();
    for (int i = 0; i < 3; ++i) REQUIRE(a.submit(rec(i)) == SubmitResult::accepted);
    for (int i = 0; i < 5; ++i) REQUIRE(b.submit(rec(i)) == SubmitResult::accepted);
    REQUIRE(b.submit(malformed(9)) == SubmitResult::accepted);
    flush(a);
    flush(b);
    CHECK(a.stats().written == 3);
    CHECK(a.stats().dropped.malformed == 0);
    CHECK(b.stats().written == 5);
    CHECK(b.stats().dropped.malformed == 1);
    CHECK(a.file_path() != b.file_path());
    CHECK(count_lines(a.file_path()) == 3);
    CHECK(count_lines(b.file_path()) == 5);
}
