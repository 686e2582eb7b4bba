// detail::BoundedRing: the bounded MPMC queue behind submit().
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/detail/bounded_ring.hpp>

#include <atomic>
#include <cstdint>
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

}  // namespace

TEST_CASE("the ring hands records out first in, first out and reports their positions", "[unit][ring]")
{
    BoundedRing<std::string> ring(8);
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
}

TEST_CASE("a full ring refuses a push and keeps the record with the caller", "[unit][ring]")
{
    BoundedRing<std::string> ring(4);
    for (int i = 0; i < 4; ++i) REQUIRE(push(ring, std::to_string(i)) == Push::ok);
    std::string extra = "extra";
    std::uint64_t pos = 0;
    CHECK(ring.try_push(extra, pos) == BoundedRing<std::string>::Push::full);
    CHECK(extra == "extra");  // not moved from: the caller may still use it
    CHECK(ring.size() == 4);

    REQUIRE(ring.try_pop() == std::optional<std::string>("0"));
    CHECK(ring.try_push(extra, pos) == BoundedRing<std::string>::Push::ok);
    CHECK(pos == 4);
    for (const char* want : {"1", "2", "3", "extra"}) CHECK(ring.try_pop() == std::optional<std::string>(want));
}

TEST_CASE("a capacity that is not a power of two wraps around correctly over many laps", "[unit][ring]")
{
    for (std::size_t cap : {2u, 3u, 5u, 6u, 7u, 100u}) {
        INFO("capacity " << cap);
        BoundedRing<int> ring(cap);
        CHECK(ring.capacity() == cap);
        int next_in = 0, next_out = 0;
        bool fifo = true, full_at_capacity = true;
        for (int lap = 0; lap < 50; ++lap) {
            for (std::size_t i = 0; i < cap; ++i) full_at_capacity &= push(ring, next_in++) == Push::ok;
            full_at_capacity &= push(ring, -1) == Push::full;
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
        CHECK(full_at_capacity);
        CHECK(next_in == next_out);
    }
}

TEST_CASE("a one-slot ring (capacity 1, or 0 treated as 1) holds exactly one record", "[unit][ring]")
{
    for (std::size_t requested : {std::size_t{1}, std::size_t{0}}) {
        INFO("requested capacity " << requested);
        // Heap-allocated: if the ring took a second record, its state is corrupt and popping
        // (or destroying it) could spin forever, so it is leaked rather than touched again.
        auto* ring = new BoundedRing<int>(requested);
        CHECK(ring->capacity() == 1);
        bool ok = true;
        for (int lap = 0; lap < 5 && ok; ++lap) {
            ok = push(*ring, 2 * lap) == Push::ok;
            CHECK(ok);
            ok = ok && push(*ring, 2 * lap + 1) == Push::full;
            CHECK(ok);
            if (ok) CHECK(ring->try_pop() == std::optional<int>(2 * lap));
        }
        if (ok) delete ring;
    }
}

TEST_CASE("closing sets a bit that refuses every later push, while queued records can still be popped", "[unit][ring]")
{
    BoundedRing<int> ring(4);
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
    BoundedRing<int> full(1);
    REQUIRE(push(full, 1) == Push::ok);
    full.close();
    CHECK(push(full, 2) == Push::closed);
}

TEST_CASE("the ring destroys the records it still holds exactly once", "[unit][ring]")
{
    REQUIRE(Tracked::live == 0);
    {
        BoundedRing<Tracked> ring(5);
        for (int i = 0; i < 5; ++i) {
            Tracked t(i);
            std::uint64_t pos;
            REQUIRE(ring.try_push(t, pos) == BoundedRing<Tracked>::Push::ok);
        }
        CHECK(Tracked::live == 5);
        {
            auto one = ring.try_pop();
            REQUIRE(one.has_value());
            CHECK(*one->v == 0);
        }
        CHECK(Tracked::live == 4);
    }
    CHECK(Tracked::live == 0);
}

TEST_CASE("concurrent producers and consumers deliver every record exactly once, in order per producer", "[unit][ring][concurrency]")
{
    constexpr int producers = 4;
    constexpr int per_producer = 100'000;
    const int consumers = GENERATE(1, 2);
    const std::size_t capacity = GENERATE(std::size_t{64}, std::size_t{100});
    INFO(consumers << " consumers, capacity " << capacity);

    BoundedRing<std::uint64_t> ring(capacity);
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
    CHECK(ring.claimed() == std::uint64_t{producers} * per_producer);
}

TEST_CASE("a close racing with producers is exact: claimed pushes before it are all poppable, none after", "[unit][ring][concurrency]")
{
    BoundedRing<int> ring(1 << 16);
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
    while (ring.consumed() < ring.claimed())
        if (ring.try_pop()) ++popped;
    CHECK(popped == at_close);
}
