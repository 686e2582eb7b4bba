// check_sink() (see jsonlw/testing/sink_conformance.hpp): each run makes a fresh sink, puts
// a FaultySink and a Probe in front of it (the probe records every call the engine makes, on
// which thread, and what the writer had counted by then), gives it a FileIo seam that watches
// what the sink writes and fsyncs, and drives it with a writer whose record i is the line
// {"conformance":i} — or directly, as the I/O thread would. The rules are then checked from
// the probe's record, the seam's and what is read back from the closed sink.
#include <jsonlw/testing/sink_conformance.hpp>

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/sinks/faulty_sink.hpp>
#include <jsonlw/sinks/sink_decorator.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>

namespace jsonlw::testing {

bool ConformanceReport::failed(std::string_view rule) const noexcept
{
    return std::any_of(failures.begin(), failures.end(),
                       [&](const ConformanceFailure& f) { return f.rule == rule; });
}

std::string ConformanceReport::to_string() const
{
    std::string out;
    for (const auto& f : failures) out += fmt::format("FAILED {}: {}\n", f.rule, f.message);
    for (const auto& s : skipped) out += fmt::format("skipped {}\n", s);
    if (out.empty()) out = fmt::format("all {} rules checked passed\n", checked.size());
    return out;
}

namespace {

using namespace std::chrono_literals;

const char* name_of(Durability d) noexcept
{
    switch (d) {
    case Durability::none: return "none";
    case Durability::fsync_batch: return "fsync_batch";
    case Durability::fsync_interval: return "fsync_interval";
    }
    return "?";
}

// The id of a line {"conformance":<id>…}, or none.
std::optional<std::uint64_t> id_of(std::string_view line) noexcept
{
    constexpr std::string_view head = "{\"conformance\":";
    if (line.substr(0, head.size()) != head) return std::nullopt;
    const char* p = line.data() + head.size();
    const char* end = line.data() + line.size();
    std::uint64_t id = 0;
    const auto [q, ec] = std::from_chars(p, end, id);
    if (ec != std::errc{} || q == end || (*q != '}' && *q != ',')) return std::nullopt;
    return id;
}

std::vector<std::uint64_t> ids_of(const Lines& lines)
{
    std::vector<std::uint64_t> ids;
    std::string_view rest = lines.bytes;
    while (!rest.empty()) {
        const std::size_t nl = std::min(rest.find('\n'), rest.size());
        if (const auto id = id_of(rest.substr(0, nl))) ids.push_back(*id);
        rest.remove_prefix(std::min(nl + 1, rest.size()));
    }
    return ids;
}

// The FileIo seam of every run: POSIX underneath; counts the opens for writing and the
// writevs, keeps the descriptors written since their last fsync, and fails one writev on
// demand.
class ObservedIo final : public FileIo {
public:
    struct Snapshot {
        std::uint64_t writevs = 0;           // that wrote something
        std::uint64_t opened_for_write = 0;  // open() calls with O_WRONLY or O_RDWR
        std::uint64_t dirty = 0;             // descriptors written since their last fsync
        std::uint64_t closed_dirty = 0;      // descriptors closed so
        std::uint64_t faults_hit = 0;        // writevs failed on purpose
        bool used() const noexcept { return writevs > 0 || opened_for_write > 0; }
    };

    int open(const char* path, int flags, mode_t mode) noexcept override
    {
        const int fd = base_->open(path, flags, mode);
        const int err = errno;
        if (fd >= 0 && (flags & (O_WRONLY | O_RDWR)) != 0) {
            std::lock_guard lk(mu_);
            ++s_.opened_for_write;
        }
        errno = err;
        return fd;
    }
    ssize_t writev(int fd, const iovec* iov, int iovcnt) noexcept override
    {
        {
            std::lock_guard lk(mu_);
            if (fail_writev_) {
                fail_writev_ = false;
                ++s_.faults_hit;
                errno = EIO;
                return -1;
            }
        }
        const ssize_t w = base_->writev(fd, iov, iovcnt);
        const int err = errno;
        if (w > 0) {
            std::lock_guard lk(mu_);
            ++s_.writevs;
            dirty_.insert(fd);
        }
        errno = err;
        return w;
    }
    ssize_t pread(int fd, void* buf, size_t count, off_t offset) noexcept override
    {
        return base_->pread(fd, buf, count, offset);
    }
    int fstat(int fd, struct stat* st) noexcept override { return base_->fstat(fd, st); }
    int stat(const char* path, struct stat* st) noexcept override { return base_->stat(path, st); }
    int ftruncate(int fd, off_t length) noexcept override { return base_->ftruncate(fd, length); }
    int fsync(int fd) noexcept override
    {
        const int r = base_->fsync(fd);
        const int err = errno;
        if (r == 0) {
            std::lock_guard lk(mu_);
            dirty_.erase(fd);
        }
        errno = err;
        return r;
    }
    int close(int fd) noexcept override
    {
        {
            std::lock_guard lk(mu_);
            if (dirty_.erase(fd) > 0) ++s_.closed_dirty;
        }
        return base_->close(fd);
    }
    int rename(const char* from, const char* to) noexcept override
    {
        return base_->rename(from, to);
    }

    void fail_next_writev()
    {
        std::lock_guard lk(mu_);
        fail_writev_ = true;
    }
    Snapshot snapshot() const
    {
        std::lock_guard lk(mu_);
        Snapshot s = s_;
        s.dirty = dirty_.size();
        return s;
    }

private:
    const std::shared_ptr<FileIo> base_ = posix_file_io();
    mutable std::mutex mu_;
    Snapshot s_;
    std::set<int> dirty_;
    bool fail_writev_ = false;
};

// One call the engine made to the sink.
struct Event {
    enum class Kind { append, sync, after_batch, reopen, tick, close, close_abandoned };
    Kind kind = Kind::append;
    std::thread::id thread;
    std::uint64_t written = 0;        // sync, after_batch: the writer's stats().written then
    std::size_t records = 0;          // append: the group's
    std::vector<std::uint64_t> ids;   // append: its lines' ids
    AppendResult result;              // append: as reported (behind the FaultySink)
    std::error_code ec;               // sync, reopen
    bool durable = false;             // close
    ObservedIo::Snapshot before, after;  // the seam around the call
};

const char* name_of(Event::Kind k) noexcept
{
    switch (k) {
    case Event::Kind::append: return "append()";
    case Event::Kind::sync: return "sync()";
    case Event::Kind::after_batch: return "after_batch()";
    case Event::Kind::reopen: return "reopen()";
    case Event::Kind::tick: return "tick()";
    case Event::Kind::close: return "close()";
    case Event::Kind::close_abandoned: return "close_abandoned()";
    }
    return "?";
}

// The outermost decorator of a writer run: records each call (one at a time, or says so).
class Probe final : public SinkDecorator {
public:
    Probe(std::shared_ptr<LineSink> inner, std::shared_ptr<ObservedIo> io)
        : SinkDecorator(std::move(inner)), io_(std::move(io))
    {
    }

    std::error_code start(const SinkContext& ctx) override
    {
        stats_ = ctx.writer_stats;
        return inner_->start(ctx);
    }
    AppendResult append(std::string_view key, const Lines& lines) noexcept override
    {
        Call c(*this, Event::Kind::append);
        c.e.records = lines.records;
        try {
            c.e.ids = ids_of(lines);
        } catch (...) {
        }
        c.e.result = inner_->append(key, lines);
        return c.e.result;
    }
    std::error_code sync() noexcept override
    {
        Call c(*this, Event::Kind::sync);
        c.e.written = written();
        c.e.ec = inner_->sync();
        return c.e.ec;
    }
    void after_batch() noexcept override
    {
        Call c(*this, Event::Kind::after_batch);
        inner_->after_batch();
        c.e.written = written();
    }
    std::error_code reopen() noexcept override
    {
        Call c(*this, Event::Kind::reopen);
        c.e.ec = inner_->reopen();
        return c.e.ec;
    }
    void tick() noexcept override
    {
        Call c(*this, Event::Kind::tick);
        inner_->tick();
    }
    void close(bool durable) noexcept override
    {
        Call c(*this, Event::Kind::close);
        c.e.durable = durable;
        inner_->close(durable);
    }
    void close_abandoned() noexcept override
    {
        Call c(*this, Event::Kind::close_abandoned);
        inner_->close_abandoned();
    }

    std::vector<Event> events() const
    {
        std::lock_guard lk(mu_);
        return events_;
    }
    bool overlapped() const noexcept { return overlapped_.load(); }

private:
    // Records one call: the seam before and after, the thread, overlap with another call.
    struct Call {
        Probe& p;
        Event e;
        Call(Probe& probe, Event::Kind kind) : p(probe)
        {
            if (p.in_call_.fetch_add(1) > 0) p.overlapped_.store(true);
            e.kind = kind;
            e.thread = std::this_thread::get_id();
            e.before = p.io_->snapshot();
        }
        ~Call()
        {
            e.after = p.io_->snapshot();
            try {
                std::lock_guard lk(p.mu_);
                p.events_.push_back(std::move(e));
            } catch (...) {
            }
            p.in_call_.fetch_sub(1);
        }
    };

    std::uint64_t written() const noexcept
    {
        try {
            return stats_ ? stats_().written : 0;
        } catch (...) {
            return 0;
        }
    }

    const std::shared_ptr<ObservedIo> io_;
    std::function<WriterStats()> stats_;
    std::atomic<int> in_call_{0};
    std::atomic<bool> overlapped_{false};
    mutable std::mutex mu_;
    std::vector<Event> events_;
};

// The writer of every run: record i is the line {"conformance":i}, every group under `key`.
class ConformanceWriter final : public JsonlRecordWriter<std::uint64_t> {
public:
    ConformanceWriter(boost::asio::any_io_executor ex, WriterOptions o, std::string key)
        : JsonlRecordWriter(std::move(ex), std::move(o)), key_(std::move(key))
    {
    }
    ~ConformanceWriter() override { shutdown(); }

protected:
    void serialize(const std::uint64_t& id, JsonLine& line) override
    {
        line.begin_object().field("conformance", id).end_object();
    }
    void write_batch(std::span<const std::uint64_t> batch) override
    {
        write_lines(key_, serialize_batch(batch));
    }

private:
    const std::string key_;
};

// A group of lines as the writer counted it (the engine's rules, from what the sink said).
struct Group {
    std::vector<std::uint64_t> ids;
    std::uint64_t records = 0, written = 0, failed = 0, unknown = 0;
};

class Checker {
public:
    Checker(const SinkFactory& make, const ConformanceOptions& opts) : make_(make), opts_(opts)
    {
        static std::atomic<unsigned> serial{0};
        const std::filesystem::path base =
            opts_.directory.empty() ? std::filesystem::temp_directory_path() : opts_.directory;
        root_ = base / fmt::format("jsonlw-conformance-{}-{}", ::getpid(), serial++);
    }
    ~Checker()
    {
        if (!opts_.keep_files) {
            std::error_code ec;
            std::filesystem::remove_all(root_, ec);
        }
    }

    ConformanceReport run()
    {
        run_direct();
        for (const Durability d : opts_.durabilities) run_writer(d, false);
        if (!opts_.durabilities.empty()) {
            const bool batch = std::find(opts_.durabilities.begin(), opts_.durabilities.end(),
                                         Durability::fsync_batch) != opts_.durabilities.end();
            run_writer(batch ? Durability::fsync_batch : opts_.durabilities.front(), true);
        }
        std::lock_guard lk(log_mu_);
        return std::move(report_);
    }

private:
    // --- the report ---
    void fail(const std::string& rule, const std::string& run, const std::string& message)
    {
        checked(rule);
        for (const auto& f : report_.failures)
            if (f.rule == rule && f.message.rfind(run, 0) == 0) return;  // once per run
        report_.failures.push_back({rule, fmt::format("{}: {}", run, message)});
    }
    void checked(const std::string& rule)
    {
        if (std::find(report_.checked.begin(), report_.checked.end(), rule) ==
            report_.checked.end())
            report_.checked.push_back(rule);
    }
    void skip(const std::string& rule, const std::string& why)
    {
        const std::string line = fmt::format("{}: {}", rule, why);
        if (std::find(report_.skipped.begin(), report_.skipped.end(), line) ==
            report_.skipped.end())
            report_.skipped.push_back(line);
    }
    LogSink log_sink()
    {
        return [this](LogLevel, std::string_view m) {
            std::lock_guard lk(log_mu_);
            if (report_.log.size() < 1000) report_.log.emplace_back(m);
        };
    }

    std::filesystem::path fresh_dir(std::string_view name)
    {
        const auto dir = root_ / fmt::format("{:02}-{}", runs_++, name);
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        return dir;
    }

    std::shared_ptr<LineSink> make_sink(const std::string& run)
    {
        try {
            auto sink = make_();
            if (!sink) fail("lifecycle.start", run, "the factory returned no sink");
            return sink;
        } catch (const std::exception& e) {
            fail("lifecycle.start", run, fmt::format("the factory threw: {}", e.what()));
        } catch (...) {
            fail("lifecycle.start", run, "the factory threw");
        }
        return nullptr;
    }

    // What the closed sink holds, or none (`why` says why).
    std::optional<std::vector<std::string>> read_back(
        LineSink& sink, const std::vector<std::filesystem::path>& files,
        const std::filesystem::path& dir, const std::string& run, std::string& why)
    {
        if (opts_.read_back) {
            try {
                return opts_.read_back(sink, files);
            } catch (const std::exception& e) {
                why = fmt::format("ConformanceOptions::read_back threw: {}", e.what());
                fail("counts.found", run, why);
                return std::nullopt;
            }
        }
        if (files.empty()) {
            why = "the sink lists no files(); give ConformanceOptions::read_back to check what "
                  "it holds";
            return std::nullopt;
        }
        std::vector<std::string> lines;
        bool any_ours = false;
        for (const auto& f : files) {
            std::ifstream in(f.is_relative() ? dir / f : f, std::ios::binary);
            for (std::string l; std::getline(in, l);) {
                any_ours = any_ours || id_of(l).has_value();
                lines.push_back(std::move(l));
            }
        }
        if (!lines.empty() && !any_ours) {
            why = "files() holds no line a writer wrote (compressed?); give "
                  "ConformanceOptions::read_back to check what it holds";
            return std::nullopt;
        }
        return lines;
    }

    // counts.found: `lines` against the groups as the writer counted them.
    void check_found(const std::vector<Group>& groups, const std::vector<std::string>& lines,
                     const std::string& run)
    {
        checked("counts.found");
        std::map<std::uint64_t, std::size_t> seen;
        for (const auto& l : lines) {
            const auto id = id_of(l);
            if (!id) {
                fail("counts.found", run,
                     fmt::format("a line read back is no record a writer wrote: '{}'",
                                 l.substr(0, 80)));
                return;
            }
            ++seen[*id];
        }
        std::set<std::uint64_t> appended;
        for (const Group& g : groups) {
            std::size_t found = 0;
            for (const std::uint64_t id : g.ids) {
                appended.insert(id);
                const auto it = seen.find(id);
                const std::size_t n = it == seen.end() ? 0 : it->second;
                if (n > 1) {
                    fail("counts.found", run,
                         fmt::format("record {} is read back {} times", id, n));
                    return;
                }
                found += n;
            }
            const std::uint64_t n = g.ids.size();
            if (g.records != n) continue;  // not one line per record: counts only
            if (found < g.written || found > g.written + g.unknown) {
                fail("counts.found", run,
                     fmt::format("a group of {} records counted {} written, {} unknown, {} "
                                 "failed: {} of them are read back",
                                 g.records, g.written, g.unknown, g.failed, found));
                return;
            }
        }
        for (const auto& [id, n] : seen)
            if (!appended.count(id)) {
                fail("counts.found", run,
                     fmt::format("record {} is read back but was never appended", id));
                return;
            }
    }

    void check_files(const std::vector<std::filesystem::path>& files,
                     const std::filesystem::path& dir, const ObservedIo::Snapshot& io,
                     const std::string& run)
    {
        checked("files.exist");
        for (const auto& f : files) {
            std::error_code ec;
            if (!std::filesystem::exists(f.is_relative() ? dir / f : f, ec)) {
                fail("files.exist", run,
                     fmt::format("files() lists {}, which does not exist after close", f.native()));
                return;
            }
        }
        if (files.empty() && io.opened_for_write > 0)
            fail("files.exist", run,
                 fmt::format("files() is empty, but the sink opened {} file(s) for writing "
                             "through SinkContext::file_io",
                             io.opened_for_write));
    }

    void check_adds_up(const AppendResult& r, std::uint64_t records, const std::string& run)
    {
        checked("counts.add_up");
        if (r.records_written + r.records_failed + r.records_unknown != records)
            fail("counts.add_up", run,
                 fmt::format("an append of {} records reported {} written, {} failed, {} "
                             "unknown",
                             records, r.records_written, r.records_failed, r.records_unknown));
    }

    void run_direct();
    void run_writer(Durability mode, bool faults);
    void check_writer_run(Durability mode, bool faults, const std::string& run,
                          const std::vector<Event>& events, const CloseReport* closed,
                          bool overlapped, std::thread::id caller, std::thread::id loop,
                          std::size_t submitted, const FaultySink::Counts& fc,
                          const ObservedIo::Snapshot& io);

    const SinkFactory& make_;
    const ConformanceOptions& opts_;
    std::filesystem::path root_;
    unsigned runs_ = 0;
    std::mutex log_mu_;  // report_.log, from the writers' threads
    ConformanceReport report_;
    std::vector<Group> groups_;  // of the run being checked
};

// The sink alone, the calling thread its I/O thread: start, a group, one OTLP-style line of
// several records, reopen, a group, sync, close twice.
void Checker::run_direct()
{
    const std::string run = "direct run";
    const auto dir = fresh_dir("direct");
    const auto sink = make_sink(run);
    if (!sink) return;
    auto io = std::make_shared<ObservedIo>();
    SinkContext ctx;
    ctx.directory = dir;
    ctx.stem = "conformance";
    ctx.subject = "conformance";
    ctx.host = "conformance-host";
    ctx.pid = ::getpid();
    ctx.durability = Durability::none;
    ctx.file_io = io;
    ctx.log = log_sink();
    ctx.writer_stats = [] { return WriterStats{}; };
    checked("lifecycle.start");
    if (const std::error_code ec = sink->start(ctx)) {
        fail("lifecycle.start", run, fmt::format("start() failed: {}", ec.message()));
        return;
    }
    std::vector<Group> groups;
    auto put = [&](std::uint64_t first, std::size_t n) {
        std::string bytes;
        Group g;
        for (std::size_t i = 0; i < n; ++i) {
            bytes += fmt::format("{{\"conformance\":{}}}\n", first + i);
            g.ids.push_back(first + i);
        }
        const AppendResult r = sink->append(opts_.key, Lines{bytes, n, 0});
        check_adds_up(r, n, run);
        checked("counts.exact");
        if (r.records_written != n)
            fail("counts.exact", run,
                 fmt::format("an append of {} records, nothing wrong, reported {} written ({})",
                             n, r.records_written, r.ec ? r.ec.message() : "no error"));
        g.records = n;
        g.written = std::min<std::uint64_t>(r.records_written, n);
        g.failed = std::min<std::uint64_t>(r.records_failed, n - g.written);
        g.unknown = n - g.written - g.failed;
        groups.push_back(std::move(g));
    };
    put(100000, 3);
    {
        // LineFormat::otlp: one line holding four records.
        const std::string line = "{\"conformance\":100003,\"log_records\":4}\n";
        const AppendResult r = sink->append(opts_.key, Lines{line, 4, 0, true});
        check_adds_up(r, 4, run);
        checked("counts.log_records");
        if (r.records_written != 4)
            fail("counts.log_records", run,
                 fmt::format("one line of Lines::log_records holding 4 records reported {} "
                             "written, {} failed, {} unknown (count lines.records, not '\\n')",
                             r.records_written, r.records_failed, r.records_unknown));
        Group g;
        g.ids = {100003};
        g.records = 4;
        g.written = std::min<std::uint64_t>(r.records_written, 4);
        groups.push_back(g);
    }
    checked("lifecycle.reopen");
    if (const std::error_code ec = sink->reopen())
        fail("lifecycle.reopen", run, fmt::format("reopen() failed: {}", ec.message()));
    put(100004, 3);
    checked("durability.sync_per_append");
    if (const std::error_code ec = sink->sync())
        fail("durability.sync_per_append", run,
             fmt::format("sync() failed with nothing wrong: {}", ec.message()));
    sink->close(true);
    std::vector<std::filesystem::path> files;
    try {
        files = sink->files();
    } catch (...) {
    }
    std::string why;
    const auto first = read_back(*sink, files, dir, run, why);
    sink->close(true);  // as the destructor may
    const auto second = read_back(*sink, files, dir, run, why);
    if (first) {
        check_found(groups, *first, run);
        checked("lifecycle.close_twice");
        if (!second || *second != *first)
            fail("lifecycle.close_twice", run,
                 "a second close() changed what is read back");
    } else {
        skip("counts.found", why);
    }
    check_files(files, dir, io->snapshot(), run);
}

void Checker::run_writer(Durability mode, bool faults)
{
    const std::string run =
        fmt::format("{} writer run under {}", faults ? "faults" : "plain", name_of(mode));
    const auto dir = fresh_dir(fmt::format("{}-{}", faults ? "faults" : "plain", name_of(mode)));
    const auto sink = make_sink(run);
    if (!sink) return;
    auto io = std::make_shared<ObservedIo>();
    auto faulty = std::make_shared<FaultySink>(sink);
    auto probe = std::make_shared<Probe>(faulty, io);

    const std::size_t batch = std::max<std::size_t>(opts_.batch_records, 2);
    // Half before start(), then up to four faulted batches, then the rest.
    const std::size_t total = std::max<std::size_t>(opts_.records, 10 * batch);
    WriterOptions o;
    o.directory = dir;
    o.stem = "conformance";
    o.subject = "conformance";
    o.queue_capacity = total + 1;
    o.batch_records = batch;
    o.durability = mode;
    o.fsync_interval = std::chrono::milliseconds(20);
    o.shutdown_timeout = opts_.timeout;
    o.log = log_sink();
    o.file_io = io;
    o.sink = probe;

    boost::asio::io_context ctx;
    auto guard = boost::asio::make_work_guard(ctx);
    std::thread loop([&] { ctx.run(); });
    const std::thread::id loop_id = loop.get_id();

    std::optional<CloseReport> closed;
    std::size_t submitted = 0;
    std::vector<std::filesystem::path> files;
    bool started = true;
    {
        ConformanceWriter w(ctx.get_executor(), o, opts_.key);
        // From the loop's thread, which the drain shares: n records reach the sink in batches
        // of batch_records, as queued before start().
        auto submit = [&](std::size_t n) {
            std::promise<void> done;
            boost::asio::post(ctx, [&] {
                for (std::size_t i = 0; i < n && submitted < total; ++i) w.submit(submitted++);
                done.set_value();
            });
            done.get_future().wait();
        };
        bool progress = true;
        // Waits for `f` (an async_flush or async_reopen future); false when it did not come.
        auto wait = [&](auto&& f, const char* what, const char* rule) {
            if (!progress) return false;
            checked("lifecycle.progress");
            if (f.wait_for(opts_.timeout) != std::future_status::ready) {
                fail("lifecycle.progress", run,
                     fmt::format("{} did not complete within {} ms", what, opts_.timeout.count()));
                progress = false;
                return false;
            }
            try {
                f.get();
            } catch (const std::exception& e) {
                fail(rule, run, fmt::format("{} failed: {}", what, e.what()));
            }
            return true;
        };
        auto flush = [&](const char* what) {
            wait(w.async_flush(boost::asio::use_future), what, "lifecycle.progress");
        };

        submit(total / 2);  // batches of exactly batch_records: queued before start()
        w.start();
        checked("lifecycle.start");
        if (!w.enabled()) {
            fail("lifecycle.start", run, "start() failed: the writer is disabled (see the log)");
            started = false;
        }
        flush("a flush of the first records");
        if (!faults) {
            checked("lifecycle.reopen");
            wait(w.async_reopen(boost::asio::use_future), "reopen()", "lifecycle.reopen");
        } else {
            faulty->fail_appends(std::make_error_code(std::errc::io_error), 1);
            submit(batch);
            flush("a flush after a failed append");
            faulty->fail_appends(std::make_error_code(std::errc::io_error), 1, batch / 2);
            submit(batch);
            flush("a flush after an append failed part-way");
            if (mode == Durability::fsync_batch) {
                faulty->fail_syncs(std::make_error_code(std::errc::io_error), 1);
                submit(batch);
                flush("a flush after a failed sync()");
            }
            if (io->snapshot().used()) {
                io->fail_next_writev();
                submit(batch);
                flush("a flush after a failed writev");
            }
        }
        submit(total);
        flush("a flush of the last records");
        if (progress) {
            auto f = w.async_close(boost::asio::use_future);
            if (f.wait_for(opts_.timeout + 2s) == std::future_status::ready) closed = f.get();
            else fail("lifecycle.progress", run, "close did not complete in time");
        }
        try {
            files = probe->files();
        } catch (...) {
        }
    }
    guard.reset();
    loop.join();
    if (!started) return;

    const auto io_end = io->snapshot();
    check_writer_run(mode, faults, run, probe->events(), closed ? &*closed : nullptr,
                     probe->overlapped(), std::this_thread::get_id(), loop_id, submitted,
                     faulty->counts(), io_end);

    std::string why;
    const auto first = read_back(*sink, files, dir, run, why);
    sink->close(mode != Durability::none);  // as the destructor may
    const auto second = read_back(*sink, files, dir, run, why);
    if (first) {
        check_found(groups_, *first, run);
        checked("lifecycle.close_twice");
        if (!second || *second != *first)
            fail("lifecycle.close_twice", run, "a second close() changed what is read back");
    } else {
        skip("counts.found", why);
    }
    check_files(files, dir, io_end, run);
}

void Checker::check_writer_run(Durability mode, bool faults, const std::string& run,
                               const std::vector<Event>& events, const CloseReport* closed,
                               bool overlapped, std::thread::id caller, std::thread::id loop,
                               std::size_t submitted, const FaultySink::Counts& fc,
                               const ObservedIo::Snapshot& io)
{
    using K = Event::Kind;
    const bool batch_mode = mode == Durability::fsync_batch;

    // The groups as the engine counts them: clamped, and under fsync_batch unknown when the
    // sync() after them failed.
    groups_.clear();
    std::uint64_t written = 0, failed = 0, unknown = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const Event& e = events[i];
        if (e.kind != K::append) continue;
        check_adds_up(e.result, e.records, run);
        Group g;
        g.ids = e.ids;
        g.records = e.records;
        g.written = std::min<std::uint64_t>(e.result.records_written, e.records);
        g.failed = std::min<std::uint64_t>(e.result.records_failed, e.records - g.written);
        g.unknown = e.records - g.written - g.failed;
        if (batch_mode && g.written > 0 && i + 1 < events.size() &&
            events[i + 1].kind == K::sync && events[i + 1].ec) {
            g.unknown += g.written;
            g.written = 0;
        }
        written += g.written;
        failed += g.failed;
        unknown += g.unknown;
        groups_.push_back(std::move(g));
    }

    checked("counts.exact");
    if (closed) {
        const WriterStats& s = closed->stats;
        if (s.written != written || s.dropped.write_error != failed || s.unknown != unknown)
            fail("counts.exact", run,
                 fmt::format("the writer counted {} written, {} write_error, {} unknown; the "
                             "sink reported {}, {}, {}",
                             s.written, s.dropped.write_error, s.unknown, written, failed,
                             unknown));
        else if (!faults && (s.written != submitted || s.dropped.total() != 0 || s.unknown != 0))
            fail("counts.exact", run,
                 fmt::format("{} records submitted, nothing wrong: {} written, {} dropped, {} "
                             "unknown",
                             submitted, s.written, s.dropped.total(), s.unknown));
    }

    // lifecycle.thread: one I/O thread, not the caller's nor the loop's, one call at a time.
    checked("lifecycle.thread");
    if (overlapped) fail("lifecycle.thread", run, "two calls reached the sink at once");
    if (!events.empty()) {
        const std::thread::id io_thread = events.front().thread;
        if (io_thread == caller || io_thread == loop)
            fail("lifecycle.thread", run, "a call reached the sink on a thread not the I/O one");
        for (const Event& e : events)
            if (e.thread != io_thread) {
                fail("lifecycle.thread", run,
                     fmt::format("{} came on another thread than the others", name_of(e.kind)));
                break;
            }
    }

    // durability.close: once, last, durable unless none, after a sync() when durable.
    checked("durability.close");
    const auto closes = std::count_if(events.begin(), events.end(),
                                      [](const Event& e) { return e.kind == K::close; });
    if (closed && closes != 1) {
        fail("durability.close", run, fmt::format("close() came {} times", closes));
    } else if (closed) {
        const Event& last = events.back();
        const bool durable = mode != Durability::none;
        if (last.kind != K::close)
            fail("durability.close", run,
                 fmt::format("{} came after close()", name_of(last.kind)));
        else if (last.durable != durable)
            fail("durability.close", run, fmt::format("close({}) under {}", last.durable,
                                                       name_of(mode)));
        else if (durable && (events.size() < 2 || events[events.size() - 2].kind != K::sync))
            fail("durability.close", run, "no sync() right before a durable close()");
        else if (durable && events[events.size() - 2].ec)
            fail("durability.close", run,
                 fmt::format("the sync() before close() failed: {}",
                             events[events.size() - 2].ec.message()));
    }

    // lifecycle.reopen: at a batch boundary, and the sink writes on (counts.exact).
    if (!faults) {
        for (std::size_t i = 0; i < events.size(); ++i) {
            if (events[i].kind != K::reopen) continue;
            if (events[i].ec)
                fail("lifecycle.reopen", run,
                     fmt::format("reopen() failed: {}", events[i].ec.message()));
            // An interval's sync() or a tick() may come between; an append may not.
            std::size_t j = i;
            while (j > 0 && (events[j - 1].kind == K::sync || events[j - 1].kind == K::tick)) --j;
            if (j > 0 && events[j - 1].kind == K::append)
                fail("lifecycle.reopen", run,
                     "reopen() came between an append() and the after_batch() of its batch");
        }
    }

    // Durability while the records are counted.
    std::uint64_t counted = 0, writevs = 0, closed_dirty = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const Event& e = events[i];
        if (batch_mode && e.kind == K::append && !faults) {
            checked("durability.sync_per_append");
            const bool wrote = std::min<std::uint64_t>(e.result.records_written, e.records) > 0;
            if (wrote && (i + 1 == events.size() || events[i + 1].kind != K::sync))
                fail("durability.sync_per_append", run,
                     fmt::format("an append that reported records written was followed by {}, "
                                 "not sync()",
                                 i + 1 == events.size() ? "nothing"
                                                        : name_of(events[i + 1].kind)));
            else if (wrote && events[i + 1].ec)
                fail("durability.sync_per_append", run,
                     fmt::format("sync() failed with nothing wrong: {}",
                                 events[i + 1].ec.message()));
            else if (wrote && events[i + 1].written != counted)
                fail("durability.sync_per_append", run,
                     "records were counted written before their sync() returned");
        }
        if (e.kind != K::after_batch) continue;
        const bool more = e.written > counted;
        if (more && !faults && io.used()) {
            if (batch_mode) {
                checked("durability.fsynced_when_counted");
                if (e.after.dirty > 0 || e.after.closed_dirty > closed_dirty)
                    fail("durability.fsynced_when_counted", run,
                         fmt::format("records were counted written while {} descriptor(s) "
                                     "written through SinkContext::file_io were not fsync'ed "
                                     "(and {} closed so): sync() must fsync what append() wrote",
                                     e.after.dirty, e.after.closed_dirty - closed_dirty));
            } else {
                checked("durability.in_os_when_counted");
                if (e.after.writevs == writevs)
                    fail("durability.in_os_when_counted", run,
                         "a batch's records were counted written, but the sink wrote nothing "
                         "through SinkContext::file_io since the batch before: bytes held in "
                         "the sink are not written");
            }
        }
        counted = e.written;
        writevs = e.after.writevs;
        closed_dirty = e.after.closed_dirty;
    }
    if (!faults && !io.used())
        skip(batch_mode ? "durability.fsynced_when_counted" : "durability.in_os_when_counted",
             "the sink wrote nothing through SinkContext::file_io, so where its bytes are is "
             "not observed (only its sync() calls are)");

    if (!faults) return;
    // The sink writes on after every fault: the last group is written whole.
    const auto last = std::find_if(groups_.rbegin(), groups_.rend(),
                                   [](const Group& g) { return g.records > 0; });
    const bool recovered = last != groups_.rend() && last->written == last->records;
    checked("fault.append");
    if (fc.appends_failed != 2)
        fail("fault.append", run,
             fmt::format("{} of the 2 failures armed in front of the sink happened",
                         fc.appends_failed));
    else if (!recovered)
        fail("fault.append", run, "the last group after the faults was not written whole");
    if (batch_mode) {
        checked("fault.sync");
        if (fc.syncs_failed != 1)
            fail("fault.sync", run, "the sync() failure armed in front of the sink never came");
        else if (!recovered)
            fail("fault.sync", run, "the last group after a failed sync() was not written whole");
    }
    if (io.faults_hit == 0) {
        skip("fault.io", "the sink made no writev through SinkContext::file_io to fail");
        return;
    }
    checked("fault.io");
    for (std::size_t i = 0; i < events.size(); ++i) {
        const Event& e = events[i];
        if (e.kind != K::append || e.after.faults_hit == e.before.faults_hit) continue;
        if (e.result.records_written >= e.records && e.after.writevs == e.before.writevs)
            fail("fault.io", run,
                 fmt::format("a writev failed (EIO) and nothing else was written, yet the sink "
                             "counted all {} records of its append written",
                             e.records));
    }
    if (!recovered)
        fail("fault.io", run, "the last group after a failed writev was not written whole");
}

}  // namespace

ConformanceReport check_sink(const SinkFactory& make, const ConformanceOptions& options)
{
    Checker c(make, options);
    return c.run();
}

}  // namespace jsonlw::testing
