// How the drain is woken: a producer never has to wake it — the drain polls an empty queue every
// idle_poll — so submit() posts nothing and allocates nothing, but in a burst that fills a
// quarter of the queue while the drain sleeps; with idle_poll 0 the drain parks,
// and the wake-up the first submit after then posts allocates nothing on the producer's thread
// either when the executor is an io_context's; and RawJsonWriter's
// submit(std::string_view) copies a line into its queue cell without allocating. The test links
// the allocation counter
// (tests/support/alloc_count.hpp), which replaces the global operator new.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "alloc_count.hpp"
#include "common.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

using namespace jsonlw_test;
using jsonlw::SubmitResult;
using namespace std::chrono_literals;

namespace {

// The pauses in a producer's stream of submits that lasted at least `at_least`: how many, and
// their summed length. A sleep of 100 us between calls takes longer than asked whenever the
// thread is descheduled, and on a loaded machine (a CI run beside other tests) a few last
// milliseconds.
struct LongPauses {
    std::chrono::steady_clock::duration at_least{};
    int count = 0;
    std::chrono::steady_clock::duration total{};
    std::optional<std::chrono::steady_clock::time_point> last_submit;

    void submitted()
    {
        const auto now = std::chrono::steady_clock::now();
        if (last_submit && now - *last_submit >= at_least) {
            ++count;
            total += now - *last_submit;
        }
        last_submit = now;
    }
};

// What `n` submits of fresh records (built before each call, not counted) allocated on this
// thread inside submit(), pacing them by sleeping `gap` between calls; `pauses`, when given,
// is told of each submit.
template <class W>
std::uint64_t allocations_in_submits(W& w, int first, int n, std::chrono::microseconds gap,
                                     int& refused, LongPauses* pauses = nullptr)
{
    std::uint64_t inside = 0;
    for (int i = first; i < first + n; ++i) {
        Rec r = rec(i);
        const std::uint64_t before = allocations_on_this_thread();
        const SubmitResult res = w.submit(std::move(r));
        inside += allocations_on_this_thread() - before;
        if (pauses) pauses->submitted();
        if (res != SubmitResult::accepted) ++refused;
        if (gap.count() > 0) std::this_thread::sleep_for(gap);
    }
    return inside;
}

// The caller's loop on a thread of its own, run handler by handler so that each one is
// counted. Declared before the writer, which must be destroyed first.
class CountedLoop {
public:
    CountedLoop()
        : runner_([this] {
              while (io_.run_one() != 0) handlers_.fetch_add(1, std::memory_order_relaxed);
          })
    {
    }
    CountedLoop(const CountedLoop&) = delete;
    CountedLoop& operator=(const CountedLoop&) = delete;
    ~CountedLoop()
    {
        guard_.reset();
        io_.stop();
        runner_.join();
    }

    boost::asio::io_context::executor_type executor() noexcept { return io_.get_executor(); }
    std::uint64_t handlers() const noexcept { return handlers_.load(std::memory_order_relaxed); }

private:
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ =
        boost::asio::make_work_guard(io_);
    std::atomic<std::uint64_t> handlers_{0};
    std::thread runner_;  // last: it runs io_ and counts into handlers_
};

}  // namespace

TEST_CASE("a producer on another thread at a steady rate never allocates inside submit()",
          "[integration][writer][wakeup]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());  // default idle_poll: 1 ms
    h.start(w);
    int refused = 0;
    // Warm-up: the drain's first polls, the I/O thread's first batches.
    allocations_in_submits(w, 0, 200, 100us, refused);
    const std::uint64_t inside = allocations_in_submits(w, 200, 3000, 100us, refused);
    CHECK(inside == 0);
    CHECK(refused == 0);
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == 3200);
    CHECK(invariant_holds(report.stats));
    CHECK(count_lines(w.file_path()) == 3200);
}

TEST_CASE("with idle_poll 0, the wake-up a submit() posts to the parked drain allocates nothing on an io_context",
          "[integration][writer][wakeup]")
{
    Harness h;
    auto o = h.options();
    o.idle_poll = std::chrono::microseconds(0);
    TestWriter w(h.executor(), o);
    h.start(w);
    int refused = 0;
    allocations_in_submits(w, 0, 20, 0us, refused);
    REQUIRE(wait_until([&] { return w.stats().written == 20; }));
    std::uint64_t inside = 0;
    for (int round = 0; round < 5; ++round) {
        // The drain parks at an empty queue: the submit must wake it.
        REQUIRE(wait_until([&] { return w.drain_parked(); }));
        inside += allocations_in_submits(w, 20 + round, 1, 0us, refused);
        // Each record reaches the file without a flush: the wake-up worked.
        CHECK(wait_until([&] { return w.stats().written == 21u + round; }));
    }
    CHECK(inside == 0);
    CHECK(refused == 0);
    CHECK(count_lines(w.file_path()) == 25);
}

TEST_CASE("on an executor that is not an io_context's, records are still written without a flush",
          "[integration][writer][wakeup]")
{
    Harness h;
    auto o = h.options();
    const bool parks = GENERATE(true, false);
    o.idle_poll = parks ? std::chrono::microseconds(0) : std::chrono::microseconds(1000);
    TestWriter w(boost::asio::make_strand(h.loop.io()), o);
    h.start(w);
    for (int i = 0; i < 3; ++i) {
        if (parks) REQUIRE(wait_until([&] { return w.drain_parked(); }));
        REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        CHECK(wait_until([&] { return count_lines(w.file_path()) == static_cast<std::size_t>(i) + 1; }));
    }
    CHECK(w.drain_wakeups() == (parks ? 3u : 0u));
    const auto report = close(w);
    CHECK(report.stats.written == 3);
    CHECK(invariant_holds(report.stats));
}

TEST_CASE("records at a steady rate are written by the I/O thread's own paced steps: the caller's loop thread runs almost no handler for them",
          "[integration][writer][wakeup]")
{
    CountedLoop loop;
    Harness h;  // its directory and options; its own loop is never started
    auto o = h.options();
    o.queue_capacity = std::size_t{1} << 16;  // no burst wake-up however the test is delayed
    // A look every idle_poll (1 ms) however few records a look finds: many paced steps to
    // count handlers against (by default a steady stream is looked at once per half batch).
    o.idle_poll_max = o.idle_poll;
    TestWriter w(loop.executor(), o);  // idle_poll 1 ms, flush_interval 0: paced steps
    w.start();
    int refused = 0;
    // Warm-up (the drain's first steps start the pace), then 2,000 records one every
    // 100 us: a step about every idle_poll, with records waiting at every look.
    allocations_in_submits(w, 0, 200, 100us, refused);
    // A look finds no record, and so ends the pace, only after a pause between two
    // records' pushes at least as long as its wait (idle_poll here). Pauses between the
    // submits' returns of half that are counted (a thread descheduled inside submit(),
    // after its push, shortens the next one).
    LongPauses pauses{o.idle_poll / 2};
    const std::uint64_t h0 = loop.handlers(), b0 = w.stats().batches;
    allocations_in_submits(w, 200, 2000, 100us, refused, &pauses);
    const std::uint64_t h1 = loop.handlers(), b1 = w.stats().batches;
    const auto pause_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(pauses.total).count();
    CAPTURE(h1 - h0, b1 - b0, pauses.count, pause_ms);
    // Stepped about every idle_poll, not once per record and not in one batch.
    CHECK(b1 - b0 >= 40);
    CHECK(b1 - b0 < 1000);
    // A step paced by the loop thread cost it two handlers (the timer, the hop back): 2 per
    // batch. Now the loop thread runs handlers only when a pace ends and the next begins:
    // the hop back (1), the drain's polls of the empty queue (1 per idle_poll the pause
    // lasted, and 1 more), the step that starts the next pace and its hop back (2) — at
    // most 4 plus a poll per millisecond of the pause; and with no pause, none at all.
    const auto allowed = static_cast<std::uint64_t>((b1 - b0) / 8 + 4 * pauses.count + pause_ms);
    CAPTURE(allowed);
    CHECK(h1 - h0 <= allowed);
    CHECK(refused == 0);
    const auto report = close(w);
    CHECK(report.stats.written == 2200);
    CHECK(invariant_holds(report.stats));
    CHECK(count_lines(w.file_path()) == 2200);
}

TEST_CASE("records that never come while a step runs — each submitted after the last was written — are still looked for by the I/O thread's pace, not by the loop thread's polls",
          "[integration][writer][wakeup]")
{
    // A step that empties the queue is followed by the pace's look all the same: at a rate of
    // a record per step's time or slower, or on a core the producer shares with the loop,
    // records come after a step rather than during it, and a pace begun only for records
    // waiting would leave every look to the loop thread (an idle poll, then a step's hop
    // back: two handlers per record).
    CountedLoop loop;
    Harness h;
    auto o = h.options();
    // A look every 50 ms: a record submitted as soon as the last is seen written waits at the
    // pace's next look unless this thread stalls for 50 ms (and then costs the loop about 4
    // handlers: the pace's end, an idle poll, the step that begins the next pace, its hop).
    o.idle_poll = std::chrono::milliseconds(50);
    o.idle_poll_max = o.idle_poll;
    TestWriter w(loop.executor(), o);
    w.start();
    REQUIRE(w.submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(wait_until([&] { return w.stats().written == 1; }));
    constexpr int n = 20;
    const std::uint64_t h0 = loop.handlers(), b0 = w.stats().batches;
    for (int i = 1; i <= n; ++i) {
        REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        REQUIRE(wait_until([&] { return w.stats().written == static_cast<std::uint64_t>(i) + 1; }));
    }
    const std::uint64_t h1 = loop.handlers(), b1 = w.stats().batches;
    CAPTURE(h1 - h0);
    CHECK(b1 - b0 == n);  // one record per batch: none came during a step
    // Looked for by the loop, each record would cost it an idle poll and a step's hop back:
    // 2 per record, 40. A stall or two of this thread are allowed.
    CHECK(h1 - h0 <= n / 2);
    const auto report = close(w);
    CHECK(report.stats.written == n + 1);
    CHECK(count_lines(w.file_path()) == n + 1);
}

TEST_CASE("RawJsonWriter: submit(std::string_view) copies a line of up to 456 B into its queue cell with no allocation; a longer one into a string; every line written as given",
          "[integration][writer][raw_json][submit_view]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 4096;
    jsonlw::RawJsonWriter w(h.executor(), o);
    h.start(w);
    std::vector<std::string> expected;
    std::string buf;  // the caller's buffer, reused for every line
    std::uint64_t inside = 0;
    for (int i = 0; i < 3000; ++i) {
        // Lines of 20 .. 456 bytes (the inline capacity), then a few just over it.
        const std::size_t size = i < 2990 ? 20 + static_cast<std::size_t>(i) % 437 : 457 + i % 3;
        buf = "{\"id\":" + std::to_string(i) + ",\"p\":\"";
        buf.append(size - buf.size() - 2, 'x');
        buf += "\"}";
        REQUIRE(buf.size() == size);
        const std::uint64_t before = allocations_on_this_thread();
        const SubmitResult res = w.submit(std::string_view(buf));
        if (i < 2990) inside += allocations_on_this_thread() - before;
        else CHECK(allocations_on_this_thread() - before == 1);  // a long line's std::string
        CHECK(res == SubmitResult::accepted);
        expected.push_back(buf);
    }
    CHECK(inside == 0);
    CHECK(jsonlw::RawJsonText::inline_capacity == 456);
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == 3000);
    CHECK(read_lines(w.file_path()) == expected);
}

TEST_CASE("wake-ups taken by producers: none while the drain polls — at a steady rate, after idle spells, in a burst under a quarter of the queue; a larger burst takes a few; with idle_poll 0 exactly one per park",
          "[integration][writer][wakeup]")
{
    Harness h;
    // idle_poll 1 ms: the drain polls, never parks. A queue of 2^16: a burst's wake-up needs
    // 16,384 waiting, which no stall of the drain on a loaded machine reaches here.
    auto wo = h.options();
    wo.queue_capacity = std::size_t{1} << 16;
    TestWriter w(h.executor(), wo);
    h.start(w);
    int refused = 0;
    // 1,000 records, one every 100 us; then idle spells of 120 ms (longer than any park
    // threshold the drain ever had), each ended by one record; then a burst of 200 records
    // with no pause.
    allocations_in_submits(w, 0, 1000, 100us, refused);
    REQUIRE(wait_until([&] { return w.stats().written == 1000; }));
    for (int round = 0; round < 3; ++round) {
        std::this_thread::sleep_for(120ms);  // the idle spell itself, not a wait for an event
        CHECK_FALSE(w.drain_parked());
        allocations_in_submits(w, 1000 + round, 1, 0us, refused);
        // Written without a flush, within idle_poll and a batch's time.
        const auto t0 = std::chrono::steady_clock::now();
        REQUIRE(wait_until([&] { return w.stats().written == 1001u + round; }));
        CHECK(std::chrono::steady_clock::now() - t0 < 2s);
    }
    allocations_in_submits(w, 1003, 200, 0us, refused);
    REQUIRE(wait_until([&] { return w.stats().written == 1203; }));
    CHECK(w.drain_wakeups() == 0);
    CHECK(refused == 0);
    const auto report = close(w);
    CHECK(report.stats.written == 1203);
    CHECK(count_lines(w.file_path()) == 1203);

    // A burst that fills a quarter of the queue while the drain sleeps. idle_poll 1 h: the
    // drain never looks on its own while the test runs, so once the first 900 are flushed
    // (a flush is not a producer's wake-up), the burst reaches the file without a flush only
    // if a producer wakes the drain. One push in 512 (an eighth of 4,096) reads how far the drain is behind,
    // and once 1,024 wait it posts a wake-up — once until that one is delivered, so at most
    // one per 512 pushes; nothing is dropped.
    {
        auto o = h.options();
        o.queue_capacity = 4096;
        o.idle_poll = std::chrono::hours(1);
        o.idle_poll_max = std::chrono::hours(1);
        TestWriter b(h.executor(), o);
        h.start(b);
        allocations_in_submits(b, 0, 900, 0us, refused);  // under a quarter: no wake-up
        flush(b);
        CHECK(b.stats().written == 900);
        CHECK(b.drain_wakeups() == 0);
        allocations_in_submits(b, 900, 3000, 0us, refused);
        CHECK(b.drain_wakeups() >= 1);
        CHECK(b.drain_wakeups() <= 3000 / 512);
        // The woken drain writes at least the quarter it was woken for, without a flush; what
        // came after its last look and stayed under a quarter waits for the next one.
        CHECK(wait_until([&] { return b.stats().written >= 900 + 1024; }));
        flush(b);
        CHECK(b.stats().written == 3900);
        CHECK(refused == 0);
        const auto burst = close(b);
        CHECK(burst.stats.written == 3900);
        CHECK(burst.stats.dropped.total() == 0);
    }

    // idle_poll 0: the drain parks at once, and the first submit after takes the wake-up.
    auto o = h.options();
    o.idle_poll = std::chrono::microseconds(0);
    TestWriter p(h.executor(), o);
    h.start(p);
    for (int round = 0; round < 3; ++round) {
        REQUIRE(wait_until([&] { return p.drain_parked(); }));
        const std::uint64_t before = p.drain_wakeups();
        allocations_in_submits(p, round, 1, 0us, refused);
        REQUIRE(wait_until([&] { return p.stats().written == 1u + round; }));
        CHECK(p.drain_wakeups() - before == 1);
    }
    CHECK(p.drain_wakeups() == 3);
    CHECK(close(p).stats.written == 3);
}

TEST_CASE("a burst of submits into a large fresh writer takes no page fault and no allocation on the producer's thread, its queue in huge pages or in 4 KiB ones",
          "[integration][writer][raw_json][faults]")
{
    // huge_pages: the queue made resident by MADV_POPULATE_WRITE after MADV_HUGEPAGE;
    // without: by MAP_POPULATE (bounded_ring.hpp, allocate()).
    const bool huge = GENERATE(true, false);
    CAPTURE(huge);
    Harness h;
    auto o = h.options();
    o.queue_capacity = std::size_t{1} << 17;  // 64 MiB of queue cells
    o.huge_pages = huge;
    o.batch_records = 4096;
    jsonlw::RawJsonWriter w(h.executor(), o);
    w.start();  // the loop is not running: the burst only pushes
    std::string line = "{\"burst\":\"" + std::string(236, 'x') + "\"}";
    REQUIRE(line.size() == 248);
    constexpr int n = 50000;  // 25 MiB of cells, 6,250 pages never pushed to before
    const auto faults = [] {
        rusage u{};
        getrusage(RUSAGE_THREAD, &u);
        return u.ru_minflt + u.ru_majflt;
    };
    int accepted = 0;
    const std::uint64_t a0 = allocations_on_this_thread();
    const long f0 = faults();
    for (int i = 0; i < n; ++i) accepted += w.submit(std::string_view(line)) == SubmitResult::accepted;
    const long f1 = faults();
    const std::uint64_t allocations = allocations_on_this_thread() - a0;
    CHECK(accepted == n);
    CHECK(f1 - f0 == 0);
    CHECK(allocations == 0);
    h.loop.start();
    const auto report = close(w);
    CHECK(report.stats.written == static_cast<std::uint64_t>(n));
    CHECK(count_lines(w.file_path()) == static_cast<std::size_t>(n));
}
