// Many producers: the accounting invariant holds at every snapshot and exactly at the end, the
// file holds exactly `written` valid lines, each producer's records in its submission order;
// and a close racing with producers.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <initializer_list>
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

// The producers and the watcher of a test: kProducers threads that each submit kPerProducer
// records, make(p, i), once go() is called, counting what each submit returned; and a thread
// taking snapshots (watch) until stop_watching(). The destructor lets everything run out and
// joins.
template <class W>
class Producers {
public:
    template <class Make>
    Producers(W& w, Make make)
    {
        watcher_ = std::thread([this, &w] { watch(w, stop_, snaps_); });
        for (int p = 0; p < kProducers; ++p) {
            threads_.emplace_back([this, &w, make, p] {
                while (!go_.load()) std::this_thread::yield();
                for (int i = 0; i < kPerProducer; ++i) {
                    if (i % 64 == 63) std::this_thread::yield();  // let the drain and the watcher in
                    ++returned_[static_cast<std::size_t>(w.submit(make(p, i)))];
                }
            });
        }
    }
    Producers(const Producers&) = delete;
    Producers& operator=(const Producers&) = delete;
    ~Producers()
    {
        join();
        stop_watching();
    }

    void go() { go_ = true; }
    // Waits until every producer is done (lets them go first).
    void join()
    {
        go();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }
    void stop_watching()
    {
        stop_ = true;
        if (watcher_.joinable()) watcher_.join();
    }

    const Snapshots& snapshots() const { return snaps_; }
    long returned(SubmitResult r) const { return returned_[static_cast<std::size_t>(r)].load(); }
    // Submits that returned none of `expected`.
    long returned_other_than(std::initializer_list<SubmitResult> expected) const
    {
        long n = 0;
        for (std::size_t r = 0; r < returned_.size(); ++r)
            if (std::find(expected.begin(), expected.end(), SubmitResult(r)) == expected.end())
                n += returned_[r].load();
        return n;
    }

private:
    std::atomic<bool> go_{false}, stop_{false};
    std::array<std::atomic<long>, 4> returned_{};  // by SubmitResult
    Snapshots snaps_;
    std::vector<std::thread> threads_;
    std::thread watcher_;
};

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

    Producers producers(w, [](int p, int i) {
        Rec r = rec(p * 1'000'000 + i, "producer " + std::to_string(p));
        r.value = i * 0.25;
        return r;
    });
    const Snapshots& snaps = producers.snapshots();
    REQUIRE(wait_until([&] { return snaps.taken.load() > 0; }));
    producers.go();
    producers.join();
    const long during = snaps.taken.load();
    flush(w);
    producers.stop_watching();

    // (Catch's INFO is not thread-safe: only once the watcher, which uses it, is gone.)
    INFO("serializer_threads = " << serializers);
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(during > 1);
    CHECK(snaps.broken.load() == 0);
    CHECK(snaps.backwards.load() == 0);
    CHECK(producers.returned_other_than({SubmitResult::accepted, SubmitResult::dropped_queue_full}) == 0);
    CHECK(s.submitted == std::uint64_t{kProducers} * kPerProducer);
    CHECK(s.submitted == s.written + s.dropped.total() + s.unknown + s.pending);
    CHECK(s.pending == 0);
    CHECK(s.unknown == 0);
    CHECK(s.written == static_cast<std::uint64_t>(producers.returned(SubmitResult::accepted)));
    CHECK(s.dropped.queue_full == static_cast<std::uint64_t>(producers.returned(SubmitResult::dropped_queue_full)));
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

    Producers producers(w, [](int p, int i) { return rec(p * 1'000'000 + i); });
    const Snapshots& snaps = producers.snapshots();
    producers.go();
    REQUIRE(wait_until([&] { return w.stats().submitted >= 20'000; }));
    const auto report = close(w);
    producers.join();
    producers.stop_watching();

    CHECK(report.drained);
    CHECK(report.stats.pending == 0);
    CHECK(invariant_holds(report.stats));
    CHECK(snaps.broken.load() == 0);
    CHECK(snaps.backwards.load() == 0);
    CHECK(producers.returned_other_than({SubmitResult::accepted, SubmitResult::closed,
                                         SubmitResult::dropped_queue_full}) == 0);

    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.submitted == std::uint64_t{kProducers} * kPerProducer);
    CHECK(invariant_holds(s));
    CHECK(s.pending == 0);
    CHECK(s.written == static_cast<std::uint64_t>(producers.returned(SubmitResult::accepted)));  // close drained them all
    CHECK(s.dropped.closed == static_cast<std::uint64_t>(producers.returned(SubmitResult::closed)));
    CHECK(s.dropped.queue_full == static_cast<std::uint64_t>(producers.returned(SubmitResult::dropped_queue_full)));
    CHECK(s.written == report.stats.written);
    std::vector<std::uint64_t> per_producer;
    CHECK(check_file(w.file_path(), s, per_producer) == "");
}
