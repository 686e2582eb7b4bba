// The subclass form: a writer that overrides JsonlRecordWriter's own virtual functions
// (serialize, write_batch, malformed_error, concurrent_serialize) instead of being given an
// encoder object. The engine calls them through an adapter (detail::WriterHooks in
// jsonl_record_writer.hpp); every other test builds its writer from an encoder object
// (support/test_writer.hpp). A subclass whose overrides use its own members calls shutdown()
// first in its destructor (docs/extending.md, "The extension points"): the last scenario
// destroys one while records are queued and its serialize() is mid-record.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

// {"id":N,"who":"<who>"}: serialize() reads a member of the subclass.
class WhoWriter final : public jsonlw::JsonlRecordWriter<Rec> {
public:
    WhoWriter(boost::asio::any_io_executor ex, jsonlw::WriterOptions opts, std::string who)
        : JsonlRecordWriter(std::move(ex), std::move(opts)), who_(std::move(who))
    {
    }
    ~WhoWriter() override { shutdown(); }

protected:
    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("id", r.id).field("who", who_).end_object();
    }

private:
    const std::string who_;
};

// A layout by key in write_batch: each record's group (by Rec::key, in order of first
// appearance) is serialized with serialize_batch() and appended to <dir>/<key>.jsonl.
class KeyFileWriter final : public jsonlw::JsonlRecordWriter<Rec> {
public:
    using JsonlRecordWriter::JsonlRecordWriter;
    ~KeyFileWriter() override { shutdown(); }

protected:
    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("id", r.id).field("key", r.key).end_object();
    }
    void write_batch(std::span<const Rec> batch) override
    {
        std::vector<std::pair<std::string, std::vector<const Rec*>>> groups;
        for (const Rec& r : batch) {
            auto it = std::find_if(groups.begin(), groups.end(),
                                   [&](const auto& g) { return g.first == r.key; });
            if (it == groups.end()) {
                groups.emplace_back(r.key, std::vector<const Rec*>{});
                it = std::prev(groups.end());
            }
            it->second.push_back(&r);
        }
        for (const auto& [key, group] : groups)
            append(options().directory / (key + ".jsonl"),
                   serialize_batch(std::span<const Rec* const>(group)));
    }
};

// What a HeldWriter saw, kept past its destruction.
struct HeldReport {
    std::atomic<bool> hold{true};      // the test releases the first serialize()
    std::atomic<bool> entered{false};  // serialize() is waiting on `hold`
    std::atomic<bool> destroyed{false};
    int serialized = 0;  // written by the destructor, after shutdown()
    jsonlw::WriterStats stats;
};

// serialize() holds its first record until released, and uses the subclass's members (a
// string and a counter) for every line; the destructor stops the writer first, then reports.
class HeldWriter final : public jsonlw::JsonlRecordWriter<Rec> {
public:
    HeldWriter(boost::asio::any_io_executor ex, jsonlw::WriterOptions opts,
               std::shared_ptr<HeldReport> report)
        : JsonlRecordWriter(std::move(ex), std::move(opts)),
          tag_(std::string(64, 't')), report_(std::move(report))
    {
    }
    ~HeldWriter() override
    {
        shutdown();  // before tag_, serialized_ and report_ go
        report_->serialized = serialized_;
        report_->stats = stats();
        report_->destroyed.store(true);
    }

protected:
    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        if (serialized_++ == 0) {
            report_->entered.store(true);
            while (report_->hold.load()) std::this_thread::yield();
        }
        line.begin_object().field("id", r.id).field("tag", tag_).end_object();
    }

private:
    const std::string tag_;
    int serialized_ = 0;  // I/O thread only
    std::shared_ptr<HeldReport> report_;
};

// KeyError is malformed; with `concurrent`, serialize() may run on several threads, and each
// call waits (once, at most 20 s) until `gate` distinct threads have entered one.
class DeclaringWriter final : public jsonlw::JsonlRecordWriter<Rec> {
public:
    DeclaringWriter(boost::asio::any_io_executor ex, jsonlw::WriterOptions opts, bool concurrent,
                    std::size_t gate)
        : JsonlRecordWriter(std::move(ex), std::move(opts)), concurrent_(concurrent), gate_(gate)
    {
    }
    ~DeclaringWriter() override { shutdown(); }

    std::size_t serialize_threads() const
    {
        std::lock_guard lock(mutex_);
        return threads_.size();
    }

protected:
    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        {
            std::lock_guard lock(mutex_);
            threads_.insert(std::this_thread::get_id());
        }
        if (!gate_open_.load()) {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (serialize_threads() < gate_ && std::chrono::steady_clock::now() < deadline)
                std::this_thread::yield();
            gate_open_.store(true);
        }
        line.begin_object().field("id", r.id);
        if (r.throw_key_error) throw KeyError("'server'");
        if (r.throw_other) throw std::runtime_error("serializer bug in " + std::to_string(r.id));
        line.field("text", r.text).end_object();
    }
    bool malformed_error(const std::exception& e) const noexcept override
    {
        return dynamic_cast<const KeyError*>(&e) != nullptr;
    }
    bool concurrent_serialize() const noexcept override { return concurrent_; }

private:
    const bool concurrent_;
    const std::size_t gate_;
    std::atomic<bool> gate_open_{false};
    mutable std::mutex mutex_;
    std::set<std::thread::id> threads_;
};

// This thread's id for /proc (Linux).
long this_tid() { return static_cast<long>(::syscall(SYS_gettid)); }

// Whether thread `tid` of this process is asleep in a wait (state S in /proc's stat).
bool asleep(long tid)
{
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto name_end = stat.rfind(')');  // the state follows the command name
    return name_end != std::string::npos && name_end + 2 < stat.size() && stat[name_end + 2] == 'S';
}

// A subclass that overrides nothing: the engine has no encoder to call.
class NoSerialize final : public jsonlw::JsonlRecordWriter<Rec> {
public:
    using JsonlRecordWriter::JsonlRecordWriter;
};

}  // namespace

TEST_CASE("a subclass overriding serialize() writes its lines, in order, to the writer's file",
          "[integration][subclass]")
{
    Harness h;
    WhoWriter w(h.executor(), h.options(), "sub");
    h.start(w);
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    const jsonlw::CloseReport r = close(w);
    CHECK(r.drained);
    CHECK(r.stats.written == 3);
    CHECK(r.stats.dropped.total() == 0);
    CHECK(r.stats.bytes == 3 * std::string(R"({"id":0,"who":"sub"})" "\n").size());
    CHECK(read_lines(w.file_path()) ==
          std::vector<std::string>{R"({"id":0,"who":"sub"})", R"({"id":1,"who":"sub"})",
                                   R"({"id":2,"who":"sub"})"});
}

TEST_CASE("a subclass's write_batch override appends each key's group, serialized with serialize_batch, to that key's file",
          "[integration][subclass][layout]")
{
    Harness h;
    KeyFileWriter w(h.executor(), h.options());
    w.start();
    // Queued before the drain first runs: one batch holding both keys.
    for (int i = 0; i < 6; ++i) {
        Rec r = rec(i);
        r.key = i % 2 ? "odd" : "even";
        REQUIRE(w.submit(r) == SubmitResult::accepted);
    }
    h.loop.start();
    const jsonlw::CloseReport r = close(w);
    INFO("stats: " << r.stats);
    CHECK(r.stats.batches == 2);  // one write_batch() call, one append per key
    CHECK(r.stats.written == 6);
    CHECK(r.stats.dropped.total() == 0);
    CHECK(read_lines(h.dir / "even.jsonl") ==
          std::vector<std::string>{R"({"id":0,"key":"even"})", R"({"id":2,"key":"even"})",
                                   R"({"id":4,"key":"even"})"});
    CHECK(read_lines(h.dir / "odd.jsonl") ==
          std::vector<std::string>{R"({"id":1,"key":"odd"})", R"({"id":3,"key":"odd"})",
                                   R"({"id":5,"key":"odd"})"});
    auto names = files_in(h.dir.path());
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"even.jsonl", "odd.jsonl"});
}

TEST_CASE("a subclass that calls shutdown() first in its destructor is destroyed safely mid-record with records queued: 1 written, 4 counted as shutdown, 1 refused as closed",
          "[integration][subclass][shutdown]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 1;
    o.queue_capacity = 4;
    o.overflow = jsonlw::Overflow::block;
    o.block_timeout = std::chrono::minutes(5);  // never reached: only the shutdown lets it go
    auto report = std::make_shared<HeldReport>();
    auto w = std::make_unique<HeldWriter>(h.executor(), o, report);
    h.start(*w);
    const auto path = w->file_path();

    REQUIRE(w->submit(rec(0)) == SubmitResult::accepted);
    REQUIRE(wait_until([&] { return report->entered.load(); }));  // the I/O thread holds record 0
    for (int i = 1; i <= 4; ++i) REQUIRE(w->submit(rec(i)) == SubmitResult::accepted);  // full
    // A producer waits for room. shutdown() wakes it only once the drain is told to stop
    // between batches, so its `closed` says record 0's batch may end now without the drain
    // taking another: records 1-4 stay queued for the shutdown to count.
    HeldWriter* const raw = w.get();  // the destructor runs until record 0 is let go
    std::atomic<long> producer_tid{0};
    std::promise<SubmitResult> blocked;
    std::thread producer([&] {
        producer_tid.store(this_tid());
        blocked.set_value(raw->submit(rec(5)));
    });
    REQUIRE(wait_until([&] { return producer_tid.load() != 0 && asleep(producer_tid.load()); }));

    std::thread destroyer([&] { w.reset(); });
    CHECK(get_within(blocked.get_future()) == SubmitResult::closed);
    CHECK_FALSE(report->destroyed.load());
    report->hold.store(false);
    destroyer.join();
    producer.join();

    REQUIRE(report->destroyed.load());
    const jsonlw::WriterStats& s = report->stats;
    INFO("stats: " << s);
    CHECK(report->serialized == 1);
    CHECK(s.submitted == 6);
    CHECK(s.written == 1);
    CHECK(s.dropped.shutdown == 4);
    CHECK(s.dropped.closed == 1);
    CHECK(s.dropped.total() == 5);
    CHECK(s.pending == 0);
    CHECK(invariant_holds(s));
    CHECK(read_lines(path) == std::vector<std::string>{R"({"id":0,"tag":")" + std::string(64, 't') + R"("})"});
}

TEST_CASE("a subclass's malformed_error and concurrent_serialize overrides are honoured",
          "[integration][subclass][serializers][malformed]")
{
    constexpr int kRecords = 600;
    // Every 10th record a KeyError (malformed by the override), every 25th a serializer bug
    // (unexpected); 10 and 25 share every 50th, which throws KeyError first.
    const auto run = [&](bool concurrent, std::size_t gate) {
        Harness h;
        auto o = h.options();
        o.queue_capacity = kRecords;
        o.serializer_threads = 4;
        DeclaringWriter w(h.executor(), o, concurrent, gate);
        w.start();
        for (int i = 0; i < kRecords; ++i) {
            Rec r = rec(i);
            r.throw_key_error = i % 10 == 0;
            r.throw_other = i % 25 == 0;
            REQUIRE(w.submit(r) == SubmitResult::accepted);
        }
        h.loop.start();
        const jsonlw::CloseReport report = close(w);
        REQUIRE(report.drained);
        CHECK(report.stats.dropped.malformed == 60);
        CHECK(report.stats.dropped.unexpected == 12);
        CHECK(report.stats.written == kRecords - 72);
        CHECK(invariant_holds(report.stats));
        CHECK(count_lines(w.file_path()) == kRecords - 72);
        INFO(h.logs.dump().substr(0, 2000));
        CHECK(h.logs.count(LogLevel::warning, "Dropped malformed test record") == 1);
        return std::make_pair(w.serialize_threads(),
                              h.logs.count(LogLevel::warning, "serializer_threads"));
    };
    SECTION("declared concurrent: serialize() runs on the I/O thread and the 3 helpers, no warning")
    {
        const auto [threads, warnings] = run(true, 4);
        CHECK(threads == 4);
        CHECK(warnings == 0);
    }
    SECTION("not declared (the default): serialize() stays on the I/O thread, one warning")
    {
        const auto [threads, warnings] = run(false, 0);
        CHECK(threads == 1);
        CHECK(warnings == 1);
    }
}

TEST_CASE("a subclass that overrides no serialize() drops every record as unexpected and says why",
          "[integration][subclass]")
{
    Harness h;
    NoSerialize w(h.executor(), h.options());
    h.start(w);
    for (int i = 0; i < 3; ++i) w.submit(rec(i));
    const jsonlw::CloseReport r = close(w);
    CHECK(r.stats.written == 0);
    CHECK(r.stats.dropped.unexpected == 3);
    CHECK(h.logs.count_any("serialize() is not overridden") == 1);
}
