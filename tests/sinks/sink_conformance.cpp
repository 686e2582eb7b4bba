// The sink contract (docs/sinks.md, "The contract"): the shipped sinks and a sink written
// from the docs pass jsonlw::testing::check_sink(), sinks that break a rule fail it by name,
// and under Durability::fsync_batch the engine itself makes what a sink wrote durable — a
// sync() after each append, the records counted written only once it succeeded.
#include <jsonlw/testing/sink_conformance.hpp>

#include "common.hpp"

#include <jsonlw/sinks/faulty_sink.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>
#include <jsonlw/sinks/sink_decorator.hpp>
#include <jsonlw/sinks/tee_sink.hpp>

#include <boost/asio/post.hpp>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>
#include <span>

using namespace jsonlw;
using namespace jsonlw_test;
using jsonlw::testing::check_sink;
using jsonlw::testing::ConformanceOptions;
using jsonlw::testing::ConformanceReport;

namespace {

// Record i is {"id":i}; every group goes to the sink under `key`.
// {"id":N}, every record under `key`.
class NumEncoder final : public RecordEncoder<int> {
public:
    explicit NumEncoder(std::string key) : key_(std::move(key)) {}
    void serialize(const int& id, JsonLine& line) override
    {
        line.begin_object().field("id", id).end_object();
    }
    void key(const int&, std::string& key) override { key += key_; }

private:
    const std::string key_;
};

class NumWriter final : public JsonlRecordWriter<int> {
public:
    NumWriter(boost::asio::any_io_executor ex, WriterOptions o, std::string key = {})
        : JsonlRecordWriter(std::move(ex), std::move(o), std::make_shared<NumEncoder>(std::move(key)))
    {
    }
};

// A sink of a user's own, as docs/sinks.md asks for one: a group's lines gathered in a buffer
// of its own and written with one writev per append through the writer's FileIo seam, no
// fsync in append() — sync() and close(durable) fsync. `Flaw` breaks one rule on purpose.
class BufferingFileSink final : public LineSink {
public:
    enum class Flaw {
        none,
        no_fsync,  // sync() says yes without fsyncing
        hold,      // keeps the bytes until close(), yet counts them written at once
    };
    explicit BufferingFileSink(Flaw flaw = Flaw::none) : flaw_(flaw) {}
    ~BufferingFileSink() override { close(false); }

    std::error_code start(const SinkContext& ctx) override
    {
        ctx_ = ctx;
        path_ = ctx.directory / (ctx.stem + ".jsonl");
        return {};
    }
    AppendResult append(std::string_view, const Lines& lines) noexcept override
    {
        AppendResult r;
        try {
            buf_.append(lines.bytes);
        } catch (...) {
            r.ec = std::make_error_code(std::errc::not_enough_memory);
            r.records_failed = lines.records;
            return r;
        }
        if (flaw_ == Flaw::hold) {
            r.records_written = lines.records;
            return r;
        }
        return write_out(lines.records);
    }
    std::error_code sync() noexcept override
    {
        if (fd_ < 0 || !dirty_ || flaw_ == Flaw::no_fsync) return {};
        if (ctx_.file_io->fsync(fd_) != 0) return {errno, std::system_category()};
        dirty_ = false;
        return {};
    }
    std::error_code reopen() noexcept override
    {
        const std::error_code ec = ctx_.durability != Durability::none ? sync() : std::error_code{};
        close_fd();
        return ec;
    }
    void close(bool durable) noexcept override
    {
        if (flaw_ == Flaw::hold && !buf_.empty()) write_out(0);
        if (durable) sync();
        close_fd();
    }
    std::vector<std::filesystem::path> files() const override
    {
        if (!created_.load()) return {};
        return {path_};
    }

private:
    // One writev of the buffer: all of it landed (written), some (unknown), none (failed).
    AppendResult write_out(std::size_t records) noexcept
    {
        AppendResult r;
        if (fd_ < 0) {
            fd_ = ctx_.file_io->open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                                     ctx_.file_mode);
            if (fd_ < 0) {
                r.ec = {errno, std::system_category()};
                r.records_failed = records;
                buf_.clear();
                return r;
            }
            created_.store(true);
        }
        r.attempted = true;
        iovec iov{buf_.data(), buf_.size()};
        const ssize_t w = ctx_.file_io->writev(fd_, &iov, 1);
        if (w != static_cast<ssize_t>(buf_.size())) {
            r.ec = w < 0 ? std::error_code(errno, std::system_category())
                         : std::make_error_code(std::errc::io_error);
            r.landed = w > 0 ? static_cast<std::uint64_t>(w) : 0;
            (w > 0 ? r.records_unknown : r.records_failed) = records;
            buf_.clear();
            close_fd();
            return r;
        }
        dirty_ = true;
        r.landed = buf_.size();
        r.records_written = records;
        buf_.clear();
        return r;
    }
    void close_fd() noexcept
    {
        if (fd_ >= 0) ctx_.file_io->close(fd_);
        fd_ = -1;
    }

    const Flaw flaw_;
    SinkContext ctx_;
    std::filesystem::path path_;
    std::string buf_;
    int fd_ = -1;
    bool dirty_ = false;
    std::atomic<bool> created_{false};
};

// Lines kept in memory; every 7th record is dropped, yet counted written.
class DroppingSink final : public LineSink {
public:
    AppendResult append(std::string_view, const Lines& lines) noexcept override
    {
        std::lock_guard lk(mu_);
        std::string_view rest = lines.bytes;
        while (!rest.empty()) {
            const std::size_t nl = std::min(rest.find('\n'), rest.size());
            if (++seen_ % 7 != 0) kept_.emplace_back(rest.substr(0, nl));
            rest.remove_prefix(std::min(nl + 1, rest.size()));
        }
        AppendResult r;
        r.attempted = true;
        r.records_written = lines.records;
        r.landed = lines.bytes.size();
        return r;
    }
    std::vector<std::string> kept() const
    {
        std::lock_guard lk(mu_);
        return kept_;
    }

private:
    mutable std::mutex mu_;
    std::vector<std::string> kept_;
    std::uint64_t seen_ = 0;
};

// Counts the '\n's of a group, not lines.records.
class NewlineCountingSink final : public LineSink {
public:
    AppendResult append(std::string_view, const Lines& lines) noexcept override
    {
        AppendResult r;
        r.attempted = true;
        r.records_written =
            static_cast<std::uint64_t>(std::count(lines.bytes.begin(), lines.bytes.end(), '\n'));
        r.landed = lines.bytes.size();
        return r;
    }
};

ConformanceOptions memory_read_back(ConformanceOptions o = {})
{
    o.read_back = [](LineSink& s, const std::vector<std::filesystem::path>&) {
        std::vector<std::string> out;
        if (auto* mem = dynamic_cast<MemorySink*>(&s))
            for (const auto& l : mem->lines()) out.push_back(l.text);
        if (auto* drop = dynamic_cast<DroppingSink*>(&s)) out = drop->kept();
        return out;
    };
    return o;
}

bool has(const std::vector<std::string>& v, std::string_view s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

// A MemorySink that never fsyncs in append(): sync() notes what the writer had counted by
// then, and can be held (a slow flush) until released; after_batch() notes the same.
class SyncWatchingSink final : public SinkDecorator {
public:
    explicit SyncWatchingSink(std::shared_ptr<LineSink> inner) : SinkDecorator(std::move(inner)) {}

    std::error_code start(const SinkContext& ctx) override
    {
        stats_ = ctx.writer_stats;
        return inner_->start(ctx);
    }
    AppendResult append(std::string_view key, const Lines& lines) noexcept override
    {
        return inner_->append(key, lines);
    }
    std::error_code sync() noexcept override
    {
        {
            std::unique_lock lk(mu_);
            at_sync_.push_back(stats_().written);
            ++entered_;
            cv_.notify_all();
            cv_.wait(lk, [&] { return !held_; });
        }
        return inner_->sync();
    }
    void after_batch() noexcept override
    {
        std::lock_guard lk(mu_);
        at_batch_.push_back(stats_().written);
    }

    void hold()
    {
        std::lock_guard lk(mu_);
        held_ = true;
    }
    void release()
    {
        std::lock_guard lk(mu_);
        held_ = false;
        cv_.notify_all();
    }
    bool wait_entered(std::size_t n)
    {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, std::chrono::seconds(20), [&] { return entered_ >= n; });
    }
    std::vector<std::uint64_t> at_sync() const
    {
        std::lock_guard lk(mu_);
        return at_sync_;
    }
    std::vector<std::uint64_t> at_batch() const
    {
        std::lock_guard lk(mu_);
        return at_batch_;
    }

private:
    std::function<WriterStats()> stats_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool held_ = false;
    std::size_t entered_ = 0;
    std::vector<std::uint64_t> at_sync_, at_batch_;
};

// A Harness and a NumWriter whose sink is `sink` (other options: the harness's, `tweak`).
struct SinkRun : Harness {
    std::unique_ptr<NumWriter> w;

    explicit SinkRun(std::shared_ptr<LineSink> sink, Durability d, std::string key = {},
                     bool seam = false)
        : Harness(with_seam)
    {
        WriterOptions o = options();
        if (!seam) o.file_io = nullptr;
        o.sink = std::move(sink);
        o.durability = d;
        o.batch_records = 8;
        o.queue_capacity = 4096;
        w = std::make_unique<NumWriter>(executor(), o, std::move(key));
    }
    // Records [from, from + n) queued before the drain first runs: batches of exactly 8.
    void queue_then_start(int from, int n)
    {
        for (int i = from; i < from + n; ++i) REQUIRE(w->submit(i) == SubmitResult::accepted);
        w->start();
        loop.start();
        flush(*w);
    }
    // Records [from, from + n) submitted from the loop's thread, which the drain shares: in
    // one batch (n <= 8).
    void write(int from, int n)
    {
        std::promise<bool> done;
        boost::asio::post(loop.executor(), [&] {
            bool all = true;
            for (int i = from; i < from + n; ++i)
                all = w->submit(i) == SubmitResult::accepted && all;
            done.set_value(all);
        });
        REQUIRE(get_within(done.get_future()));
        flush(*w);
    }
};

}  // namespace

// --- The conformance check passes for the shipped sinks and a sink written from the docs ---

TEST_CASE("A FileSink passes the sink conformance check under every durability, faults included",
          "[sinks][conformance]")
{
    const ConformanceReport r = check_sink([] { return std::make_shared<FileSink>(); });
    INFO(r.to_string());
    CHECK(r.ok());
    for (const char* rule : {"counts.exact", "counts.found", "counts.log_records", "fault.append",
                             "fault.sync", "fault.io", "durability.sync_per_append",
                             "durability.fsynced_when_counted", "durability.in_os_when_counted",
                             "durability.close", "lifecycle.thread", "lifecycle.reopen",
                             "lifecycle.close_twice", "files.exist"}) {
        INFO(rule);
        CHECK(has(r.checked, rule));
    }
    CHECK(r.skipped.empty());
}

TEST_CASE("A rotating FileSink under an open suffix passes the sink conformance check",
          "[sinks][conformance]")
{
    const ConformanceReport r = check_sink([] {
        return std::make_shared<FileSink>(FileSinkOptions{.rotation = {.rotate_bytes = 300}});
    });
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(r.skipped.empty());
}

TEST_CASE("A PartitionedFileSink, given a key, passes the sink conformance check",
          "[sinks][conformance]")
{
    ConformanceOptions o;
    o.key = "conformance/part.jsonl";
    const ConformanceReport r =
        check_sink([] { return std::make_shared<PartitionedFileSink>(); }, o);
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(r.skipped.empty());
}

TEST_CASE("A MemorySink passes the sink conformance check; what a sink without files holds is "
          "read back through read_back",
          "[sinks][conformance]")
{
    const ConformanceReport r =
        check_sink([] { return std::make_shared<MemorySink>(); }, memory_read_back());
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(has(r.checked, "counts.found"));
    // Nothing goes through SinkContext::file_io: where its bytes are is not observed.
    CHECK(r.skipped.size() == 3);

    // Without read_back, counts.found is skipped and says why.
    const ConformanceReport bare = check_sink([] { return std::make_shared<MemorySink>(); });
    CHECK(bare.ok());
    CHECK_FALSE(has(bare.checked, "counts.found"));
    CHECK(bare.to_string().find("skipped counts.found: the sink lists no files()") !=
          std::string::npos);
}

TEST_CASE("A buffering sink that fsyncs only in sync() and close() passes the sink conformance "
          "check",
          "[sinks][conformance]")
{
    const ConformanceReport r = check_sink([] { return std::make_shared<BufferingFileSink>(); });
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(r.skipped.empty());
}

// --- ... and fails, naming the rule, for sinks that break one ---

TEST_CASE("The conformance check fails a sink that counts written records it dropped",
          "[sinks][conformance]")
{
    const ConformanceReport r =
        check_sink([] { return std::make_shared<DroppingSink>(); }, memory_read_back());
    INFO(r.to_string());
    CHECK_FALSE(r.ok());
    CHECK(r.failed("counts.found"));
    CHECK(r.to_string().find("FAILED counts.found: direct run: a group of 3 records counted 3 "
                             "written, 0 unknown, 0 failed: 2 of them are read back") !=
          std::string::npos);
}

TEST_CASE("The conformance check fails a sink whose sync() does not fsync what append() wrote",
          "[sinks][conformance]")
{
    const ConformanceReport r = check_sink(
        [] { return std::make_shared<BufferingFileSink>(BufferingFileSink::Flaw::no_fsync); });
    INFO(r.to_string());
    CHECK(r.failed("durability.fsynced_when_counted"));
    CHECK_FALSE(r.failed("counts.found"));  // every line is there: only not durable
    for (const auto& f : r.failures) CHECK(f.rule == "durability.fsynced_when_counted");
}

TEST_CASE("The conformance check fails a sink that holds records across batches yet counts them "
          "written",
          "[sinks][conformance]")
{
    const ConformanceReport r = check_sink(
        [] { return std::make_shared<BufferingFileSink>(BufferingFileSink::Flaw::hold); });
    INFO(r.to_string());
    CHECK(r.failed("durability.in_os_when_counted"));
}

TEST_CASE("The conformance check fails a sink that counts an OTLP line as one record",
          "[sinks][conformance]")
{
    const ConformanceReport r = check_sink([] { return std::make_shared<NewlineCountingSink>(); });
    INFO(r.to_string());
    CHECK(r.failed("counts.log_records"));
    CHECK(r.failed("counts.add_up"));
}

TEST_CASE("The conformance check fails a sink whose start() fails, and goes on with the next run",
          "[sinks][conformance]")
{
    struct Refusing final : LineSink {
        std::error_code start(const SinkContext&) override
        {
            return std::make_error_code(std::errc::permission_denied);
        }
        AppendResult append(std::string_view, const Lines&) noexcept override { return {}; }
    };
    const ConformanceReport r = check_sink([] { return std::make_shared<Refusing>(); });
    CHECK(r.failed("lifecycle.start"));
    CHECK(std::count_if(r.failures.begin(), r.failures.end(), [](const auto& f) {
              return f.rule == "lifecycle.start";
          }) == 5);  // the direct run, three plain writer runs, the faults run
}

// --- Durability is the engine's: sync() after each append, written only after it ---

TEST_CASE("Under fsync_batch a sink that does not fsync in append() gets sync() after each batch, "
          "and its records count written only once sync() returned",
          "[sinks][durability][conformance]")
{
    auto mem = std::make_shared<MemorySink>();
    auto watch = std::make_shared<SyncWatchingSink>(mem);
    SinkRun run(watch, Durability::fsync_batch);
    run.queue_then_start(0, 20);  // batches of 8, 8, 4
    CHECK(mem->syncs() == 3);
    CHECK(watch->at_sync() == std::vector<std::uint64_t>{0, 8, 16});
    CHECK(watch->at_batch() == std::vector<std::uint64_t>{8, 16, 20});

    SECTION("while its sync() has not returned, the batch's records are pending, not written")
    {
        watch->hold();
        for (int i = 20; i < 25; ++i) REQUIRE(run.w->submit(i) == SubmitResult::accepted);
        REQUIRE(watch->wait_entered(4));
        CHECK(mem->lines().size() == 25);  // appended, not yet durable
        WriterStats s = run.w->stats();
        INFO("stats: " << s);
        CHECK(s.written == 20);
        CHECK(s.pending == 5);
        CHECK(invariant_holds(s));
        watch->release();
        flush(*run.w);
        s = run.w->stats();
        CHECK(s.written == 25);
        CHECK(s.pending == 0);
    }
    SECTION("close syncs once more, then closes durably")
    {
        const CloseReport report = close(*run.w);
        CHECK(report.stats.written == 20);
        CHECK(mem->syncs() == 4);
        CHECK(mem->closed());
    }
}

TEST_CASE("Under fsync_batch a sink whose sync() fails has exactly that batch counted unknown, "
          "is logged once, and the next batch counts written",
          "[sinks][durability][faults][conformance]")
{
    auto mem = std::make_shared<MemorySink>();
    auto faulty = std::make_shared<FaultySink>(mem);
    SinkRun run(faulty, Durability::fsync_batch);
    run.queue_then_start(0, 8);
    faulty->fail_syncs(std::make_error_code(std::errc::io_error), 1);
    run.write(8, 5);
    WriterStats s = run.w->stats();
    INFO("stats: " << s);
    CHECK(s.written == 8);
    CHECK(s.unknown == 5);  // in the sink, durability not known
    CHECK(s.dropped.write_error == 0);
    CHECK(s.batches == 1);
    CHECK(invariant_holds(s));
    CHECK(mem->lines().size() == 13);
    INFO(run.logs.dump());
    CHECK(run.logs.count(LogLevel::warning, "Failed to fsync test JSONL: Input/output error") == 1);
    CHECK(run.logs.count(LogLevel::warning) == 1);

    run.write(13, 3);
    s = run.w->stats();
    CHECK(s.written == 11);
    CHECK(s.unknown == 5);
    CHECK(faulty->counts().syncs_failed == 1);
    CHECK(faulty->counts().syncs == 3);
}

TEST_CASE("Under fsync_interval and none a failed sync() costs no record: it is only logged",
          "[sinks][durability][faults][conformance]")
{
    auto mem = std::make_shared<MemorySink>();
    auto faulty = std::make_shared<FaultySink>(mem);
    SinkRun run(faulty, Durability::fsync_interval);
    run.queue_then_start(0, 8);
    faulty->fail_syncs(std::make_error_code(std::errc::io_error), 1);
    const CloseReport report = close(*run.w);
    CHECK(report.stats.written == 8);
    CHECK(report.stats.unknown == 0);
    CHECK(faulty->counts().syncs_failed == 1);
    CHECK(run.logs.count(LogLevel::warning, "Failed to fsync test JSONL") == 1);
}

TEST_CASE("A FaultySink fails appends whole or part-way, and the writer counts exactly that",
          "[sinks][faults][conformance]")
{
    auto mem = std::make_shared<MemorySink>();
    auto faulty = std::make_shared<FaultySink>(mem);
    SinkRun run(faulty, Durability::none);
    faulty->fail_appends(std::make_error_code(std::errc::no_space_on_device), 1);
    run.queue_then_start(0, 8);
    CHECK(run.w->stats().dropped.write_error == 8);
    CHECK(mem->appends() == 0);  // it never reached the sink

    faulty->fail_appends(std::make_error_code(std::errc::no_space_on_device), 1, 3);
    run.write(8, 8);
    WriterStats s = run.w->stats();
    INFO("stats: " << s);
    CHECK(s.written == 3);
    CHECK(s.dropped.write_error == 13);
    CHECK(mem->lines().size() == 3);
    CHECK(mem->lines().front().text == "{\"id\":8}");
    CHECK(run.logs.count(LogLevel::warning, "No space left on device") == 1);  // then every 1000th

    run.write(16, 4);
    CHECK(run.w->stats().written == 7);
    const FaultySink::Counts c = faulty->counts();
    CHECK(c.appends == 3);
    CHECK(c.appends_failed == 2);
    CHECK(c.records_failed == 13);
}

TEST_CASE("Under fsync_batch the decorators the engine puts in front of a sink (the chain, OTLP) "
          "pass each sync() on, and its records are one OTLP line per batch, all counted",
          "[sinks][durability][conformance]")
{
    auto mem = std::make_shared<MemorySink>();
    auto watch = std::make_shared<SyncWatchingSink>(mem);
    SinkRun run(watch, Durability::fsync_batch);
    WriterOptions o = run.w->options();
    o.chain = ChainMode::sha256;
    o.format = LineFormat::otlp;
    run.w = std::make_unique<NumWriter>(run.executor(), o);
    run.queue_then_start(0, 20);
    const WriterStats s = run.w->stats();
    INFO("stats: " << s);
    CHECK(s.written == 20);
    CHECK(mem->lines().size() == 3);  // one LogsData line per batch of 8, 8, 4
    CHECK(mem->syncs() == 3);
    CHECK(watch->at_sync() == std::vector<std::uint64_t>{0, 8, 16});
}

// --- The file sinks keep their own fsync: one per batch and file, never two ---

TEST_CASE("Under fsync_batch a FileSink is fsync'ed exactly once per batch: the engine's sync() "
          "finds nothing left",
          "[sinks][durability][conformance]")
{
    SinkRun run(std::make_shared<FileSink>(), Durability::fsync_batch, {}, true);
    run.queue_then_start(0, 100);  // 12 x 8 + 4
    WriterStats s = run.w->stats();
    CHECK(s.written == 100);
    CHECK(s.batches == 13);
    CHECK(run.seam->fsync_count() == 13);
    const CloseReport report = close(*run.w);
    CHECK(report.stats.written == 100);
    CHECK(run.seam->fsync_count() == 13);  // close: nothing unsynced
}

TEST_CASE("Under fsync_batch a PartitionedFileSink is fsync'ed exactly once per file appended",
          "[sinks][durability][conformance]")
{
    SinkRun run(std::make_shared<PartitionedFileSink>(), Durability::fsync_batch,
                "2026-01-01T00/part.jsonl", true);
    run.queue_then_start(0, 20);
    CHECK(run.w->stats().written == 20);
    CHECK(run.seam->fsync_count() == 3);
    CHECK(count_lines(run.dir.path() / "2026-01-01T00/part.jsonl") == 20);
}

TEST_CASE("A tee's second branch whose sync() fails under fsync_batch costs the writer nothing: "
          "its own counts say unknown",
          "[sinks][durability][faults][conformance]")
{
    auto first = std::make_shared<MemorySink>();
    auto second = std::make_shared<MemorySink>();
    auto faulty = std::make_shared<FaultySink>(second);
    auto tee = std::make_shared<TeeSink>(std::vector<std::shared_ptr<LineSink>>{first, faulty});
    SinkRun run(tee, Durability::fsync_batch);
    faulty->fail_syncs(std::make_error_code(std::errc::io_error), 1);
    run.queue_then_start(0, 8);
    run.write(8, 8);
    const WriterStats s = run.w->stats();
    CHECK(s.written == 16);
    CHECK(s.unknown == 0);
    const TeeSink::BranchCounts a = tee->branch(0), b = tee->branch(1);
    CHECK(a.written == 16);
    CHECK(a.sync_failures == 0);
    CHECK(b.written == 8);
    CHECK(b.unknown == 8);
    CHECK(b.sync_failures == 1);
    CHECK(first->syncs() == 2);
}
