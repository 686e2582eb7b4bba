// The drain, the I/O thread, accounting, logs, flush and close of every JsonlRecordWriter.
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/error.hpp>

#include "file_append.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace jsonlw::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

// Logged at the first occurrence, then every 1000th.
bool log_worthy(std::uint64_t nth) noexcept { return nth == 1 || nth % 1000 == 0; }

std::string host_name()
{
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

std::string utc_stamp(std::time_t now = std::time(nullptr))
{
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

// The envelope's generation: the writer's start time in microseconds since the Unix epoch,
// made strictly increasing within the process so two writers never share an id.
std::uint64_t next_generation() noexcept
{
    static std::atomic<std::uint64_t> last{0};
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
    std::uint64_t prev = last.load(std::memory_order_relaxed);
    for (;;) {
        const std::uint64_t next = std::max(now, prev + 1);
        if (last.compare_exchange_weak(prev, next, std::memory_order_relaxed)) return next;
    }
}

// Batches the I/O thread writes per hop before returning to the strand (which completes
// flushes): bounds flush latency without a hop per batch under load.
constexpr int batches_per_hop = 16;

// How long the drain keeps polling an empty queue (every idle_poll) before it parks.
constexpr std::chrono::milliseconds park_after{50};

// The memory of the wake-up a producer posts: one slot owned by the writer, so a wake-up
// allocates nothing on the producer's thread. A second wake-up while the first is still
// queued (rare: the drain re-parked before the first ran) falls back to the heap.
struct WakeArena {
    alignas(std::max_align_t) unsigned char slot[256];
    std::atomic<bool> busy{false};

    void* allocate(std::size_t n)
    {
        if (n <= sizeof slot && !busy.exchange(true, std::memory_order_acquire)) return slot;
        return ::operator new(n);
    }
    void deallocate(void* p) noexcept
    {
        if (p == slot) busy.store(false, std::memory_order_release);
        else ::operator delete(p);
    }
};

template <class T>
struct WakeAllocator {
    using value_type = T;
    WakeArena* arena;
    explicit WakeAllocator(WakeArena* a) noexcept : arena(a) {}
    template <class U>
    WakeAllocator(const WakeAllocator<U>& o) noexcept : arena(o.arena)
    {
    }
    T* allocate(std::size_t n) { return static_cast<T*>(arena->allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) noexcept { arena->deallocate(p); }
    template <class U>
    bool operator==(const WakeAllocator<U>& o) const noexcept
    {
        return arena == o.arena;
    }
};

}  // namespace

struct WriterCore::Impl {
    // What one batch's serialize_batch()/append() calls resolved (I/O thread).
    struct Tally {
        std::uint64_t written = 0, malformed = 0, unexpected = 0, write_error = 0, unknown = 0;
        std::uint64_t sanitized = 0, bytes = 0, batches = 0;
        std::uint64_t resolved() const noexcept
        {
            return written + malformed + unexpected + write_error + unknown;
        }
    };

    explicit Impl(WriterCore& core)
        : self(core),
          strand(asio::make_strand(core.ex_)),
          wake_timer(strand),
          close_timer(strand),
          appender(core.opts_.file_io, 64, core.opts_.file_mode),
          poll_wake_records(std::clamp<std::uint64_t>(core.opts_.queue_capacity / 4, 1,
                                                      std::max<std::size_t>(core.opts_.batch_records, 1)))
    {
        // A wake-up posted straight to an io_context's executor can use the writer's own
        // memory; through the type-erased executor Asio allocates (twice) off its threads.
        if (const auto* io = core.ex_.target<asio::io_context::executor_type>()) loop_ex = *io;
        if (core.opts_.io_executor) {
            io_ex = *core.opts_.io_executor;
        } else {
            own_io.emplace(1);
            io_ex = own_io->get_executor();
            // Named after the writer's stem ("jsonlw:perf_met"), for top -H and perf sched.
            std::string name = "jsonlw:" + core.opts_.stem;
            name.resize(std::min<std::size_t>(name.size(), 15));
            asio::post(io_ex, [name] { pthread_setname_np(pthread_self(), name.c_str()); });
        }
    }

    ~Impl()
    {
        if (own_io) {
            own_io->stop();
            own_io->join();
        }
        // No I/O task runs any more (each keeps the core alive): a writer destroyed without
        // async_close(), or whose close timed out, still gives its file its final name.
        appender.close_all();
        seal_main(false);
    }

    void log(LogLevel level, std::string_view msg) const noexcept
    {
        try {
            if (self.opts_.log) self.opts_.log(level, msg);
            else log_to_stderr(level, msg);
        } catch (...) {
            // A throwing log sink must not cost records or the drain.
        }
    }

    // --- hooks guard: the typed writer may be destroyed while the core lives on ---
    // Shared with I/O tasks so that a task can leave() after handing its completion to the
    // strand, when the core itself may already be gone.
    struct Life {
        std::atomic<int> active{0};
        std::atomic<bool> detaching{false};
        bool enter() noexcept
        {
            active.fetch_add(1, std::memory_order_seq_cst);
            if (detaching.load(std::memory_order_seq_cst)) {
                leave();
                return false;
            }
            return true;
        }
        void leave() noexcept
        {
            if (active.fetch_sub(1, std::memory_order_seq_cst) == 1) active.notify_all();
        }
    };
    bool enter() noexcept { return life->enter(); }
    void leave() noexcept { life->leave(); }

    // --- hops between the strand and the I/O thread ---
    enum class IoTask { step, finalize, sync, idle, reopen, rotate_age };

    void run_io_task(IoTask task) noexcept
    {
        switch (task) {
        case IoTask::step:
            io_step();
            fsync_due_io = self.opts_.durability == Durability::fsync_interval && unsynced
                               ? std::optional<clock::time_point>(last_sync + self.opts_.fsync_interval)
                               : std::nullopt;
            break;
        case IoTask::finalize: finalize_io(); break;
        case IoTask::sync: sync_now(); break;
        case IoTask::idle:
            if (Guard g{*this}) self.hooks_->idle_io();
            break;
        case IoTask::reopen: reopen_io(); break;
        case IoTask::rotate_age:
            if (main.created && main_rotating && self.opts_.rotate_interval.count() > 0 &&
                clock::now() - main.opened >= self.opts_.rotate_interval)
                rotate_main();
            break;
        }
        rotate_due_io = main_rotating && main.created && self.opts_.rotate_interval.count() > 0
                            ? std::optional<clock::time_point>(main.opened + self.opts_.rotate_interval)
                            : std::nullopt;
    }

    // co_await on_io(task): runs the task on the I/O thread and resumes on the strand. The
    // task holds the life guard until its completion is posted, so once shutdown() has seen
    // no task active, the I/O thread never touches the user's executor again (the user may
    // destroy its io_context right after destroying the writer).
    auto on_io(IoTask task)
    {
        return asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
            [this, task](auto handler) {
                if (!enter()) {  // the writer is gone: skip the task
                    asio::post(strand, std::move(handler));
                    return;
                }
                asio::post(io_ex, [this, task, l = life, h = std::move(handler)]() mutable {
                    run_io_task(task);
                    asio::post(strand, std::move(h));
                    l->leave();  // touches only the shared Life: the core may be gone now
                });
            },
            asio::use_awaitable);
    }
    struct Guard {
        Impl& d;
        bool ok;
        explicit Guard(Impl& i) noexcept : d(i), ok(i.enter()) {}
        ~Guard()
        {
            if (ok) d.leave();
        }
        explicit operator bool() const noexcept { return ok; }
    };

    // --- consumer lock: the pop phase of a batch vs. close's discard ---
    void lock_consumer() noexcept
    {
        while (consumer_lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
    }
    void unlock_consumer() noexcept { consumer_lock.clear(std::memory_order_release); }

    // --- I/O thread ---
    void io_step() noexcept
    {
        Guard g(*this);
        if (!g) return;
        const auto& o = self.opts_;
        for (int i = 0; i < batches_per_hop; ++i) {
            std::size_t n = 0;
            lock_consumer();
            if (!abandoned.load(std::memory_order_acquire)) {
                n = self.hooks_->pop_batch(o.batch_records, o.batch_bytes);
                inflight.store(n, std::memory_order_release);
                batch_state.store(0, std::memory_order_release);
            }
            unlock_consumer();
            if (n == 0) break;
            notify_space();
            tally = Tally{};
            self.hooks_->write_staged();
            publish(n);
            if (n < o.batch_records || life->detaching.load(std::memory_order_relaxed) ||
                yield_hop.load(std::memory_order_relaxed))
                break;
        }
        log_queue_drops();
        if (o.durability == Durability::fsync_interval && unsynced &&
            clock::now() - last_sync >= o.fsync_interval)
            sync_now();
    }

    void publish(std::size_t n) noexcept
    {
        int in_flight = 0;
        if (!batch_state.compare_exchange_strong(in_flight, 1, std::memory_order_acq_rel)) {
            return;  // close gave up on this batch and counted it as unknown
        }
        std::uint64_t resolved = tally.resolved();
        if (resolved < n) {
            const std::uint64_t missing = n - resolved;
            tally.unexpected += missing;
            log(LogLevel::error,
                fmt::format("write_batch() left {} of {} {} records without an append; "
                            "counted as unexpected",
                            missing, n, self.opts_.subject));
        } else if (resolved > n) {
            // Keep the invariant: a record is counted once, whatever the override did.
            std::uint64_t excess = resolved - n;
            log(LogLevel::error,
                fmt::format("write_batch() accounted {} {} records for a batch of {}",
                            resolved, self.opts_.subject, n));
            for (std::uint64_t* c : {&tally.written, &tally.write_error, &tally.unknown,
                                     &tally.malformed, &tally.unexpected}) {
                const std::uint64_t take = std::min(*c, excess);
                *c -= take;
                excess -= take;
            }
        }
        written.fetch_add(tally.written, std::memory_order_release);
        malformed.fetch_add(tally.malformed, std::memory_order_release);
        unexpected.fetch_add(tally.unexpected, std::memory_order_release);
        write_error.fetch_add(tally.write_error, std::memory_order_release);
        unknown.fetch_add(tally.unknown, std::memory_order_release);
        sanitized.fetch_add(tally.sanitized, std::memory_order_relaxed);
        bytes.fetch_add(tally.bytes, std::memory_order_relaxed);
        batches.fetch_add(tally.batches, std::memory_order_relaxed);
        inflight.store(0, std::memory_order_release);
    }

    AppendResult append(const std::filesystem::path& path, const Lines& lines) noexcept
    {
        if (lines.records == 0 && lines.bytes.empty()) return {};
        AppendResult r;
        try {
            r = appender.append(path, lines.bytes,
                                self.opts_.durability == Durability::fsync_batch);
        } catch (const std::exception& e) {
            // The lines are write errors; the exception is logged like any unexpected one.
            tally.write_error += lines.records;
            log_unexpected(Stage::write, e.what());
            r.ec = std::make_error_code(std::errc::io_error);
            r.records_failed = lines.records;
            return r;
        }
        if (r.ec) {
            // Lines any of whose bytes landed may be in the file (or torn): unknown. The
            // rest never reached it: write_error.
            r.records_unknown = std::min<std::uint64_t>(lines_touched(lines.bytes, r.landed),
                                                        lines.records);
            r.records_failed = lines.records - r.records_unknown;
            tally.unknown += r.records_unknown;
            tally.write_error += r.records_failed;
            if (log_worthy(++write_failures))
                log(LogLevel::warning, fmt::format("Failed to write {} JSONL: {} ({})",
                                                   self.opts_.subject, r.ec.message(),
                                                   path.native()));
            return r;
        }
        r.records_written = lines.records;
        tally.written += lines.records;
        tally.sanitized += lines.sanitized;
        tally.bytes += lines.bytes.size();
        ++tally.batches;
        if (self.opts_.durability == Durability::fsync_interval && !unsynced) {
            unsynced = true;
            if (last_sync == clock::time_point{}) last_sync = clock::now();
        }
        return r;
    }

    AppendResult settle(const Lines& lines, std::uint64_t delivered, std::uint64_t failed,
                        std::uint64_t delivered_bytes) noexcept
    {
        AppendResult r;
        r.attempted = true;
        delivered = std::min(delivered, lines.records);
        failed = std::min(failed, lines.records - delivered);
        r.records_written = delivered;
        r.records_failed = failed;
        r.records_unknown = lines.records - delivered - failed;
        tally.written += r.records_written;
        tally.write_error += r.records_failed;
        tally.unknown += r.records_unknown;
        if (delivered > 0) {
            ++tally.batches;
            tally.bytes += delivered_bytes;
            // Which lines were sanitized is known only for the whole group.
            if (delivered == lines.records) tally.sanitized += lines.sanitized;
        }
        r.landed = delivered_bytes;
        if (delivered < lines.records) r.ec = std::make_error_code(std::errc::io_error);
        return r;
    }

    static std::uint64_t lines_touched(std::string_view bytes, std::uint64_t landed) noexcept
    {
        if (landed == 0) return 0;
        const std::string_view head = bytes.substr(0, static_cast<std::size_t>(landed));
        std::uint64_t n = static_cast<std::uint64_t>(std::count(head.begin(), head.end(), '\n'));
        if (head.back() != '\n') ++n;  // a line cut short
        return n;
    }

    void sync_now() noexcept
    {
        const std::error_code ec = appender.sync_all();
        last_sync = clock::now();
        unsynced = false;
        if (ec && log_worthy(++sync_failures))
            log(LogLevel::warning,
                fmt::format("Failed to fsync {} JSONL: {}", self.opts_.subject, ec.message()));
    }

    void on_malformed(std::string_view what) noexcept
    {
        ++tally.malformed;
        if (log_worthy(++malformed_seen))
            log(LogLevel::warning,
                fmt::format("Dropped malformed {} record: {}", self.opts_.subject, what));
    }

    void on_unexpected(Stage stage, std::string_view what) noexcept
    {
        ++tally.unexpected;
        log_unexpected(stage, what);
    }

    void log_unexpected(Stage stage, std::string_view what) noexcept
    {
        std::uint64_t& seen = stage == Stage::serialize ? unexpected_serialize : unexpected_write;
        if (log_worthy(++seen))
            log(LogLevel::error,
                fmt::format("Unexpected error {} {} record ({} so far): {}",
                            stage == Stage::serialize ? "serializing" : "writing",
                            self.opts_.subject, seen, what));
    }

    // "Dropped N <subject> records" for every N in (logged, now] that is 1 or a multiple of
    // 1000: the same lines a synchronous logger would print, without a log call on submit.
    void log_queue_drops() noexcept
    {
        const std::uint64_t now = queue_full.load(std::memory_order_acquire);
        while (queue_full_logged < now) {
            const std::uint64_t next =
                queue_full_logged == 0 ? 1 : (queue_full_logged / 1000 + 1) * 1000;
            if (next > now) {
                queue_full_logged = now;
                break;
            }
            log(LogLevel::warning,
                fmt::format("Dropped {} {} records", next, self.opts_.subject));
            queue_full_logged = next;
        }
    }

    void finalize_io() noexcept
    {
        if (Guard g{*this}) {
            tally = Tally{};
            self.hooks_->closing_io();
            // An on_close() that failed costs no record (none is in flight): log only.
        }
        log_queue_drops();
        if (self.opts_.durability != Durability::none) sync_now();
        appender.close_all();
        seal_main(self.opts_.durability != Durability::none);
    }

    // --- the default layout's file: rotation and the open suffix (I/O thread) ---
    struct MainFile {
        std::uint64_t index = 0;
        std::filesystem::path final_path, open_path;
        bool created = false;  // an append opened it: it exists on disk
        bool sealed = false;   // closed for good (close, or the writer's end)
        std::uint64_t size = 0;
        clock::time_point opened{};
    };

    // Names file `index`, opened at `when`: <stem>-<host>-<pid>-<UTC>-<index>.jsonl.
    void name_main(std::uint64_t index, std::time_t when)
    {
        main.index = index;
        main.final_path = self.opts_.directory / fmt::format("{}{}-{:06}.jsonl", main_prefix,
                                                             utc_stamp(when), index);
        main.open_path = main.final_path;
        main.open_path += open_suffix;
        main.created = false;
        main.size = 0;
    }

    void list_file(const std::filesystem::path& p, bool replace_last)
    {
        std::lock_guard lk(files_mu);
        if (replace_last && !file_list.empty()) file_list.back() = p;
        else file_list.push_back(p);
    }

    // Closes the current file (fsync first when durable) and renames it to its final name.
    std::error_code close_main(bool durable) noexcept
    {
        std::error_code ec;
        try {
            if (const std::error_code s = appender.close(main.open_path, durable); s)
                log(LogLevel::warning, fmt::format("Failed to fsync {} JSONL: {} ({})",
                                                   self.opts_.subject, s.message(),
                                                   main.open_path.native()));
            if (open_suffix.empty()) return ec;
            const std::shared_ptr<FileIo>& io = file_io;
            if (io->rename(main.open_path.c_str(), main.final_path.c_str()) != 0) {
                ec = {errno, std::system_category()};
                log(LogLevel::warning,
                    fmt::format("Failed to rename {} JSONL file {}: {}; its records stay there",
                                self.opts_.subject, main.open_path.native(), ec.message()));
                return ec;
            }
            list_file(main.final_path, true);
            if (durable) {
                // The rename itself survives a crash once the directory is synced.
                const int dir = io->open(self.opts_.directory.c_str(),
                                         O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
                if (dir >= 0) {
                    io->fsync(dir);
                    io->close(dir);
                }
            }
        } catch (const std::exception& e) {
            log_unexpected(Stage::write, e.what());
            ec = std::make_error_code(std::errc::io_error);
        }
        return ec;
    }

    std::error_code rotate_main() noexcept
    {
        if (!main.created || appender.inherited_by_fork()) return {};
        const std::error_code ec = close_main(self.opts_.durability != Durability::none);
        files_closed.fetch_add(1, std::memory_order_relaxed);
        try {
            name_main(main.index + 1, std::time(nullptr));
        } catch (...) {
            // Only an allocation can fail here; the next append retries the same name.
        }
        return ec;
    }

    void seal_main(bool durable) noexcept
    {
        // A forked child's copy of the writer must not rename the parent's file under it.
        if (!main_rotating || main.sealed || appender.inherited_by_fork()) return;
        main.sealed = true;
        if (main.created) close_main(durable);
    }

    // Files of this stem and host still carrying the open suffix, left by a process that no
    // longer runs (a crash, a kill -9): renamed to their final name so they get shipped.
    // A torn last line stays as it is (the loader's error, or `jsonlw validate`, shows it).
    void seal_stale() noexcept
    {
        if (open_suffix.empty()) return;
        const std::string head = fmt::format("{}-{}-", self.opts_.stem, host_name());
        const std::string tail = ".jsonl" + open_suffix;
        std::size_t sealed = 0;
        std::error_code ec;
        for (std::filesystem::directory_iterator it(self.opts_.directory, ec), end; !ec && it != end;
             it.increment(ec)) {
            const std::string name = it->path().filename().string();
            if (name.size() <= head.size() + tail.size() || name.compare(0, head.size(), head) != 0 ||
                name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
                continue;
            // <head><pid>-…: the pid of the writer that opened it.
            pid_t pid = 0;
            std::size_t i = head.size();
            for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && pid < 4194304; ++i)
                pid = pid * 10 + (name[i] - '0');
            if (i == head.size() || i >= name.size() || name[i] != '-' || pid <= 0) continue;
            if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive
            std::filesystem::path final_path = it->path();
            final_path.replace_filename(name.substr(0, name.size() - open_suffix.size()));
            if (file_io->rename(it->path().c_str(), final_path.c_str()) == 0) ++sealed;
        }
        if (sealed > 0)
            log(LogLevel::info,
                fmt::format("Renamed {} {} JSONL file(s) left open by ended processes to .jsonl",
                            sealed, self.opts_.subject));
    }

    void reopen_io() noexcept
    {
        reopen_ec = {};
        if (!reopen_requested.exchange(false, std::memory_order_acq_rel)) return;
        if (main.sealed) return;
        if (main_rotating) {
            if (main.created) {
                reopen_ec = rotate_main();
            }
            return;
        }
        // One fixed name: the next append opens it again (created anew if it was moved).
        if (const std::error_code s =
                appender.close(self.file_path_, self.opts_.durability != Durability::none);
            s)
            log(LogLevel::warning, fmt::format("Failed to fsync {} JSONL: {}",
                                               self.opts_.subject, s.message()));
        files_closed.fetch_add(1, std::memory_order_relaxed);
    }

    // Rotates first when due; splits the lines so that no file exceeds rotate_bytes.
    AppendResult append_main(const Lines& lines) noexcept
    {
        if (!main_rotating) return append(self.file_path_, lines);
        if (main.sealed) {
            // Closed for good (a write_batch() after close's last hook): nowhere to write.
            tally.write_error += lines.records;
            AppendResult r;
            r.ec = std::make_error_code(std::errc::bad_file_descriptor);
            r.records_failed = lines.records;
            return r;
        }
        const auto& o = self.opts_;
        if (main.created && o.rotate_interval.count() > 0 &&
            clock::now() - main.opened >= o.rotate_interval)
            rotate_main();
        if (o.rotate_bytes == 0 || lines.bytes.size() + main.size <= o.rotate_bytes)
            return append_current(lines);
        AppendResult total;
        std::string_view rest = lines.bytes;
        std::size_t records_left = lines.records, sanitized_left = lines.sanitized;
        while (!rest.empty()) {
            if (main.created && main.size >= o.rotate_bytes) rotate_main();
            const std::uint64_t budget = o.rotate_bytes > main.size ? o.rotate_bytes - main.size : 0;
            std::size_t take = 0, n = 0;
            for (;;) {
                const std::size_t nl = rest.find('\n', take);
                if (nl == std::string_view::npos) {  // no '\n' at the end: keep it whole
                    if (take == 0) take = rest.size(), n = 1;
                    break;
                }
                if (nl + 1 > budget && take > 0) break;
                if (nl + 1 > budget && main.size > 0) break;  // not even one line fits
                take = nl + 1;
                ++n;
                if (take >= budget) break;
            }
            if (take == 0) {  // the current file is too full for the next line
                rotate_main();
                if (main.size == 0) continue;
                // It could not rotate (a forked child's copy): the line goes where it can.
                const std::size_t nl = rest.find('\n');
                take = nl == std::string_view::npos ? rest.size() : nl + 1;
                n = 1;
            }
            if (take == rest.size() || n > records_left) n = records_left;
            Lines part{rest.substr(0, take), n, std::min(sanitized_left, n)};
            const AppendResult r = append_current(part);
            total.attempted = total.attempted || r.attempted;
            total.records_written += r.records_written;
            total.records_failed += r.records_failed;
            total.records_unknown += r.records_unknown;
            total.landed += r.landed;
            if (r.ec && !total.ec) total.ec = r.ec;
            rest.remove_prefix(take);
            records_left -= n;
            sanitized_left -= part.sanitized;
        }
        return total;
    }

    AppendResult append_current(const Lines& lines) noexcept
    {
        const bool fresh = !main.created;
        const AppendResult r = append(main.open_path, lines);
        if (r.attempted) {
            if (fresh) {
                main.created = true;
                main.opened = clock::now();
                try {
                    list_file(main.open_path, false);
                } catch (...) {
                }
            }
            main.size = r.offset + r.landed;
        }
        return r;
    }

    void notify_space() noexcept
    {
        if (self.opts_.overflow != Overflow::block) return;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (space_waiters.load(std::memory_order_seq_cst) == 0) return;
        // Hysteresis: a producer blocked on a full queue is woken once a quarter of it is
        // free, not after every batch — one sleep and wake-up (two context switches) per
        // quarter of the queue instead of per batch_records. (Close and shutdown wake
        // everyone anyway.)
        if (self.hooks_->queued() + space_wake_free > std::max<std::size_t>(self.opts_.queue_capacity, 1))
            return;
        std::vector<std::function<void()>> retries;
        {
            std::lock_guard lk(space_mu);
            space_cv.notify_all();
            retries.swap(async_space_waiters);
            space_waiters.fetch_sub(static_cast<int>(retries.size()), std::memory_order_seq_cst);
        }
        for (auto& r : retries) r();
    }

    // --- strand ---
    void wake_drain() noexcept { wake_timer.cancel(); }

    // Any thread: have wake_drain() run on the strand.
    void post_wake() noexcept
    {
        auto core = self.shared_from_this();
        if (loop_ex) {
            asio::post(*loop_ex, asio::bind_allocator(WakeAllocator<void>(&wake_arena),
                                                      [core = std::move(core)]() mutable {
                                                          Impl& d = *core->impl_;
                                                          asio::dispatch(d.strand, [core] {
                                                              core->impl_->wake_drain();
                                                          });
                                                      }));
        } else {
            asio::post(strand, [core = std::move(core)] { core->impl_->wake_drain(); });
        }
    }

    void complete_flushes(std::uint64_t resolved_upto, error_code ec)
    {
        if (flush_waiters.empty()) return;
        // Never erase() from the middle: that move-assigns any_completion_handler, whose move
        // assignment recurses without end in Boost 1.81. Move-construct the rest instead.
        decltype(flush_waiters) rest;
        for (auto& [target, h] : flush_waiters) {
            if (ec || target <= resolved_upto) complete(std::move(h), ec);
            else rest.emplace_back(target, std::move(h));
        }
        flush_waiters.swap(rest);
    }

    // Runs h(args...) through the writer's executor, then on h's associated executor —
    // never inline, never on the I/O thread.
    template <class Handler, class... Args>
    void complete(Handler h, Args... args)
    {
        asio::post(self.ex_, asio::append(std::move(h), std::move(args)...));
    }

    void finish(bool drained)
    {
        if (finished) return;
        finished = true;
        close_timer.cancel();
        report = CloseReport{self.stats(), drained};
        for (auto& h : close_waiters) complete(std::move(h), error_code{}, *report);
        close_waiters.clear();
        for (auto& h : reopen_waiters) complete(std::move(h), error_code{});
        reopen_waiters.clear();
        complete_flushes(0, drained ? error_code{} : error_code(make_error_code(errc::timed_out)));
        wake_drain();
    }

    // Close ran out of time: what is mid-append is unknown, what is queued is dropped.
    void abandon()
    {
        abandoned.store(true, std::memory_order_release);
        yield_hop.store(true, std::memory_order_relaxed);
        lock_consumer();
        const std::size_t n = inflight.load(std::memory_order_acquire);
        int in_flight = 0;
        if (n > 0 && batch_state.compare_exchange_strong(in_flight, 2, std::memory_order_acq_rel))
            unknown.fetch_add(n, std::memory_order_release);
        if (Guard g{*this}) shutdown.fetch_add(self.hooks_->discard_queued(), std::memory_order_release);
        unlock_consumer();
        log(LogLevel::warning, fmt::format("Timed out flushing {} JSONL; dropping remaining records",
                                           self.opts_.subject));
    }

    void on_close_request(asio::any_completion_handler<void(error_code, CloseReport)> h)
    {
        if (finished) {
            complete(std::move(h), error_code{}, *report);
            return;
        }
        close_waiters.push_back(std::move(h));
        if (closing) return;
        closing = true;
        self.state_.store(State::closed, std::memory_order_release);
        {
            Guard g(*this);
            if (g) self.hooks_->close_intake();
        }
        if (!drain_running) {
            // Never started: nothing will write what was queued.
            std::size_t n = 0;
            if (Guard g{*this}) n = self.hooks_->discard_queued();
            shutdown.fetch_add(n, std::memory_order_release);
            finish(n == 0);
            return;
        }
        close_timer.expires_after(self.opts_.shutdown_timeout);
        close_timer.async_wait([core = self.shared_from_this(), this](boost::system::error_code ec) {
            if (ec || finished) return;
            abandon();
            finish(false);
        });
        yield_hop.store(true, std::memory_order_relaxed);
        wake_drain();
    }

    static asio::awaitable<void> drain(std::shared_ptr<WriterCore> core)
    {
        Impl& d = *core->impl_;
        WriterCore& w = *core;
        const auto& o = w.opts_;
        for (;;) {
            if (d.abandoned.load(std::memory_order_acquire) || d.finished) break;
            std::uint64_t claimed = 0, consumed = 0;
            {
                Guard g(d);
                if (!g) break;
                claimed = w.hooks_->claimed();
                consumed = w.hooks_->consumed();
            }
            d.complete_flushes(consumed, {});
            if (d.reopen_requested.load(std::memory_order_acquire) && !d.closing) {
                // Between batches: the records written so far stay in the closed file.
                auto waiters = std::move(d.reopen_waiters);
                d.reopen_waiters.clear();
                co_await d.on_io(IoTask::reopen);
                d.rotate_due = d.rotate_due_io;
                for (auto& h : waiters) d.complete(std::move(h), error_code(d.reopen_ec));
                continue;
            }
            if (claimed == consumed) {
                if (d.closing) {
                    co_await d.on_io(IoTask::finalize);
                    d.finish(true);
                    break;
                }
                // Empty. For up to park_after, look again every idle_poll (a soft park: a
                // producer wakes the drain only once poll_wake_records are waiting); then park
                // until a submit, a flush, a close — or a due fsync or idle call.
                const auto now = clock::now();
                if (!d.empty_since) d.empty_since = now;
                const auto empty_for = now - *d.empty_since;
                auto wait = clock::duration::max();
                if (d.fsync_due) wait = std::max(clock::duration::zero(), *d.fsync_due - now);
                if (d.rotate_due)
                    wait = std::min<clock::duration>(
                        wait, std::max(clock::duration::zero(), *d.rotate_due - now));
                const bool idle_armed = w.idle_interval_.count() > 0 && d.active_since_idle;
                if (idle_armed)
                    wait = std::min<clock::duration>(
                        wait, std::max<clock::duration>(clock::duration::zero(),
                                                        w.idle_interval_ - empty_for));
                const bool poll = o.idle_poll.count() > 0 && empty_for < park_after;
                if (poll) {
                    wait = std::min<clock::duration>(wait, o.idle_poll);
                    const std::uint64_t at = consumed + d.poll_wake_records;
                    if (d.wake_at.load(std::memory_order_relaxed) != at)
                        d.wake_at.store(at, std::memory_order_relaxed);
                }
                // Idle polls write nothing producers read (their submit() then hits its
                // cache); a state still set from the last poll counts as stored.
                const std::uint8_t want = poll ? lingering : parked;
                if (w.wake_state_.load(std::memory_order_relaxed) != want)
                    w.wake_state_.store(want, std::memory_order_seq_cst);
                {
                    Guard g(d);
                    if (!g) break;
                    if (w.hooks_->claimed() != consumed) {
                        w.wake_state_.store(awake, std::memory_order_seq_cst);
                        continue;
                    }
                }
                boost::system::error_code ec;
                if (wait == clock::duration::max()) d.wake_timer.expires_at(clock::time_point::max());
                else d.wake_timer.expires_after(wait);
                co_await d.wake_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                // After a quiet poll the state stays `lingering` for the next one; records
                // found next set it to awake below, before the batch.
                if (ec || !poll) w.wake_state_.store(awake, std::memory_order_seq_cst);
                if (!ec && d.fsync_due && clock::now() >= *d.fsync_due) {
                    co_await d.on_io(IoTask::sync);
                    d.fsync_due.reset();
                }
                if (!ec && d.rotate_due && clock::now() >= *d.rotate_due) {
                    co_await d.on_io(IoTask::rotate_age);  // an idle file is rotated too
                    d.rotate_due = d.rotate_due_io;
                }
                if (!ec && idle_armed && clock::now() - *d.empty_since >= w.idle_interval_) {
                    bool still_empty = false;
                    if (Guard g{d}) still_empty = w.hooks_->claimed() == consumed;
                    if (still_empty) {
                        // Nothing but time passed: the writer has been idle that long.
                        d.active_since_idle = false;
                        co_await d.on_io(IoTask::idle);
                    }
                }
                continue;
            }
            d.empty_since.reset();
            if (w.wake_state_.load(std::memory_order_relaxed) != awake)
                w.wake_state_.store(awake, std::memory_order_seq_cst);
            // Linger: give a short batch up to flush_interval to fill.
            if (o.flush_interval.count() > 0 && !d.closing && d.flush_waiters.empty() &&
                claimed - consumed < o.batch_records) {
                d.wake_at.store(consumed + o.batch_records, std::memory_order_relaxed);
                w.wake_state_.store(lingering, std::memory_order_seq_cst);
                boost::system::error_code ec;
                d.wake_timer.expires_after(o.flush_interval);
                co_await d.wake_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                w.wake_state_.store(awake, std::memory_order_seq_cst);
            }
            d.yield_hop.store(d.closing || !d.flush_waiters.empty(), std::memory_order_relaxed);
            d.active_since_idle = true;
            co_await d.on_io(IoTask::step);
            d.fsync_due = d.fsync_due_io;  // written by the task, read after its completion
            d.rotate_due = d.rotate_due_io;
        }
        // Detached (the writer is gone) or abandoned: settle every waiter.
        if (!d.finished) d.finish(d.discarded_at_shutdown.load() == 0);
    }

    WriterCore& self;
    asio::strand<asio::any_io_executor> strand;
    std::optional<asio::thread_pool> own_io;
    asio::any_io_executor io_ex;
    std::optional<asio::io_context::executor_type> loop_ex;  // ex_, when it is an io_context's
    WakeArena wake_arena;
    asio::steady_timer wake_timer;   // the drain parks (or lingers) on it
    asio::steady_timer close_timer;  // shutdown_timeout

    // Counters. Consumer side (the batch or close): written ... shutdown, unknown.
    std::atomic<std::uint64_t> written{0}, batches{0}, bytes{0}, sanitized{0}, unknown{0};
    std::atomic<std::uint64_t> malformed{0}, write_error{0}, shutdown{0}, unexpected{0};
    // Producer side.
    alignas(64) std::atomic<std::uint64_t> queue_full{0};
    std::atomic<std::uint64_t> closed{0}, evicted{0};

    // I/O thread only.
    FileAppender appender;
    const std::uint64_t poll_wake_records;  // see maybe_wake()
    // Free slots that wake Overflow::block producers (a quarter of the queue, at least 1).
    const std::size_t space_wake_free = std::max<std::size_t>(1, self.opts_.queue_capacity / 4);
    Tally tally;
    std::uint64_t queue_full_logged = 0, malformed_seen = 0, unexpected_serialize = 0;
    std::uint64_t unexpected_write = 0, write_failures = 0, sync_failures = 0;
    bool unsynced = false;
    clock::time_point last_sync{};

    // Batch hand-over between the I/O thread and close.
    std::atomic_flag consumer_lock = ATOMIC_FLAG_INIT;
    std::atomic<std::size_t> inflight{0};
    std::atomic<int> batch_state{0};  // 0 in flight, 1 published, 2 abandoned
    std::atomic<bool> abandoned{false};
    std::atomic<bool> yield_hop{false};

    // Guard for the typed writer's lifetime.
    std::shared_ptr<Life> life = std::make_shared<Life>();
    std::optional<clock::time_point> fsync_due_io;  // I/O task -> strand, via the hop
    std::optional<clock::time_point> rotate_due_io;  // likewise

    // The default layout's file (I/O thread; set up by start()).
    std::shared_ptr<FileIo> file_io;
    bool main_rotating = false;
    std::string main_prefix;  // <stem>-<host>-<pid>-
    std::string open_suffix;
    MainFile main;
    std::atomic<std::uint64_t> files_closed{0};
    std::atomic<bool> reopen_requested{false};
    std::error_code reopen_ec;  // the last reopen's, I/O task -> strand
    mutable std::mutex files_mu;
    std::vector<std::filesystem::path> file_list;  // under files_mu
    std::atomic<bool> shutting_down{false};
    std::atomic<std::size_t> discarded_at_shutdown{0};

    // Overflow::block waiters.
    std::mutex space_mu;
    std::condition_variable space_cv;
    std::atomic<int> space_waiters{0};
    std::vector<std::function<void()>> async_space_waiters;

    // Strand only.
    std::atomic<bool> drain_running{false};
    bool closing = false;
    bool finished = false;
    std::optional<clock::time_point> rotate_due;
    std::vector<asio::any_completion_handler<void(error_code)>> reopen_waiters;
    bool active_since_idle = false;
    std::optional<clock::time_point> empty_since;  // when the drain first found the queue empty
    // Lingering or polling: the claim position from which a submit wakes the drain.
    std::atomic<std::uint64_t> wake_at{0};
    std::optional<clock::time_point> fsync_due;
    std::vector<std::pair<std::uint64_t, asio::any_completion_handler<void(error_code)>>>
        flush_waiters;
    std::vector<asio::any_completion_handler<void(error_code, CloseReport)>> close_waiters;
    std::optional<CloseReport> report;
};

WriterCore::WriterCore(asio::any_io_executor ex, WriterOptions opts)
    : opts_(std::move(opts)), ex_(std::move(ex))
{
    if (opts_.directory.empty()) state_.store(State::inert, std::memory_order_relaxed);
    impl_ = std::make_unique<Impl>(*this);
}

WriterCore::~WriterCore() = default;

void WriterCore::start(const std::function<void()>& before_drain)
{
    State expected = State::created;
    if (!state_.compare_exchange_strong(expected, State::running, std::memory_order_acq_rel))
        return;  // inert, disabled, closed, or already started
    std::error_code ec;
    std::filesystem::create_directories(opts_.directory, ec);
    if (!ec && !std::filesystem::is_directory(opts_.directory, ec))
        ec = std::make_error_code(std::errc::not_a_directory);
    if (ec) {
        impl_->log(LogLevel::error, fmt::format("Disabling {} JSONL output: {} ({})",
                                                opts_.subject, ec.message(),
                                                opts_.directory.native()));
        state_.store(State::disabled, std::memory_order_release);
        // Records submitted before start() cannot be written anywhere.
        if (hooks_) impl_->write_error.fetch_add(hooks_->discard_queued());
        return;
    }
    const std::string host = host_name();
    Impl& d = *impl_;
    d.file_io = opts_.file_io ? opts_.file_io : posix_file_io();
    d.open_suffix = opts_.open_suffix.value_or(
        opts_.rotate_bytes > 0 || opts_.rotate_interval.count() > 0 ? ".open" : "");
    d.main_rotating = opts_.rotate_bytes > 0 || opts_.rotate_interval.count() > 0 ||
                      !d.open_suffix.empty();
    if (d.main_rotating) {
        d.main_prefix = fmt::format("{}-{}-{}-", opts_.stem, host, ::getpid());
        d.name_main(0, std::time(nullptr));
        file_path_ = d.main.final_path;
        d.seal_stale();
    } else {
        file_path_ = opts_.directory /
                     fmt::format("{}-{}-{}-{}.jsonl", opts_.stem, host, ::getpid(), utc_stamp());
    }
    writer_id_ = fmt::format("{}-{}-{}", host, ::getpid(), next_generation());
    if (opts_.envelope) {
        LineBuffer b;
        JsonLine(b).begin_object().key("writer").string(writer_id_);
        envelope_writer_.assign(b.data() + 1, b.size() - 1);  // "writer":"…" (escaped)
    }
    if (before_drain) {
        try {
            before_drain();
        } catch (const std::exception& e) {
            impl_->log(LogLevel::error, fmt::format("on_start() of {} writer failed: {}",
                                                    opts_.subject, e.what()));
        }
    }
    impl_->drain_running = true;
    asio::co_spawn(impl_->strand, Impl::drain(shared_from_this()), asio::detached);
}

void WriterCore::shutdown() noexcept
{
    Impl& d = *impl_;
    if (d.shutting_down.exchange(true)) return;
    const State s = state_.load(std::memory_order_acquire);
    if (s == State::created || s == State::running) state_.store(State::closed);
    // The push count is final once intake is closed; stats() uses it from now on.
    if (hooks_) final_pushes_.store(hooks_->close_intake(), std::memory_order_release);
    d.life->detaching.store(true, std::memory_order_seq_cst);
    // Wake threads blocked in submit(); they see the queue closed.
    {
        std::lock_guard lk(d.space_mu);
        d.space_cv.notify_all();
    }
    // Wait for a running batch (it checks `detaching` between batches).
    for (int a = d.life->active.load(); a != 0; a = d.life->active.load()) d.life->active.wait(a);
    if (hooks_) {
        d.lock_consumer();
        const std::size_t n = hooks_->discard_queued();
        d.discarded_at_shutdown.store(n, std::memory_order_release);
        d.shutdown.fetch_add(n, std::memory_order_release);
        d.unlock_consumer();
        // async_submit() waiters: their retry finds the queue closed and completes.
        std::vector<std::function<void()>> retries;
        {
            std::lock_guard lk(d.space_mu);
            retries.swap(d.async_space_waiters);
        }
        for (auto& r : retries) r();
    }
    asio::post(d.strand, [core = shared_from_this()] { core->impl_->wake_drain(); });
}

std::vector<std::filesystem::path> WriterCore::files() const
{
    if (!impl_->main_rotating) {
        std::vector<std::filesystem::path> one;
        if (!file_path_.empty()) one.push_back(file_path_);
        return one;
    }
    std::lock_guard lk(impl_->files_mu);
    return impl_->file_list;
}

void WriterCore::envelope_open(LineBuffer& buf, const std::uint64_t* seq)
{
    if (seq) {
        static constexpr std::string_view head = "{\"seq\":";
        buf.append(head.data(), head.data() + head.size());
        fmt::format_to(std::back_inserter(buf), "{},", *seq);
    } else {
        buf.push_back('{');
    }
    buf.append(envelope_writer_.data(), envelope_writer_.data() + envelope_writer_.size());
}

void WriterCore::envelope_close(LineBuffer& buf, std::size_t body)
{
    const std::size_t n = buf.size() - body;
    if (n < 2 || buf[body] != '{' || buf[buf.size() - 1] != '}')
        throw MalformedRecord("under the envelope a record must be a JSON object");
    if (n == 2) {  // {} adds nothing to the envelope's members
        buf.resize(body);
        buf.push_back('}');
    } else {
        buf[body] = ',';
    }
}

WriterStats WriterCore::stats() const noexcept
{
    auto& d = const_cast<Impl&>(*impl_);
    WriterStats s;
    // Consumer-side counters first: each counts records pushed before it, so the push
    // count read afterwards is never smaller than what they add up to.
    s.written = d.written.load(std::memory_order_acquire);
    s.batches = d.batches.load(std::memory_order_relaxed);
    s.bytes = d.bytes.load(std::memory_order_relaxed);
    s.sanitized = d.sanitized.load(std::memory_order_relaxed);
    s.unknown = d.unknown.load(std::memory_order_acquire);
    s.dropped.malformed = d.malformed.load(std::memory_order_acquire);
    s.dropped.write_error = d.write_error.load(std::memory_order_acquire);
    s.dropped.shutdown = d.shutdown.load(std::memory_order_acquire);
    s.dropped.unexpected = d.unexpected.load(std::memory_order_acquire);
    s.dropped.oldest_evicted = d.evicted.load(std::memory_order_acquire);
    s.dropped.queue_full = d.queue_full.load(std::memory_order_acquire);
    s.dropped.closed = d.closed.load(std::memory_order_acquire);
    s.files_closed = d.files_closed.load(std::memory_order_relaxed);
    std::uint64_t pushes = 0;
    if (Impl::Guard g{d}) pushes = hooks_ ? hooks_->claimed() : 0;
    else pushes = final_pushes_.load(std::memory_order_acquire);
    const std::uint64_t resolved = s.written + s.unknown + s.dropped.total() -
                                   s.dropped.queue_full - s.dropped.closed;
    s.submitted = pushes + s.dropped.queue_full + s.dropped.closed;
    s.pending = pushes > resolved ? pushes - resolved : 0;
    return s;
}

void WriterCore::maybe_wake(std::uint8_t seen, std::uint64_t pos) noexcept
{
    // Lingering or polling: only enough waiting records (a full batch; while polling, at
    // most a quarter of the queue) cut it short.
    if (seen == lingering && pos + 1 < impl_->wake_at.load(std::memory_order_relaxed)) return;
    std::uint8_t expected = seen;
    if (!wake_state_.compare_exchange_strong(expected, awake, std::memory_order_acq_rel)) return;
    // One post per park, never one per record.
    impl_->post_wake();
}

void WriterCore::count_queue_full() noexcept
{
    impl_->queue_full.fetch_add(1, std::memory_order_acq_rel);
}
std::uint64_t WriterCore::queue_full_count() const noexcept
{
    return impl_->queue_full.load(std::memory_order_acquire);
}
void WriterCore::count_closed() noexcept { impl_->closed.fetch_add(1, std::memory_order_acq_rel); }
void WriterCore::count_evicted() noexcept { impl_->evicted.fetch_add(1, std::memory_order_acq_rel); }

bool WriterCore::wait_for_space(clock::time_point deadline) noexcept
{
    Impl& d = *impl_;
    const std::size_t cap = opts_.queue_capacity == 0 ? 1 : opts_.queue_capacity;
    std::unique_lock lk(d.space_mu);
    d.space_waiters.fetch_add(1, std::memory_order_seq_cst);
    bool room = true;
    while (!d.life->detaching.load(std::memory_order_seq_cst) && hooks_->queued() >= cap) {
        if (d.space_cv.wait_until(lk, deadline) == std::cv_status::timeout) {
            room = d.life->detaching.load() || hooks_->queued() < cap;
            break;
        }
    }
    d.space_waiters.fetch_sub(1, std::memory_order_seq_cst);
    return room;
}

void WriterCore::add_space_waiter(std::function<void()> retry)
{
    Impl& d = *impl_;
    {
        std::lock_guard lk(d.space_mu);
        if (!d.life->detaching.load()) {
            d.async_space_waiters.push_back(std::move(retry));
            d.space_waiters.fetch_add(1, std::memory_order_seq_cst);
            // A pop may have happened before we registered: retry once more now.
            if (!hooks_ || hooks_->queued() >= opts_.queue_capacity) return;
            retry = std::move(d.async_space_waiters.back());
            d.async_space_waiters.pop_back();
            d.space_waiters.fetch_sub(1, std::memory_order_seq_cst);
        }
    }
    asio::post(impl_->strand, std::move(retry));
}

void WriterCore::on_malformed(std::string_view what) noexcept { impl_->on_malformed(what); }
void WriterCore::on_unexpected(Stage stage, std::string_view what) noexcept
{
    impl_->on_unexpected(stage, what);
}
AppendResult WriterCore::append(const std::filesystem::path& path, const Lines& lines) noexcept
{
    return impl_->append(path, lines);
}

AppendResult WriterCore::append_main(const Lines& lines) noexcept
{
    return impl_->append_main(lines);
}

AppendResult WriterCore::settle(const Lines& lines, std::uint64_t delivered,
                                std::uint64_t failed, std::uint64_t delivered_bytes) noexcept
{
    return impl_->settle(lines, delivered, failed, delivered_bytes);
}

void WriterCore::async_reopen_impl(asio::any_completion_handler<void(error_code)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled) {
        impl_->complete(std::move(h), error_code{});
        return;
    }
    asio::post(impl_->strand, [core = shared_from_this(), h = std::move(h)]() mutable {
        Impl& d = *core->impl_;
        if (d.finished || d.closing) {  // close gives the file its final name anyway
            d.complete(std::move(h), error_code{});
            return;
        }
        // Request and waiter together, on the strand: the drain takes both at once.
        d.reopen_requested.store(true, std::memory_order_release);
        d.reopen_waiters.push_back(std::move(h));
        d.wake_drain();
    });
}

void WriterCore::async_flush_impl(asio::any_completion_handler<void(error_code)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled || !hooks_) {
        impl_->complete(std::move(h), error_code{});
        return;
    }
    const std::uint64_t target = hooks_->claimed();
    asio::post(impl_->strand, [core = shared_from_this(), target, h = std::move(h)]() mutable {
        Impl& d = *core->impl_;
        if (d.finished) {
            d.complete(std::move(h), error_code{});
            return;
        }
        d.flush_waiters.emplace_back(target, std::move(h));
        d.yield_hop.store(true, std::memory_order_relaxed);
        d.wake_drain();
    });
}

void WriterCore::async_close_impl(
    asio::any_completion_handler<void(error_code, CloseReport)> h)
{
    const State s = state();
    if (s == State::inert || s == State::disabled) {
        impl_->complete(std::move(h), error_code{}, CloseReport{stats(), true});
        return;
    }
    // Intake stops now, on the caller's thread: a submit() after async_close() returned is
    // refused (and counted), whenever the strand gets to the rest.
    if (s == State::created || s == State::running) {
        state_.store(State::closed, std::memory_order_release);
        if (hooks_) hooks_->close_intake();
    }
    asio::post(impl_->strand, [core = shared_from_this(), h = std::move(h)]() mutable {
        core->impl_->on_close_request(std::move(h));
    });
}

}  // namespace jsonlw::detail
