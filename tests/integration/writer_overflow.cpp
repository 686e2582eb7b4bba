// Overflow policies with a full queue (and TensorRT-LLM's Python writer's queue-full test,
// ported). The queue is filled deterministically: a seam holds the append of record 0, so the
// drain is stuck while the test fills the queue; what was popped before the hold is computed
// from the results and stats, never assumed. A submit that waits under the block policy runs
// on a thread of its own with a deadline, so a wait that ignored block_timeout fails the test
// instead of hanging it.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <boost/asio/post.hpp>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::Overflow;
using jsonlw::SubmitResult;
using Clock = std::chrono::steady_clock;

namespace {

// The n of every "Dropped <n> test records" warning, in order.
std::vector<long> drop_warnings(const LogCapture& logs)
{
    std::vector<long> out;
    const std::string head = "Dropped ", tail = " test records";
    for (const auto& e : logs.entries()) {
        if (e.text.rfind(head, 0) != 0) continue;
        const std::size_t end = e.text.find_first_not_of("0123456789", head.size());
        if (end == head.size() || end == std::string::npos) continue;  // "Dropped malformed ..."
        if (e.text.compare(end, tail.size(), tail) != 0) continue;
        CHECK(e.level == LogLevel::warning);
        out.push_back(std::stol(e.text.substr(head.size(), end - head.size())));
    }
    return out;
}

// Submits record 0 and waits until its append is held inside the seam.
template <class W>
void stall_drain(W& w, SeamFileIo& seam)
{
    seam.hold_writev();
    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(seam.wait_writev_held());
}

// Submits records 1, 2, ... until one is refused (drop_newest); returns the refused id.
template <class W>
int fill_until_refused(W& w, int limit = 1000)
{
    int id = 1;
    for (;; ++id) {
        REQUIRE(id < limit);
        const auto r = w.submit(rec(id));
        if (r != SubmitResult::accepted) {
            REQUIRE(r == SubmitResult::dropped_queue_full);
            return id;
        }
    }
}

// The block policy on a queue of 2, batches of 1, waiting at most `timeout` for room.
void block_when_full(jsonlw::WriterOptions& o, std::chrono::milliseconds timeout)
{
    o.queue_capacity = 2;
    o.batch_records = 1;
    o.overflow = Overflow::block;
    o.block_timeout = timeout;
}

// How long past block_timeout a blocked submit may take to give up: generous, for a loaded
// machine.
constexpr auto block_slack = std::chrono::seconds(5);

// w.submit(rec(id)) on another thread, waited for at most `limit`. One still blocked then
// (its wait ignored the deadline) fails the test: the seam lets the drain go first, so the
// drain makes room, the submit returns and its thread ends.
template <class W>
SubmitResult submit_within(W& w, SeamFileIo& seam, int id, Clock::duration limit)
{
    auto f = std::async(std::launch::async, [&w, id] { return w.submit(rec(id)); });
    if (f.wait_for(limit) != std::future_status::ready) {
        seam.release();
        const SubmitResult late = f.get();
        FAIL("submit(" << id << ") under block still waited after "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(limit).count()
                       << " ms; it returned " << jsonlw::to_string(late)
                       << " once the drain made room");
    }
    return f.get();
}

// A started TestWriter, its options set by `tune`, whose drain is stuck: record 0's append is
// held in the seam (stall_drain), so the queue fills as the test submits. The seam is let go
// first on the way out, also when a REQUIRE fails.
struct StalledWriter {
    template <class Tune>
    explicit StalledWriter(Tune tune) : w(h.executor(), tuned(h, tune)), release(h.seam)
    {
        h.start(w);
        stall_drain(w, *h.seam);
    }

    // Lets the held append go, flushes, and returns the stats then.
    jsonlw::WriterStats release_and_flush()
    {
        h.seam->release();
        flush(w);
        return w.stats();
    }

    Harness h{with_seam};
    TestWriter w;
    ReleaseOnExit release;

private:
    template <class Tune>
    static jsonlw::WriterOptions tuned(const Harness& h, Tune tune)
    {
        jsonlw::WriterOptions o = h.options();
        tune(o);
        return o;
    }
};

// After one submit under block gave up: that drop is counted while the drain is stuck; let go,
// the records before it, 0 .. refused - 1, are written and it is still the only drop.
void check_one_block_drop(StalledWriter& t, int refused)
{
    auto s = t.w.stats();
    INFO("stats: " << s);
    CHECK(s.dropped.queue_full == 1);
    CHECK(invariant_holds(s));

    s = t.release_and_flush();
    INFO("stats: " << s);
    CHECK(s.written == static_cast<std::uint64_t>(refused));
    CHECK(s.dropped.queue_full == 1);
    CHECK(invariant_holds(s));
}

// The ids 0 .. n - 1, as ids_of() reads them back.
std::vector<std::int64_t> ids_below(int n)
{
    std::vector<std::int64_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(i);
    return ids;
}

}  // namespace

TEST_CASE("a full queue drops the newest records, counts them and logs the first drop only", "[integration][overflow]")
{
    StalledWriter t([](auto& o) { o.queue_capacity = 8; });
    TestWriter& w = t.w;
    const int first_refused = fill_until_refused(w);
    CHECK(first_refused - 1 >= 8);  // the queue held at least its capacity
    for (int i = 1; i <= 4; ++i) CHECK(w.submit(rec(first_refused + i)) == SubmitResult::dropped_queue_full);

    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.dropped.queue_full == 5);
    CHECK(s.submitted == static_cast<std::uint64_t>(first_refused) + 5);
    CHECK(invariant_holds(s));

    s = t.release_and_flush();
    INFO("stats: " << s);
    CHECK(s.written == static_cast<std::uint64_t>(first_refused));
    CHECK(s.pending == 0);
    CHECK(invariant_holds(s));
    // The queued records are kept, in order; none of the refused ones is written.
    CHECK(ids_of(read_lines(w.file_path())) == ids_below(first_refused));
    INFO(t.h.logs.dump());
    CHECK(drop_warnings(t.h.logs) == std::vector<long>{1});
    CHECK(t.h.logs.count(LogLevel::warning, "Dropped 1 test records") == 1);
}

TEST_CASE("a full queue drops the newest, counts every drop and logs the first drop and every 1000th", "[integration][overflow]")
{
    StalledWriter t([](auto& o) { o.queue_capacity = 16; });
    TestWriter& w = t.w;
    const int first_refused = fill_until_refused(w);
    int refused = 0;
    for (int i = 1; i <= 2000; ++i) refused += w.submit(rec(first_refused + i)) == SubmitResult::dropped_queue_full;
    CHECK(refused == 2000);
    CHECK(w.stats().dropped.queue_full == 2001);

    const auto s = t.release_and_flush();
    INFO("stats: " << s);
    CHECK(s.dropped.queue_full == 2001);
    CHECK(s.written == static_cast<std::uint64_t>(first_refused));
    CHECK(s.submitted == static_cast<std::uint64_t>(first_refused) + 2001);
    CHECK(invariant_holds(s));
    INFO(t.h.logs.dump());
    CHECK(drop_warnings(t.h.logs) == std::vector<long>{1, 1000, 2000});
}

TEST_CASE("a full queue is logged at its marks while the I/O thread is still stuck in a write",
          "[integration][overflow][logs]")
{
    StalledWriter t([](auto& o) { o.queue_capacity = 16; });
    TestWriter& w = t.w;
    const Harness& h = t.h;
    const int first_refused = fill_until_refused(w);
    int refused = 1;
    for (int i = 1; i <= 1998; ++i) refused += w.submit(rec(first_refused + i)) == SubmitResult::dropped_queue_full;
    CHECK(refused == 1999);
    // The drops passed the marks 1 and 1000: both warnings come from the strand, the I/O
    // thread still holding its first append.
    CHECK(wait_until([&] { return drop_warnings(h.logs).size() == 2; }));
    CHECK(h.seam->writev_count() == 1);
    INFO(h.logs.dump());
    CHECK(drop_warnings(h.logs) == std::vector<long>{1, 1000});

    const auto s = t.release_and_flush();
    CHECK(s.dropped.queue_full == 1999);
    CHECK(invariant_holds(s));
    CHECK(drop_warnings(h.logs) == std::vector<long>{1, 1000});  // each mark once
}

TEST_CASE("drop_oldest evicts the oldest queued record instead, counts it, and the newest records are written", "[integration][overflow]")
{
    StalledWriter t([](auto& o) {
        o.queue_capacity = 4;
        o.batch_records = 1;
        o.overflow = Overflow::drop_oldest;
    });
    TestWriter& w = t.w;
    for (int i = 1; i <= 10; ++i) CHECK(w.submit(rec(i)) == SubmitResult::accepted);
    auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.dropped.queue_full == 0);
    CHECK(s.dropped.oldest_evicted >= 5);  // 10 into 4 slots (+ at most one popped batch of 1)
    CHECK(invariant_holds(s));

    s = t.release_and_flush();
    INFO("stats: " << s);
    CHECK(s.submitted == 11);
    CHECK(s.written + s.dropped.oldest_evicted == 11);
    CHECK(s.dropped.total() == s.dropped.oldest_evicted);
    CHECK(invariant_holds(s));
    // Record 0 (already being written), then the newest ones, consecutive up to 10.
    const auto ids = ids_of(read_lines(w.file_path()));
    REQUIRE(ids.size() == s.written);
    REQUIRE(ids.size() >= 5);
    CHECK(ids.front() == 0);
    for (std::size_t i = 1; i < ids.size(); ++i) CHECK(ids[i] == static_cast<std::int64_t>(11 - ids.size() + i));
    CHECK(drop_warnings(t.h.logs).empty());
}

TEST_CASE("block waits at most block_timeout for room, then drops and counts the record", "[integration][overflow]")
{
    StalledWriter t([](auto& o) { block_when_full(o, std::chrono::milliseconds(100)); });
    TestWriter& w = t.w;
    int id = 1;
    SubmitResult r = SubmitResult::accepted;
    Clock::duration took{};
    for (; r == SubmitResult::accepted; ++id) {
        REQUIRE(id < 10);
        const auto t0 = Clock::now();
        r = submit_within(w, *t.h.seam, id, w.options().block_timeout + block_slack);
        took = Clock::now() - t0;
    }
    const int refused = id - 1;
    CHECK(r == SubmitResult::dropped_queue_full);
    CHECK(refused - 1 >= 2);  // two queued before the refusal
    CHECK(took >= std::chrono::milliseconds(100));
    CHECK(took < std::chrono::milliseconds(100) + block_slack);

    check_one_block_drop(t, refused);
    CHECK(ids_of(read_lines(w.file_path())) == ids_below(refused));
}

TEST_CASE("block lets a waiting submit in as soon as the drain makes room", "[integration][overflow]")
{
    StalledWriter t([](auto& o) { block_when_full(o, std::chrono::seconds(20)); });
    TestWriter& w = t.w;
    REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2)) == SubmitResult::accepted);
    // The queue is full now: this submit waits on its own thread until the seam lets go.
    auto waiting = std::async(std::launch::async, [&] { return w.submit(rec(3)); });
    t.h.seam->release();
    CHECK(get_within(waiting) == SubmitResult::accepted);
    flush(w);
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));
}

TEST_CASE("block on the loop's own thread: a handler that fills the queue again and again is let in by the I/O thread each time, never left waiting for block_timeout",
          "[integration][overflow]")
{
    // The drain's strand runs on the loop's only thread, which the waiting submit holds: the
    // room must come from the I/O executor alone (RoomSteps). Before it did, the
    // first full queue waited the whole block_timeout and its record was dropped.
    Harness h;
    auto o = h.options();
    o.queue_capacity = 64;
    o.batch_records = 16;
    o.overflow = Overflow::block;
    o.block_timeout = std::chrono::seconds(2);
    TestWriter w(h.executor(), o);
    h.start(w);
    constexpr int n = 20000;
    struct Outcome {
        int accepted = 0;
        int refused = 0;
        bool on_loop = false;
    };
    std::promise<Outcome> done;
    boost::asio::post(h.executor(), [&] {
        Outcome out;
        out.on_loop = std::this_thread::get_id() == h.loop.thread_id();
        // One handler, never returning to the loop: the queue (64) fills hundreds of times.
        for (int i = 0; i < n && out.refused == 0; ++i)
            (w.submit(rec(i)) == SubmitResult::accepted ? out.accepted : out.refused) += 1;
        done.set_value(out);
    });
    auto f = done.get_future();
    REQUIRE(f.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
    const Outcome out = f.get();
    CHECK(out.on_loop);
    CHECK(out.refused == 0);
    CHECK(out.accepted == n);
    const auto report = close(w);
    INFO("stats: " << report.stats);
    CHECK(report.stats.written == static_cast<std::uint64_t>(out.accepted));
    CHECK(report.stats.dropped.total() == static_cast<std::uint64_t>(out.refused));
    CHECK(invariant_holds(report.stats));
    CHECK(ids_of(read_lines(w.file_path())) == ids_below(out.accepted));
}

TEST_CASE("async_submit under block waits without blocking its caller: accepted once there is room, dropped after block_timeout",
          "[integration][overflow][async]")
{
    SECTION("room appears: accepted")
    {
        StalledWriter t([](auto& o) { block_when_full(o, std::chrono::seconds(20)); });
        TestWriter& w = t.w;
        REQUIRE(get_within(w.async_submit(rec(1), boost::asio::use_future)) == SubmitResult::accepted);
        REQUIRE(get_within(w.async_submit(rec(2), boost::asio::use_future)) == SubmitResult::accepted);
        auto f = w.async_submit(rec(3), boost::asio::use_future);
        // The call returned at once; the operation cannot complete while the append is held.
        CHECK(f.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
        t.h.seam->release();
        CHECK(get_within(f) == SubmitResult::accepted);
        flush(w);
        CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3});
        CHECK(invariant_holds(w.stats()));
    }
    SECTION("no room within block_timeout: dropped_queue_full, counted")
    {
        StalledWriter t([](auto& o) { block_when_full(o, std::chrono::milliseconds(100)); });
        TestWriter& w = t.w;
        int id = 1;
        SubmitResult r = SubmitResult::accepted;
        for (; r == SubmitResult::accepted; ++id) {
            REQUIRE(id < 10);
            r = get_within(w.async_submit(rec(id), boost::asio::use_future),
                           w.options().block_timeout + block_slack);
        }
        CHECK(r == SubmitResult::dropped_queue_full);
        check_one_block_drop(t, id - 1);  // records 0 .. id-2 written
    }
}

TEST_CASE("async_submit without the block policy completes at once with what submit would return", "[integration][overflow][async]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    CHECK(get_within(w.async_submit(rec(1), boost::asio::use_future)) == SubmitResult::accepted);
    flush(w);
    CHECK(count_lines(w.file_path()) == 1);
    close(w);
    CHECK(get_within(w.async_submit(rec(2), boost::asio::use_future)) == SubmitResult::closed);
    CHECK(w.stats().dropped.closed == 1);
}
