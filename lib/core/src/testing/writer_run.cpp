// Checker::run_writer() (see checker.hpp): a ConformanceWriter on its own io_context thread
// drives the sink behind a FaultySink and a Probe: half the records queued before start(), a
// reopen (plain runs) or the faults (the faults run), the rest, close; then the rules of
// conformance_rules.hpp on what the run saw, in the order the report lists them.
#include "checker.hpp"
#include "conformance_rules.hpp"
#include "conformance_writer.hpp"
#include "observed_io.hpp"
#include "probe.hpp"

#include <jsonlw/sinks/faulty_sink.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <optional>
#include <thread>

namespace jsonlw::testing::conformance {

using namespace std::chrono_literals;

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
    o.log = report_.log_sink();
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
            report_.checked("lifecycle.progress");
            if (f.wait_for(opts_.timeout) != std::future_status::ready) {
                report_.fail("lifecycle.progress", run,
                             fmt::format("{} did not complete within {} ms", what,
                                         opts_.timeout.count()));
                progress = false;
                return false;
            }
            try {
                f.get();
            } catch (const std::exception& e) {
                report_.fail(rule, run, fmt::format("{} failed: {}", what, e.what()));
            }
            return true;
        };
        auto flush = [&](const char* what) {
            wait(w.async_flush(boost::asio::use_future), what, "lifecycle.progress");
        };

        submit(total / 2);  // batches of exactly batch_records: queued before start()
        w.start();
        report_.checked("lifecycle.start");
        if (!w.enabled()) {
            report_.fail("lifecycle.start", run,
                         "start() failed: the writer is disabled (see the log)");
            started = false;
        }
        flush("a flush of the first records");
        if (!faults) {
            report_.checked("lifecycle.reopen");
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
            else report_.fail("lifecycle.progress", run, "close did not complete in time");
        }
        try {
            files = probe->files();
        } catch (...) {
        }
    }
    guard.reset();
    loop.join();
    if (!started) return;

    WriterRunSeen seen;
    seen.mode = mode;
    seen.faults = faults;
    seen.run = run;
    seen.events = probe->events();
    seen.closed = closed ? &*closed : nullptr;
    seen.overlapped = probe->overlapped();
    seen.caller = std::this_thread::get_id();
    seen.loop = loop_id;
    seen.submitted = submitted;
    seen.fc = faulty->counts();
    seen.io = io->snapshot();

    const std::vector<Group> groups = count_groups(report_, seen);
    check_exact(report_, seen, groups);
    check_thread(report_, seen);
    check_close(report_, seen);
    check_reopen(report_, seen);
    check_durable_when_counted(report_, seen);
    if (faults) check_faults(report_, seen, groups);

    check_closed_sink(report_, opts_, *sink, files, dir, groups, mode != Durability::none, run);
    check_files(report_, files, dir, seen.io, run);
}

}  // namespace jsonlw::testing::conformance
