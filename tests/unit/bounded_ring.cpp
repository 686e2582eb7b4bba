// detail::BoundedRing: the bounded MPMC queue behind submit().
//
// A ring that indexes its cells wrongly (a bad index mask) corrupts itself: a push lands on a
// cell that still holds a record, and try_pop() then spins for ever on a cell whose sequence
// number is ahead of it, as does the destructor, which pops what is left. So each test body
// runs on a thread of its own with a deadline (within()), fills its ring to exactly its
// capacity before it pops (REQUIRE: a ring that takes one record more, or one fewer, stops
// the body there), and keeps its ring in a Kept, which leaks it rather than destroy it when
// the body stops on a failed REQUIRE. A broken ring fails by assertion in seconds.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/detail/bounded_ring.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iterator>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using jsonlw::detail::BoundedRing;

namespace {

// Counts live instances, to see that the ring destroys what it holds exactly once.
struct Tracked {
    static inline std::atomic<int> live{0};
    std::unique_ptr<int> v;
    explicit Tracked(int x) : v(std::make_unique<int>(x)) { ++live; }
    Tracked(Tracked&& o) noexcept : v(std::move(o.v)) { ++live; }
    Tracked& operator=(Tracked&&) = delete;
    ~Tracked() { --live; }
};

// try_push's result, the same type for rings of any record type.
enum class Push { ok, full, closed };

template <class T>
Push push(BoundedRing<T>& ring, T v)
{
    std::uint64_t pos = 0;
    switch (ring.try_push(v, pos)) {
    case BoundedRing<T>::Push::ok: return Push::ok;
    case BoundedRing<T>::Push::full: return Push::full;
    case BoundedRing<T>::Push::closed: return Push::closed;
    }
    return Push::closed;
}

// Pushes 0, 1, 2, ... until one is refused, at most `limit` of them (an iteration bound:
// a corrupt ring may accept for ever); returns how many were accepted.
template <class T>
std::size_t fill(BoundedRing<T>& ring, std::size_t limit)
{
    std::size_t n = 0;
    while (n < limit && push(ring, static_cast<T>(n)) == Push::ok) ++n;
    return n;
}

// A ring on the heap, destroyed with its Kept unless a failed REQUIRE is unwinding the body
// (then leaked: its destructor could spin for ever on a corrupt cell).
template <class T>
class Kept {
public:
    explicit Kept(std::size_t capacity, bool huge_pages = false)
        : ring_(new BoundedRing<T>(capacity, huge_pages))
    {
    }
    Kept(const Kept&) = delete;
    Kept& operator=(const Kept&) = delete;
    ~Kept()
    {
        if (std::uncaught_exceptions() == 0) delete ring_;
    }
    BoundedRing<T>& operator*() const noexcept { return *ring_; }
    BoundedRing<T>* operator->() const noexcept { return ring_; }

private:
    BoundedRing<T>* ring_;
};

// Generous deadlines: the single-threaded bodies take milliseconds, the concurrent ones a
// few seconds on a loaded machine.
constexpr std::chrono::seconds quick{10};
constexpr std::chrono::seconds concurrent{60};

// Runs `body` on a thread of its own and waits for it at most `limit`; a failed REQUIRE in
// it fails the test here. A body still running then (spinning in the ring) fails the test
// and is left behind: it owns everything it uses (capture by value only).
template <class Body>
void within(std::chrono::seconds limit, Body body)
{
    auto task = std::make_shared<std::packaged_task<void()>>(std::move(body));
    std::future<void> done = task->get_future();
    std::thread([task] { (*task)(); }).detach();
    if (done.wait_for(limit) != std::future_status::ready)
        FAIL("the test body still runs after " << limit.count()
                                               << " s: a ring spinning on a corrupt cell?");
    done.get();
}

}  // namespace

TEST_CASE("the ring hands records out first in, first out and reports their positions", "[unit][ring]")
{
    within(quick, [] {
        Kept<std::string> kept(8);
        BoundedRing<std::string>& ring = *kept;
        CHECK(ring.capacity() == 8);
        CHECK(ring.size() == 0);
        CHECK_FALSE(ring.try_pop().has_value());

        for (int i = 0; i < 5; ++i) {
            std::string s = "r" + std::to_string(i);
            std::uint64_t pos = 99;
            REQUIRE(ring.try_push(s, pos) == BoundedRing<std::string>::Push::ok);
            CHECK(pos == static_cast<std::uint64_t>(i));
            CHECK(s.empty());  // moved from
        }
        CHECK(ring.size() == 5);
        CHECK(ring.claimed() == 5);
        CHECK(ring.consumed() == 0);
        for (int i = 0; i < 5; ++i) {
            auto r = ring.try_pop();
            REQUIRE(r.has_value());
            CHECK(*r == "r" + std::to_string(i));
        }
        CHECK_FALSE(ring.try_pop().has_value());
        CHECK(ring.consumed() == 5);
        CHECK(ring.size() == 0);
    });
}

TEST_CASE("a full ring refuses a push and keeps the record with the caller", "[unit][ring]")
{
    within(quick, [] {
        Kept<std::string> kept(4);
        BoundedRing<std::string>& ring = *kept;
        for (int i = 0; i < 4; ++i) REQUIRE(push(ring, std::to_string(i)) == Push::ok);
        std::string extra = "extra";
        std::uint64_t pos = 0;
        REQUIRE(ring.try_push(extra, pos) == BoundedRing<std::string>::Push::full);
        CHECK(extra == "extra");  // not moved from: the caller may still use it
        CHECK(ring.size() == 4);

        REQUIRE(ring.try_pop() == std::optional<std::string>("0"));
        CHECK(ring.try_push(extra, pos) == BoundedRing<std::string>::Push::ok);
        CHECK(pos == 4);
        for (const char* want : {"1", "2", "3", "extra"}) CHECK(ring.try_pop() == std::optional<std::string>(want));
    });
}

TEST_CASE("a capacity that is not a power of two wraps around correctly over many laps", "[unit][ring]")
{
    for (std::size_t cap : {2u, 3u, 5u, 6u, 7u, 100u}) {
        INFO("capacity " << cap);
        within(quick, [cap] {
            Kept<int> kept(cap);
            BoundedRing<int>& ring = *kept;
            CHECK(ring.capacity() == cap);
            int next_in = 0, next_out = 0;
            bool fifo = true;
            for (int lap = 0; lap < 50; ++lap) {
                INFO("lap " << lap);
                // Exactly `cap` records go in, then the ring is full: popping from a ring that
                // took more would spin on the cell it overwrote.
                std::size_t in = 0;
                while (in <= cap && push(ring, next_in) == Push::ok) ++next_in, ++in;
                REQUIRE(in == cap);
                // Pop part of it, so the next lap starts at a different offset.
                const std::size_t take = lap % 2 ? cap : (cap + 1) / 2;
                for (std::size_t i = 0; i < take; ++i) {
                    auto v = ring.try_pop();
                    fifo &= v.has_value() && *v == next_out++;
                }
                for (std::size_t i = take; i < cap; ++i) {
                    auto v = ring.try_pop();
                    fifo &= v.has_value() && *v == next_out++;
                }
                fifo &= !ring.try_pop().has_value();
            }
            CHECK(fifo);
            CHECK(next_in == next_out);
            CHECK(next_in == 50 * static_cast<int>(cap));
        });
    }
}

TEST_CASE("published(p) holds exactly while the record pushed at p is in its cell, over laps and for any capacity", "[unit][ring]")
{
    for (std::size_t cap : {1u, 3u, 8u, 100u}) {
        INFO("capacity " << cap);
        within(quick, [cap] {
            Kept<int> kept(cap);
            BoundedRing<int>& ring = *kept;
            const jsonlw::detail::RingPositions& seen = ring;  // the drain's untyped view
            std::uint64_t next = 0;  // the next push's position
            bool exact = true;
            for (int lap = 0; lap < 5; ++lap) {
                // Empty: no position from the head to a full ring's end holds a record.
                for (std::uint64_t p = next; p < next + cap; ++p) exact &= !seen.published(p);
                REQUIRE(fill(ring, cap + 1) == cap);
                for (std::uint64_t p = next; p < next + cap; ++p) exact &= seen.published(p);
                exact &= !seen.published(next + cap);  // the cell a lap on still holds next's
                // Popped one by one: each position stops being published as its record leaves.
                for (std::uint64_t p = next; p < next + cap; ++p) {
                    REQUIRE(ring.try_pop().has_value());
                    exact &= !seen.published(p);
                    if (p + 1 < next + cap) exact &= seen.published(p + 1);
                }
                next += cap;
            }
            CHECK(exact);
        });
    }
}

TEST_CASE("a one-slot ring (capacity 1, or 0 treated as 1) holds exactly one record", "[unit][ring]")
{
    for (std::size_t requested : {std::size_t{1}, std::size_t{0}}) {
        INFO("requested capacity " << requested);
        within(quick, [requested] {
            Kept<int> kept(requested);
            BoundedRing<int>& ring = *kept;
            CHECK(ring.capacity() == 1);
            for (int lap = 0; lap < 5; ++lap) {
                INFO("lap " << lap);
                REQUIRE(push(ring, 2 * lap) == Push::ok);
                REQUIRE(push(ring, 2 * lap + 1) == Push::full);
                CHECK(ring.try_pop() == std::optional<int>(2 * lap));
            }
        });
    }
}

TEST_CASE("closing sets a bit that refuses every later push, while queued records can still be popped", "[unit][ring]")
{
    within(quick, [] {
        Kept<int> kept(4);
        BoundedRing<int>& ring = *kept;
        REQUIRE(push(ring, 1) == Push::ok);
        REQUIRE(push(ring, 2) == Push::ok);
        REQUIRE(ring.try_pop() == std::optional<int>(1));
        CHECK_FALSE(ring.closed());

        CHECK(ring.close() == 2);  // pushes claimed before the close
        CHECK(ring.closed());
        CHECK(push(ring, 3) == Push::closed);
        CHECK(ring.claimed() == 2);
        CHECK(ring.close() == 2);  // idempotent
        CHECK(ring.size() == 1);
        CHECK(ring.try_pop() == std::optional<int>(2));
        CHECK_FALSE(ring.try_pop().has_value());

        // A full ring that is closed reports closed, not full.
        Kept<int> full(1);
        REQUIRE(push(*full, 1) == Push::ok);
        REQUIRE(push(*full, 2) == Push::full);
        full->close();
        CHECK(push(*full, 3) == Push::closed);
    });
}

TEST_CASE("the ring destroys the records it still holds exactly once", "[unit][ring]")
{
    REQUIRE(Tracked::live == 0);
    within(quick, [] {
        Kept<Tracked> kept(5);
        BoundedRing<Tracked>& ring = *kept;
        for (int i = 0; i < 5; ++i) {
            Tracked t(i);
            std::uint64_t pos;
            REQUIRE(ring.try_push(t, pos) == BoundedRing<Tracked>::Push::ok);
        }
        Tracked sixth(5);
        std::uint64_t pos;
        REQUIRE(ring.try_push(sixth, pos) == BoundedRing<Tracked>::Push::full);
        CHECK(Tracked::live == 6);
        {
            auto one = ring.try_pop();
            REQUIRE(one.has_value());
            CHECK(*one->v == 0);
        }
        CHECK(Tracked::live == 5);
    });
    CHECK(Tracked::live == 0);
}

TEST_CASE("concurrent producers and consumers deliver every record exactly once, in order per producer", "[unit][ring][concurrency]")
{
    const int consumers = GENERATE(1, 2);
    const std::size_t capacity = GENERATE(std::size_t{64}, std::size_t{100});
    INFO(consumers << " consumers, capacity " << capacity);
    within(concurrent, [consumers, capacity] {
        constexpr int producers = 4;
        constexpr int per_producer = 100'000;
        Kept<std::uint64_t> kept(capacity);
        BoundedRing<std::uint64_t>& ring = *kept;
        // First, alone: exactly `capacity` records fit, and they come back in order. (With
        // cells indexed wrongly the threads below would spin for ever.)
        REQUIRE(fill(ring, capacity + 1) == capacity);
        for (std::uint64_t i = 0; i < capacity; ++i) REQUIRE(ring.try_pop() == std::optional<std::uint64_t>(i));
        REQUIRE_FALSE(ring.try_pop().has_value());
        const std::uint64_t base = ring.claimed();

        std::atomic<int> producers_done{0};
        std::vector<std::vector<std::uint64_t>> got(static_cast<std::size_t>(consumers));
        std::vector<std::thread> threads;
        for (int p = 0; p < producers; ++p) {
            threads.emplace_back([&, p] {
                for (std::uint64_t i = 0; i < per_producer; ++i) {
                    std::uint64_t v = (static_cast<std::uint64_t>(p) << 32) | i, pos;
                    while (ring.try_push(v, pos) != BoundedRing<std::uint64_t>::Push::ok) std::this_thread::yield();
                }
                ++producers_done;
            });
        }
        for (int c = 0; c < consumers; ++c) {
            threads.emplace_back([&, c] {
                auto& mine = got[static_cast<std::size_t>(c)];
                for (;;) {
                    if (auto v = ring.try_pop()) {
                        mine.push_back(*v);
                    } else if (producers_done.load() == producers && ring.consumed() == ring.claimed()) {
                        break;
                    } else {
                        std::this_thread::yield();
                    }
                }
            });
        }
        for (auto& t : threads) t.join();

        std::vector<std::vector<bool>> seen(producers, std::vector<bool>(per_producer, false));
        std::size_t total = 0, duplicates = 0, out_of_order = 0;
        for (const auto& mine : got) {
            std::vector<std::int64_t> last(producers, -1);
            for (std::uint64_t v : mine) {
                const auto p = static_cast<std::size_t>(v >> 32);
                const auto i = static_cast<std::int64_t>(v & 0xffffffffu);
                if (seen[p][static_cast<std::size_t>(i)]) ++duplicates;
                seen[p][static_cast<std::size_t>(i)] = true;
                if (i <= last[p]) ++out_of_order;  // each consumer sees a producer's records in order
                last[p] = i;
                ++total;
            }
        }
        CHECK(duplicates == 0);
        CHECK(out_of_order == 0);
        CHECK(total == std::size_t{producers} * per_producer);
        CHECK(ring.size() == 0);
        CHECK(ring.claimed() - base == std::uint64_t{producers} * per_producer);
    });
}

TEST_CASE("a close racing with producers is exact: claimed pushes before it are all poppable, none after", "[unit][ring][concurrency]")
{
    within(concurrent, [] {
        Kept<int> kept(1 << 16);
        BoundedRing<int>& ring = *kept;
        std::atomic<bool> go{false};
        std::atomic<long> ok_pushes{0};
        std::vector<std::thread> threads;
        for (int p = 0; p < 4; ++p) {
            threads.emplace_back([&] {
                while (!go.load()) std::this_thread::yield();
                for (int i = 0; i < 10'000; ++i) {
                    std::uint64_t pos;
                    int v = i;
                    const auto r = ring.try_push(v, pos);
                    if (r == BoundedRing<int>::Push::closed) break;
                    if (r == BoundedRing<int>::Push::ok) ++ok_pushes;
                }
            });
        }
        go = true;
        while (ring.claimed() < 1000) std::this_thread::yield();
        const std::uint64_t at_close = ring.close();
        for (auto& t : threads) t.join();

        CHECK(static_cast<std::uint64_t>(ok_pushes.load()) == at_close);
        CHECK(ring.claimed() == at_close);
        std::uint64_t popped = 0;
        // One pop per claimed push and no more (an iteration bound): the producers are
        // joined, so every claimed push is published and each pop finds one.
        for (std::uint64_t tries = 0; tries < at_close && ring.consumed() < ring.claimed(); ++tries)
            if (ring.try_pop()) ++popped;
        CHECK(popped == at_close);
    });
}

// A record the size of RawJsonText's: with its sequence number, a cell of 512 bytes, eight
// to a 4 KiB page.
struct Wide {
    std::uint64_t id = 0;
    char bytes[496]{};
    explicit Wide(std::uint64_t i = 0) noexcept : id(i) {}
};
static_assert(sizeof(Wide) == 504);

TEST_CASE("the consumer reads ahead of the tail each page a push will reach, once, on a ring of more than 64 MiB", "[unit][ring]")
{
    within(quick, [] {
        constexpr std::size_t ahead = BoundedRing<Wide>::warm_cells;  // 8192 cells: 1024 pages
        Kept<Wide> big(std::size_t{1} << 18);  // 128 MiB of cells
        BoundedRing<Wide>& ring = *big;
        // The constructor read the first `ahead` cells' pages: nothing is new yet.
        CHECK(ring.warm_ahead(ring.claimed(), ahead) == 0);
        for (std::uint64_t i = 0; i < 80; ++i) {
            Wide w(i);
            std::uint64_t pos = 0;
            REQUIRE(ring.try_push(w, pos) == BoundedRing<Wide>::Push::ok);
        }
        // The tail moved 80 cells (10 pages): exactly those past the old window are read.
        CHECK(ring.warm_ahead(ring.claimed(), ahead) == 10);
        CHECK(ring.warm_ahead(ring.claimed(), ahead) == 0);
        // A wider window reads only the pages beyond what was read.
        CHECK(ring.warm_ahead(ring.claimed(), ahead + 64) == 8);
        // From the head, behind the tail: nothing new either.
        CHECK(ring.warm_ahead(ring.consumed(), ahead) == 0);
        for (std::uint64_t i = 0; i < 80; ++i) REQUIRE(ring.try_pop().has_value());

        // A ring of 64 MiB or less is not read ahead: its pages stay warm on their own.
        Kept<Wide> mid(std::size_t{1} << 17);
        Wide w(1);
        std::uint64_t pos = 0;
        REQUIRE(mid->try_push(w, pos) == BoundedRing<Wide>::Push::ok);
        CHECK(mid->warm_ahead(mid->claimed(), ahead) == 0);
        REQUIRE(mid->try_pop().has_value());
    });
}

namespace {

// The kernel's transparent huge page setting, the word in brackets ("always", "madvise",
// "never"), or "" where the kernel has none.
std::string thp_setting()
{
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto open = all.find('['), close = all.find(']');
    return open == std::string::npos || close == std::string::npos ? ""
                                                                    : all.substr(open + 1, close - open - 1);
}

// This process's anonymous memory in transparent huge pages, in KiB.
long anon_huge_kib()
{
    std::ifstream in("/proc/self/smaps_rollup");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
    return -1;
}

}  // namespace

TEST_CASE("a ring of 2 MiB or more sits in transparent huge pages where the kernel offers them, and in 4 KiB pages when asked not to", "[unit][ring]")
{
    const std::string thp = thp_setting();
    CAPTURE(thp);
    // 2^16 cells of 512 B: 32 MiB, sixteen 2 MiB pages.
    const auto huge_kib_of = [](bool huge) {
        auto kib = std::make_shared<long>(-1);
        within(quick, [kib, huge] {
            const long before = anon_huge_kib();
            REQUIRE(before >= 0);
            Kept<Wide> ring(std::size_t{1} << 16, huge);
            *kib = anon_huge_kib() - before;
            // The memory is the ring's: a lap of pushes and pops through it.
            std::uint64_t in_place = 0, popped = 0;
            for (std::uint64_t i = 0; i < (std::uint64_t{1} << 16); ++i) {
                Wide w(i);
                std::uint64_t pos = 0;
                in_place += ring->try_push(w, pos) == BoundedRing<Wide>::Push::ok && pos == i;
            }
            while (const auto w = ring->try_pop()) popped += w->id == popped;
            REQUIRE(in_place == (std::uint64_t{1} << 16));
            REQUIRE(popped == (std::uint64_t{1} << 16));
        });
        return *kib;
    };
    const long asked = huge_kib_of(true);
    const long not_asked = huge_kib_of(false);
    if (thp == "madvise" || thp == "always") {
        CHECK(asked == 32 * 1024);
    } else {
        WARN("transparent huge pages are \"" << thp << "\" here: the huge-page mapping is not exercised");
        CHECK(asked == 0);
    }
    // With "always" the kernel may back any aligned anonymous mapping with huge pages.
    if (thp != "always") CHECK(not_asked == 0);
}

TEST_CASE("a capacity whose cells do not fit in the address space is refused with bad_array_new_length, not wrapped around", "[unit][ring]")
{
    // 2^56 cells of 512 B: 2^65 bytes, which wraps a 64-bit size to 0.
    CHECK_THROWS_AS(BoundedRing<Wide>(std::size_t{1} << 56), std::bad_array_new_length);
}
