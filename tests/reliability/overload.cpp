// Overload: 4 producers submit at full speed for 10 seconds into each overflow policy. The
// appends go to a sink FileIo that parses and discards them (a real disk would fill with
// gigabytes), so the writer runs as fast as it can and the queue stays full. Checked: the
// process's peak RSS grows by no more than the documented bound
//   queue_capacity × record size + batch buffers + a constant (docs/reliability.md),
// the counts are exact (each producer's own tally of submit() results against stats(), and
// the lines the sink saw against `written`), each producer's records arrive in order and
// once, and drop_oldest keeps the newest records (each producer's last one is written).
// Each policy is its own meson test (its own process), so peak RSS is per policy.
// Under ASan/TSan the run is 2 s and the RSS bound is not checked (the sanitizers' own
// memory dominates it).
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::Overflow;
using jsonlw::SubmitResult;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define JSONLW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define JSONLW_TEST_SANITIZED 1
#endif
#endif
#ifndef JSONLW_TEST_SANITIZED
#define JSONLW_TEST_SANITIZED 0
#endif

namespace {

constexpr int kProducers = 4;
constexpr std::int64_t kIdStride = 500'000'000;  // id = producer * stride + seq (fits an int)
constexpr std::size_t kQueue = 8192;
constexpr std::size_t kBatch = 64;
constexpr std::size_t kText = 1000;  // bytes of text per record

// Lines appended to "/dev/null" for real; the sink only reads them: per producer, how many,
// and whether each one's seqs only grow.
class SinkIo : public jsonlw::FileIo {
public:
    struct PerProducer {
        std::uint64_t lines = 0;
        std::int64_t last_seq = -1;
        std::uint64_t out_of_order = 0;
    };

    int open(const char*, int, mode_t) noexcept override
    {
        return ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    }
    ssize_t writev(int, const iovec* iov, int iovcnt) noexcept override
    {
        ssize_t total = 0;
        for (int i = 0; i < iovcnt; ++i) {
            scan({static_cast<const char*>(iov[i].iov_base), iov[i].iov_len});
            total += static_cast<ssize_t>(iov[i].iov_len);
        }
        return total;
    }

    // Read after close() completed (which orders it after every writev).
    std::array<PerProducer, kProducers> per{};
    std::uint64_t lines = 0, unparsed = 0;

private:
    void scan(std::string_view data)
    {
        static constexpr std::string_view prefix = R"({"id":)";
        std::size_t pos = 0;
        while (pos < data.size()) {
            std::size_t nl = data.find('\n', pos);
            if (nl == std::string_view::npos) nl = data.size();
            const std::string_view line = data.substr(pos, nl - pos);
            pos = nl + 1;
            if (line.empty()) continue;
            ++lines;
            std::int64_t id = -1;
            if (line.substr(0, prefix.size()) != prefix ||
                std::from_chars(line.data() + prefix.size(), line.data() + line.size(), id).ec !=
                    std::errc{} ||
                id < 0 || id / kIdStride >= kProducers) {
                ++unparsed;
                continue;
            }
            PerProducer& p = per[static_cast<std::size_t>(id / kIdStride)];
            const std::int64_t seq = id % kIdStride;
            if (seq <= p.last_seq) ++p.out_of_order;
            p.last_seq = seq;
            ++p.lines;
        }
    }
};

// Linux: VmHWM (peak RSS) and VmRSS of this process, in KiB; writing 5 to clear_refs resets
// the peak to the current RSS.
long status_kib(const char* field)
{
    std::ifstream in("/proc/self/status");
    std::string key;
    long value = -1;
    std::string unit;
    while (in >> key) {
        if (key == field) {
            in >> value;
            return value;
        }
        std::getline(in, unit);
    }
    return -1;
}

bool reset_peak_rss()
{
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

struct Tally {
    std::uint64_t submitted = 0, accepted = 0, queue_full = 0, closed = 0;
    std::int64_t last_accepted_seq = -1;
};

void run_overload(Overflow policy, const char* name)
{
    const char* secs_env = std::getenv("JSONLW_OVERLOAD_SECONDS");
    const int seconds = secs_env ? std::atoi(secs_env) : (JSONLW_TEST_SANITIZED ? 2 : 10);

    Harness h;
    auto sink = std::make_shared<SinkIo>();
    auto o = h.options();
    o.file_io = sink;
    o.queue_capacity = kQueue;
    o.batch_records = kBatch;
    o.overflow = policy;
    o.block_timeout = std::chrono::milliseconds(20);
    o.shutdown_timeout = std::chrono::seconds(30);
    TestWriter w(h.executor(), o);
    h.start(w);
    const std::string text(kText, 'x');

    // Everything that lives for the whole run exists now: measure from here.
    const bool reset = reset_peak_rss();
    const long base_kib = status_kib("VmRSS:");
    std::array<Tally, kProducers> tally{};
    std::atomic<int> ready{0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
        producers.emplace_back([&, p] {
            Tally& t = tally[static_cast<std::size_t>(p)];
            ++ready;
            while (ready.load() < kProducers) std::this_thread::yield();
            for (std::int64_t seq = 0;; ++seq) {
                if ((seq & 255) == 0 && std::chrono::steady_clock::now() >= deadline) break;
                Rec r;
                r.id = static_cast<int>(p * kIdStride + seq);
                r.text = text;
                const SubmitResult res = w.submit(std::move(r));
                ++t.submitted;
                switch (res) {
                case SubmitResult::accepted:
                    ++t.accepted;
                    t.last_accepted_seq = seq;
                    break;
                case SubmitResult::dropped_queue_full: ++t.queue_full; break;
                case SubmitResult::closed: ++t.closed; break;
                case SubmitResult::disabled: break;
                }
            }
        });
    }
    for (auto& t : producers) t.join();
    // One more record per producer, once they all stopped: the newest records of the run. The
    // producers raced to the end, so a producer's own last record may have been evicted by
    // another's later ones; these cannot be (nothing is submitted after them), and under
    // drop_oldest each must reach the file.
    for (int p = 0; p < kProducers; ++p) {
        Tally& t = tally[static_cast<std::size_t>(p)];
        const auto seq = static_cast<std::int64_t>(t.submitted);
        Rec r;
        r.id = static_cast<int>(p * kIdStride + seq);
        r.text = text;
        const SubmitResult res = w.submit(std::move(r));
        ++t.submitted;
        if (res == SubmitResult::accepted) {
            ++t.accepted;
            t.last_accepted_seq = seq;
        } else if (res == SubmitResult::dropped_queue_full) {
            ++t.queue_full;
        } else if (res == SubmitResult::closed) {
            ++t.closed;
        }
    }
    const long peak_kib = status_kib("VmHWM:");
    const auto report = close(w, std::chrono::seconds(60));

    Tally sum;
    for (const Tally& t : tally) {
        sum.submitted += t.submitted;
        sum.accepted += t.accepted;
        sum.queue_full += t.queue_full;
        sum.closed += t.closed;
    }
    const auto& s = report.stats;
    INFO(name << ": " << s);
    CHECK(report.drained);
    CHECK(invariant_holds(s));
    CHECK(s.pending == 0);
    CHECK(s.submitted == sum.submitted);
    CHECK(s.dropped.queue_full == sum.queue_full);
    CHECK(s.dropped.closed == sum.closed);
    CHECK(sum.closed == 0);
    CHECK(s.written + s.dropped.oldest_evicted == sum.accepted);
    CHECK(s.dropped.malformed + s.dropped.write_error + s.dropped.unexpected + s.unknown +
              s.dropped.shutdown == 0);
    CHECK(sink->lines == s.written);
    CHECK(sink->unparsed == 0);
    for (int p = 0; p < kProducers; ++p) {
        const auto& seen = sink->per[static_cast<std::size_t>(p)];
        INFO("producer " << p);
        CHECK(seen.out_of_order == 0);  // in order, never twice
        if (policy == Overflow::drop_oldest) {
            // The newest records survive: each producer's record submitted after they all stopped.
            CHECK(tally[static_cast<std::size_t>(p)].last_accepted_seq ==
                  static_cast<std::int64_t>(tally[static_cast<std::size_t>(p)].submitted) - 1);
            CHECK(seen.last_seq == tally[static_cast<std::size_t>(p)].last_accepted_seq);
        }
    }
    switch (policy) {
    case Overflow::drop_newest: CHECK(s.dropped.oldest_evicted == 0); break;
    case Overflow::drop_oldest: CHECK(s.dropped.queue_full == 0); break;
    case Overflow::block: CHECK(s.dropped.oldest_evicted == 0); break;
    }

    // The bound (docs/reliability.md): the queue full of records (the Rec and its text's heap
    // block), the batch buffers (the staging batch and the line buffer), what each producer's
    // malloc arena may keep of the records freed into it (glibc frees a block into the arena
    // it came from and gives contending threads arenas of their own, so on a loaded 2-core
    // machine each producer's arena held up to a queue's worth: growth 54-76 MiB, 41 MiB with
    // MALLOC_ARENA_MAX=1), and a constant for the threads' stacks and the allocator's slack.
    const long record_bytes = static_cast<long>(sizeof(Rec) + kText + 1 + 16);
    const long line_bytes = static_cast<long>(kText + 100);
    const long queue_bytes = static_cast<long>(kQueue) * record_bytes;
    const long bound_kib = (queue_bytes + static_cast<long>(kProducers) * queue_bytes +
                            static_cast<long>(kBatch) * (record_bytes + 2 * line_bytes)) / 1024 +
                           48 * 1024;
    const long growth_kib = peak_kib - base_kib;
    std::printf("overload %s: %d s, %d producers, submitted %llu, written %llu, queue_full %llu, "
                "oldest_evicted %llu; peak RSS %ld KiB, base %ld KiB, growth %ld KiB, bound %ld KiB%s\n",
                name, seconds, kProducers, static_cast<unsigned long long>(s.submitted),
                static_cast<unsigned long long>(s.written),
                static_cast<unsigned long long>(s.dropped.queue_full),
                static_cast<unsigned long long>(s.dropped.oldest_evicted), peak_kib, base_kib,
                growth_kib, bound_kib, JSONLW_TEST_SANITIZED ? " (not checked: sanitizer build)" : "");
    CHECK(s.submitted > 10'000);  // it did run at full speed
    if (!JSONLW_TEST_SANITIZED) {
        REQUIRE(reset);
        REQUIRE(base_kib > 0);
        REQUIRE(peak_kib > 0);
        CHECK(growth_kib <= bound_kib);
    }
}

}  // namespace

TEST_CASE("overload: 4 producers at full speed for 10 s into a drop_newest queue: peak RSS within the bound, exact counts",
          "[reliability][overload][drop_newest]")
{
    run_overload(Overflow::drop_newest, "drop_newest");
}

TEST_CASE("overload: 4 producers at full speed for 10 s into a drop_oldest queue: peak RSS within the bound, exact counts, the newest records kept",
          "[reliability][overload][drop_oldest]")
{
    run_overload(Overflow::drop_oldest, "drop_oldest");
}

TEST_CASE("overload: 4 producers at full speed for 10 s into a block queue: peak RSS within the bound, exact counts",
          "[reliability][overload][block]")
{
    run_overload(Overflow::block, "block");
}
