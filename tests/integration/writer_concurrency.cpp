// Many producers: the accounting invariant holds at every snapshot and exactly at the end, the
// file holds exactly `written` valid lines, each producer's records in its submission order;
// and a close racing with producers.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;

namespace {

constexpr int kProducers = 4;
constexpr int kPerProducer = 50'000;

struct Snapshots {
    std::atomic<long> taken{0};
    std::atomic<long> broken{0};     // snapshots that violate the invariant
    std::atomic<long> backwards{0};  // a counter that went down between two snapshots
};

// Takes snapshots until `stop`, checking the invariant and monotonic counters.
template <class W>
void watch(const W& w, const std::atomic<bool>& stop, Snapshots& out)
{
    jsonlw::WriterStats prev;
    while (!stop.load()) {
        const auto s = w.stats();
        INFO("stats: " << s);
        ++out.taken;
        if (!invariant_holds(s)) ++out.broken;
        if (s.submitted < prev.submitted || s.written < prev.written || s.dropped.total() < prev.dropped.total())
            ++out.backwards;
        prev = s;
        std::this_thread::yield();
    }
}

// Checks the file against the final stats: `written` lines, each valid JSON, each producer's
// ids increasing. Returns a description of the first problem, or "".
std::string check_file(const std::filesystem::path& path, const jsonlw::WriterStats& s,
                       std::vector<std::uint64_t>& per_producer)
{
    const auto lines = read_lines(path);
    if (lines.size() != s.written)
        return "file has " + std::to_string(lines.size()) + " lines, written = " + std::to_string(s.written);
    std::vector<std::int64_t> last(kProducers, -1);
    per_producer.assign(kProducers, 0);
    for (const auto& l : lines) {
        if (!is_valid_json(l)) return "invalid JSON line: " + l;
        const auto id = json_id(l);
        if (!id) return "line without id: " + l;
        const auto p = static_cast<std::size_t>(*id / 1'000'000);
        const std::int64_t seq = *id % 1'000'000;
        if (p >= kProducers) return "unknown producer: " + l;
        if (seq <= last[p]) return "producer " + std::to_string(p) + " out of order at " + l;
        last[p] = seq;
        ++per_producer[p];
    }
    return "";
}

}  // namespace

TEST_CASE("4 producers, 200,000 records, 1,024 slots, 1 and 4 serializer threads: the invariant holds at every snapshot; the file holds exactly the written lines, each producer's in order",
          "[integration][concurrency][serializers]")
{
    const std::size_t serializers = GENERATE(1, 4);
    Harness h;
    auto o = h.options();
    o.queue_capacity = 1024;
    o.serializer_threads = serializers;
    TestWriter w(h.executor(), o);
    w.declare_concurrent();
    h.start(w);

    std::atomic<bool> go{false}, stop{false};
    std::atomic<long> accepted{0}, refused{0}, other{0};
    Snapshots snaps;
    std::thread watcher([&] { watch(w, stop, snaps); });
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
        producers.emplace_back([&, p] {
            while (!go.load()) std::this_thread::yield();
            for (int i = 0; i < kPerProducer; ++i) {
                Rec r = rec(p * 1'000'000 + i, "producer " + std::to_string(p));
                r.value = i * 0.25;
                if (i % 64 == 63) std::this_thread::yield();  // let the drain and the watcher in
                switch (w.submit(std::move(r))) {
                case SubmitResult::accepted: ++accepted; break;
                case SubmitResult::dropped_queue_full: ++refused; break;
                default: ++other; break;
                }
            }
        });
    }
    REQUIRE(wait_until([&] { return snaps.taken.load() > 0; }));
    go = true;
    for (auto& t : producers) t.join();
    const long during = snaps.taken.load();
    flush(w);
    stop = true;
    watcher.join();

    // (Catch's INFO is not thread-safe: only once the watcher, which uses it, is gone.)
    INFO("serializer_threads = " << serializers);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(during > 1);
    CHECK(snaps.broken.load() == 0);
    CHECK(snaps.backwards.load() == 0);
    CHECK(other.load() == 0);
    CHECK(s.submitted == std::uint64_t{kProducers} * kPerProducer);
    CHECK(s.submitted == s.written + s.dropped.total() + s.unknown + s.pending);
    CHECK(s.pending == 0);
    CHECK(s.unknown == 0);
    CHECK(s.written == static_cast<std::uint64_t>(accepted.load()));
    CHECK(s.dropped.queue_full == static_cast<std::uint64_t>(refused.load()));
    CHECK(s.dropped.total() == s.dropped.queue_full);

    std::vector<std::uint64_t> per_producer;
    CHECK(check_file(w.file_path(), s, per_producer) == "");
    CHECK(s.bytes == read_file(w.file_path()).size());
    CHECK(w.serialize_threads().size() <= serializers);
    CHECK(h.logs.count(jsonlw::LogLevel::warning, "serializer_threads") == 0);

    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats == w.stats());
    CHECK(invariant_holds(report.stats));
}

TEST_CASE("a close racing with producers: every submit is accepted or closed, every accepted record is written, the invariant is exact",
          "[integration][concurrency][shutdown]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 1 << 15;
    TestWriter w(h.executor(), o);
    h.start(w);

    std::atomic<bool> go{false}, stop{false};
    std::atomic<long> accepted{0}, closed{0}, full{0}, other{0};
    Snapshots snaps;
    std::thread watcher([&] { watch(w, stop, snaps); });
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
        producers.emplace_back([&, p] {
            while (!go.load()) std::this_thread::yield();
            for (int i = 0; i < kPerProducer; ++i) {
                if (i % 64 == 63) std::this_thread::yield();
                switch (w.submit(rec(p * 1'000'000 + i))) {
                case SubmitResult::accepted: ++accepted; break;
                case SubmitResult::closed: ++closed; break;
                case SubmitResult::dropped_queue_full: ++full; break;
                default: ++other; break;
                }
            }
        });
    }
    go = true;
    REQUIRE(wait_until([&] { return w.stats().submitted >= 20'000; }));
    const auto report = close(w);
    for (auto& t : producers) t.join();
    stop = true;
    watcher.join();

    CHECK(report.drained);
    CHECK(report.stats.pending == 0);
    CHECK(invariant_holds(report.stats));
    CHECK(snaps.broken.load() == 0);
    CHECK(snaps.backwards.load() == 0);
    CHECK(other.load() == 0);

    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.submitted == std::uint64_t{kProducers} * kPerProducer);
    CHECK(invariant_holds(s));
    CHECK(s.pending == 0);
    CHECK(s.written == static_cast<std::uint64_t>(accepted.load()));  // close drained them all
    CHECK(s.dropped.closed == static_cast<std::uint64_t>(closed.load()));
    CHECK(s.dropped.queue_full == static_cast<std::uint64_t>(full.load()));
    CHECK(s.written == report.stats.written);
    std::vector<std::uint64_t> per_producer;
    CHECK(check_file(w.file_path(), s, per_producer) == "");
}
