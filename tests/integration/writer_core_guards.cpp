// Tests that fail on small wrong changes to the core, not only on crashes: exact per-reason
// counts after each fault, exact batch boundaries, each overflow policy's exact survivors, the
// block policy's wake-up threshold, `drained` and the flush waiters of a timed-out close, and
// the accounting of a write_batch() that appends too little or too much. Batches are made exact
// by submitting a whole group inside one handler on the loop thread: the drain runs on that
// thread, so it cannot pop before the group is complete.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/post.hpp>

#include <cerrno>
#include <climits>
#include <future>
#include <string>
#include <system_error>
#include <vector>

using namespace jsonlw_test;
using jsonlw::Durability;
using jsonlw::LogLevel;
using jsonlw::Overflow;
using jsonlw::SubmitResult;

namespace {

std::string line_of(int id)
{
    return R"({"id":)" + std::to_string(id) + R"(,"text":"r)" + std::to_string(id) + R"(","value":0.0})";
}

// Submits every id inside one handler on the loop thread; returns once they are queued.
template <class W>
void submit_group(IoRunner& loop, W& w, std::vector<int> ids)
{
    std::promise<void> done;
    boost::asio::post(loop.executor(), [&] {
        for (int id : ids) CHECK(w.submit(rec(id)) == SubmitResult::accepted);
        done.set_value();
    });
    get_within(done.get_future());
}

std::vector<int> range(int from, int to)
{
    std::vector<int> v;
    for (int i = from; i < to; ++i) v.push_back(i);
    return v;
}

// A seam whose writev calls each wait for a permit: lets exactly n batches through.
class GatedIo : public SeamFileIo {
public:
    void allow(int n)
    {
        {
            std::lock_guard lock(gate_mutex_);
            permits_ += n;
        }
        gate_cv_.notify_all();
    }
    void open() { allow(INT_MAX / 2); }
    // Waits until `n` writev calls have reached the gate (passed it or waiting at it).
    bool wait_entered(int n)
    {
        std::unique_lock lock(gate_mutex_);
        return gate_cv_.wait_for(lock, default_deadline, [&] { return entered_ >= n; });
    }
    ssize_t writev(int fd, const iovec* iov, int iovcnt) noexcept override
    {
        {
            std::unique_lock lock(gate_mutex_);
            ++entered_;
            gate_cv_.notify_all();
            gate_cv_.wait(lock, [&] { return permits_ > 0; });
            --permits_;
        }
        return SeamFileIo::writev(fd, iov, iovcnt);
    }

private:
    std::mutex gate_mutex_;
    std::condition_variable gate_cv_;
    int permits_ = 0;
    int entered_ = 0;
};

struct OpenOnExit {
    std::shared_ptr<GatedIo> io;
    ~OpenOnExit() { io->open(); }
};

// Every record's size hint is 100 bytes (for batch_bytes).
class SizedEncoder final : public TestEncoder {
public:
    std::size_t record_bytes(const Rec&) const noexcept override { return 100; }
};

// A layout with an accounting bug on request: records with key "skip" get no append; a batch
// with a record keyed "twice" is appended twice. Both to `path`.
class MiscountingEncoder final : public TestEncoder {
public:
    explicit MiscountingEncoder(std::filesystem::path path) : path_(std::move(path)) {}

    void write_batch(std::span<const Rec> batch, jsonlw::BatchOutput<Rec>& out) override
    {
        std::vector<const Rec*> kept;
        bool twice = false;
        for (const Rec& r : batch) {
            if (r.key != "skip") kept.push_back(&r);
            twice = twice || r.key == "twice";
        }
        out.append(path_, out.serialize_batch(std::span<const Rec* const>(kept)));
        if (twice) out.append(path_, out.serialize_batch(std::span<const Rec* const>(kept)));
    }

private:
    const std::filesystem::path path_;
};

}  // namespace

TEST_CASE("an async_flush still pending when async_close times out on a stuck append completes with timed_out",
          "[integration][core][shutdown]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 1;
    o.shutdown_timeout = std::chrono::milliseconds(200);
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.start(w);

    REQUIRE(h.stick_append(w, rec(0)));
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);

    std::promise<jsonlw::error_code> flushed;
    w.async_flush([&](jsonlw::error_code ec) { flushed.set_value(ec); });
    const auto report = close(w);
    INFO("stats: " << report.stats);
    CHECK_FALSE(report.drained);
    CHECK(report.stats.unknown == 1);           // record 0, mid-append
    CHECK(report.stats.dropped.shutdown == 1);  // record 1, still queued
    CHECK(report.stats.written == 0);
    CHECK(report.stats.pending == 0);
    CHECK(invariant_holds(report.stats));
    CHECK(get_within(flushed.get_future()) == jsonlw::make_error_code(jsonlw::errc::timed_out));
    CHECK(h.logs.count(LogLevel::warning, "Timed out flushing test JSONL") == 1);

    h.seam->release();
    // The stuck append returns after close gave up on it: nothing is counted twice.
    REQUIRE(wait_until([&] { return h.seam->writev_returned() == 1; }));
    const auto s = w.stats();
    INFO("after release: " << s);
    CHECK(s.unknown == 1);
    CHECK(s.written == 0);
    CHECK(invariant_holds(s));
}

TEST_CASE("drained is false exactly when close left something unwritten", "[integration][core][shutdown]")
{
    Harness h;
    auto o = h.options();
    h.loop.start();

    SECTION("everything written: drained")
    {
        TestWriter w(h.executor(), o);
        w.start();
        submit_group(h.loop, w, {1, 2, 3});
        const auto report = close(w);
        INFO("stats: " << report.stats);
        CHECK(report.drained);
        CHECK(report.stats.written == 3);
        CHECK(report.stats.dropped.total() == 0);
    }
    SECTION("closed before start() with records queued: not drained, each counted as shutdown")
    {
        TestWriter w(h.executor(), o);
        REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
        REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
        const auto report = close(w);
        INFO("stats: " << report.stats);
        CHECK_FALSE(report.drained);
        CHECK(report.stats.dropped.shutdown == 2);
        CHECK(report.stats.written == 0);
        CHECK(report.stats.pending == 0);
        CHECK(invariant_holds(report.stats));
    }
    SECTION("closed before start() with nothing queued: drained")
    {
        TestWriter w(h.executor(), o);
        const auto report = close(w);
        CHECK(report.drained);
        CHECK(report.stats.submitted == 0);
    }
    SECTION("every record a counted drop (malformed, write_error) is still drained: nothing was left")
    {
        auto seam = std::make_shared<SeamFileIo>();
        o.file_io = seam;
        TestWriter w(h.executor(), o);
        w.start();
        seam->fail_writev(EIO, 1);
        submit_group(h.loop, w, {1, 2});
        flush(w);
        Rec bad = rec(3);
        bad.throw_malformed = true;
        REQUIRE(w.submit(bad) == SubmitResult::accepted);
        const auto report = close(w);
        INFO("stats: " << report.stats);
        CHECK(report.drained);
        CHECK(report.stats.dropped.write_error == 2);
        CHECK(report.stats.dropped.malformed == 1);
        CHECK(report.stats.pending == 0);
    }
}

TEST_CASE("each fault is counted exactly by reason: write error, short write, EINTR, then a clean append",
          "[integration][core][faults]")
{
    Harness h(with_seam);
    TestWriter w(h.executor(), h.options());
    h.start(w);
    const auto line_bytes = [](std::vector<int> ids) {
        std::uint64_t n = 0;
        for (int id : ids) n += line_of(id).size() + 1;
        return n;
    };

    // EIO before a byte landed: both records are write errors.
    h.seam->fail_writev(EIO, 1);
    submit_group(h.loop, w, {10, 11});
    flush(w);
    auto s = w.stats();
    INFO("after EIO: " << s);
    CHECK(s.written == 0);
    CHECK(s.dropped.write_error == 2);
    CHECK(s.unknown == 0);
    CHECK(s.batches == 0);
    CHECK(s.bytes == 0);
    CHECK(s.pending == 0);
    CHECK(invariant_holds(s));

    // Half of three equal lines lands, then ENOSPC: the sink cuts the file back to its length
    // before the append, so none of the three is there (write_error, none unknown).
    h.seam->short_write_once(ENOSPC);
    submit_group(h.loop, w, {20, 21, 22});
    flush(w);
    s = w.stats();
    INFO("after a short write then ENOSPC: " << s);
    CHECK(s.written == 0);
    CHECK(s.unknown == 0);
    CHECK(s.dropped.write_error == 5);
    CHECK(s.batches == 0);
    CHECK(s.pending == 0);
    CHECK(invariant_holds(s));

    // EINTR is retried: nothing lost.
    h.seam->eintr_once();
    submit_group(h.loop, w, {30, 31});
    flush(w);
    s = w.stats();
    INFO("after EINTR: " << s);
    CHECK(s.written == 2);
    CHECK(s.batches == 1);
    CHECK(s.bytes == line_bytes({30, 31}));
    CHECK(s.unknown == 0);
    CHECK(s.dropped.write_error == 5);
    CHECK(invariant_holds(s));

    submit_group(h.loop, w, {40});
    flush(w);
    s = w.stats();
    INFO("after a clean append: " << s);
    CHECK(s.submitted == 8);
    CHECK(s.written == 3);
    CHECK(s.batches == 2);
    CHECK(s.bytes == line_bytes({30, 31, 40}));
    CHECK(s.dropped.total() == 5);
    CHECK(s.dropped.write_error == 5);
    CHECK(s.unknown == 0);
    CHECK(invariant_holds(s));
    // Two failed appends, one warning (the first; the next is the 1000th).
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Failed to write test JSONL") == 1);
    const auto lines = read_lines(w.file_path());
    // No torn line from the cut append: the file ends with the three written lines.
    REQUIRE(lines.size() >= 3);
    CHECK(std::vector<std::string>(lines.end() - 3, lines.end()) ==
          std::vector<std::string>{line_of(30), line_of(31), line_of(40)});
    for (const std::string& l : lines) CHECK(l.find("\"id\":2") == std::string::npos);
}

TEST_CASE("an fsync that fails after each batch makes the batch's records unknown, not write errors",
          "[integration][core][faults][durability]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.durability = Durability::fsync_batch;
    TestWriter w(h.executor(), o);
    h.start(w);

    h.seam->fail_fsync(EIO, 1);
    submit_group(h.loop, w, {1, 2, 3});
    flush(w);
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.unknown == 3);
    CHECK(s.dropped.write_error == 0);
    CHECK(s.written == 0);
    CHECK(invariant_holds(s));

    submit_group(h.loop, w, {4});
    flush(w);
    s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 1);
    CHECK(s.batches == 1);
    CHECK(s.unknown == 3);
    CHECK(h.logs.count(LogLevel::warning, "Failed to write test JSONL") == 1);
}

TEST_CASE("a failed interval fsync at close is logged once and costs no record", "[integration][core][faults][durability]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.durability = Durability::fsync_interval;
    o.fsync_interval = std::chrono::hours(1);
    TestWriter w(h.executor(), o);
    h.start(w);

    submit_group(h.loop, w, {1, 2});
    flush(w);
    CHECK(h.seam->fsync_count() == 0);  // not due for an hour
    h.seam->fail_fsync(EIO, 1);
    const auto report = close(w);
    INFO("stats: " << report.stats);
    CHECK(report.drained);
    CHECK(report.stats.written == 2);
    CHECK(report.stats.unknown == 0);
    CHECK(report.stats.dropped.total() == 0);
    CHECK(h.seam->fsync_count() >= 1);
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::warning, "Failed to fsync test JSONL") == 1);
}

TEST_CASE("batch_records = 3 cuts 8 queued records into writes of exactly 3, 3 and 2", "[integration][core][batching]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 3;
    TestWriter w(h.executor(), o);
    h.start(w);

    submit_group(h.loop, w, range(0, 8));
    flush(w);
    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{3, 3, 2});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.batches == 3);
    CHECK(s.written == 8);
    std::vector<std::int64_t> want(8);
    for (int i = 0; i < 8; ++i) want[i] = i;
    CHECK(ids_of(read_lines(w.file_path())) == want);
}

TEST_CASE("batch_bytes closes a batch once its size hints reach the limit", "[integration][core][batching]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 64;
    std::vector<std::size_t> want;
    SECTION("hints of 100 bytes, limit 200: two records per batch")
    {
        o.batch_bytes = 200;
        want = {2, 2, 2, 1};
    }
    SECTION("hints of 100 bytes, limit 201: the third record crosses it and ends the batch")
    {
        o.batch_bytes = 201;
        want = {3, 3, 1};
    }
    TestWriter w(h.executor(), o, std::make_shared<SizedEncoder>());
    h.start(w);
    submit_group(h.loop, w, range(0, 7));
    flush(w);
    CHECK(h.seam->successful_write_lines() == want);
    CHECK(w.stats().batches == want.size());
    CHECK(w.stats().written == 7);
}

TEST_CASE("with the drain stuck, each overflow policy keeps exactly its survivors", "[integration][core][overflow]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.queue_capacity = 4;
    o.batch_records = 1;
    o.block_timeout = std::chrono::milliseconds(1);
    std::vector<std::int64_t> want;
    std::vector<SubmitResult> want_results;
    std::uint64_t want_queue_full = 0, want_evicted = 0;
    SECTION("drop_newest: records 1-4 queued, 5-10 refused")
    {
        o.overflow = Overflow::drop_newest;
        want = {0, 1, 2, 3, 4};
        want_queue_full = 6;
    }
    SECTION("drop_oldest: 1-6 evicted, the newest four kept")
    {
        o.overflow = Overflow::drop_oldest;
        want = {0, 7, 8, 9, 10};
        want_evicted = 6;
    }
    SECTION("block: records 1-4 queued, 5-10 refused at block_timeout")
    {
        o.overflow = Overflow::block;
        want = {0, 1, 2, 3, 4};
        want_queue_full = 6;
    }
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.start(w);

    REQUIRE(h.stick_append(w, rec(0)));
    int accepted = 0;
    for (int i = 1; i <= 10; ++i) {
        const SubmitResult r = w.submit(rec(i));
        if (r == SubmitResult::accepted) ++accepted;
        else CHECK(r == SubmitResult::dropped_queue_full);
    }
    CHECK(accepted == (o.overflow == Overflow::drop_oldest ? 10 : 4));
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.pending == 5);  // record 0 mid-append, four queued
    CHECK(invariant_holds(s));
    h.seam->release();
    flush(w);
    s = w.stats();
    INFO("stats: " << s);
    CHECK(s.submitted == 11);
    CHECK(s.written == want.size());
    CHECK(s.dropped.queue_full == want_queue_full);
    CHECK(s.dropped.oldest_evicted == want_evicted);
    CHECK(s.dropped.total() == want_queue_full + want_evicted);
    CHECK(invariant_holds(s));
    CHECK(ids_of(read_lines(w.file_path())) == want);
}

TEST_CASE("a blocked async_submit is let in once a quarter of the queue is free, not one slot later",
          "[integration][core][overflow]")
{
    Harness h;
    auto io = std::make_shared<GatedIo>();
    auto o = h.options();
    o.queue_capacity = 8;  // wakes blocked producers at 2 free slots
    o.batch_records = 1;
    o.overflow = Overflow::block;
    o.block_timeout = std::chrono::minutes(5);  // never reached: only a pop lets it in
    o.file_io = io;
    TestWriter w(h.executor(), o);
    OpenOnExit open{io};
    h.start(w);

    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(io->wait_entered(1));  // record 0 waits at the gate; the queue is empty
    for (int i = 1; i <= 8; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    // The queue is full: the push fails at once and the waiter is registered before return.
    auto waiting = w.async_submit(rec(9), boost::asio::use_future);
    CHECK(w.stats().submitted == 9);

    io->allow(1);  // record 0 written; record 1 popped: 1 slot free
    REQUIRE(io->wait_entered(2));
    CHECK(w.stats().submitted == 9);  // still waiting
    CHECK(waiting.wait_for(std::chrono::seconds(0)) != std::future_status::ready);

    io->allow(1);  // record 1 written; record 2 popped: 2 slots free, the waiter is retried
    REQUIRE(io->wait_entered(3));  // the retry ran before record 2's writev
    REQUIRE(w.stats().submitted == 10);  // fails at once, not after a deadline
    CHECK(get_within(std::move(waiting)) == SubmitResult::accepted);

    io->open();
    flush(w);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 10);
    CHECK(s.dropped.total() == 0);
    std::vector<std::int64_t> want(10);
    for (int i = 0; i < 10; ++i) want[i] = i;
    CHECK(ids_of(read_lines(w.file_path())) == want);
}

TEST_CASE("a write_batch that appends too little or too much still counts each record exactly once",
          "[integration][core][accounting]")
{
    Harness h;
    std::vector<Rec> recs{rec(1), rec(2), rec(3)};
    std::uint64_t want_written = 0, want_unexpected = 0;
    std::string want_log;
    SECTION("a record left without an append: unexpected")
    {
        recs[1].key = "skip";
        want_written = 2;
        want_unexpected = 1;
        want_log = "write_batch() left 1 of 3 test records without an append";
    }
    SECTION("the batch appended twice: each record counted once, as written")
    {
        recs[1].key = "twice";
        want_written = 3;
        want_log = "write_batch() accounted 6 test records for a batch of 3";
    }
    const auto o = h.options();
    TestWriter w(h.executor(), o, std::make_shared<MiscountingEncoder>(o.directory / "bug.jsonl"));
    h.start(w);

    std::promise<void> done;
    boost::asio::post(h.executor(), [&] {  // one batch
        for (const Rec& r : recs) CHECK(w.submit(r) == SubmitResult::accepted);
        done.set_value();
    });
    get_within(done.get_future());
    flush(w);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.submitted == 3);
    CHECK(s.written == want_written);
    CHECK(s.dropped.unexpected == want_unexpected);
    CHECK(s.dropped.total() == want_unexpected);
    CHECK(s.pending == 0);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump());
    CHECK(h.logs.count(LogLevel::error, want_log) == 1);
}
