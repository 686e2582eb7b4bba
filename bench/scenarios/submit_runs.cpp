// The jsonlw rows of the submit-cost scenario: RawJsonWriter's submit() at a steady rate, from
// another thread or on the loop thread, each call as the caller hands the line over.
#include "bare_ring.hpp"
#include "clock.hpp"
#include "line_pool.hpp"
#include "runs.hpp"
#include "writer_harness.hpp"
#include "paced_calls.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <fstream>
#include <thread>
#include <future>
#include <optional>
#include <string>
#include <string_view>

namespace bench {

using jsonlw::SubmitResult;

namespace {

// The paced submits, one call per step. From another thread the steps run back to back; on
// the loop thread each step is a handler that posts the next, so the drain's own handlers run
// in between (a caller that kept the loop thread would stall the writer). With a `floor`,
// every other step is instead a push into it, timed into `floor_ns`.
struct PacedSubmits {
    jsonlw::RawJsonWriter& w;
    const SubmitCostSpec& s;
    PacedCalls calls;
    BareRing* floor = nullptr;
    std::vector<double>* floor_ns = nullptr;

    void step()
    {
        if (floor && calls.index() % 2 == 1) {
            calls.step(
                [this](std::size_t i) {
                    return [this, &line = s.pool->at(i / 2)] { return floor->push(line); };
                },
                floor_ns);
            return;
        }
        calls.step([this](std::size_t i) {
            if (floor) i /= 2;
            using Form = SubmitCostSpec::Form;
            const std::string& line = s.pool->at(i);
            std::string rec;
            if (s.form == Form::moved_string) rec = line;  // built before the timed call
            return [this, &line, rec = std::move(rec)]() mutable {
                switch (s.form) {
                case Form::moved_string: return w.submit(std::move(rec)) == SubmitResult::accepted;
                case Form::string_in_call:
                    return w.submit(std::string(line)) == SubmitResult::accepted;
                case Form::view: break;
                }
                return w.submit(std::string_view(line)) == SubmitResult::accepted;
            };
        });
    }
};

// This process's resident memory (VmRSS), MiB.
double resident_mib()
{
    std::ifstream in("/proc/self/status");
    std::string key;
    while (in >> key) {
        if (key == "VmRSS:") {
            double kib = 0;
            in >> kib;
            return kib / 1024;
        }
        in.ignore(1 << 10, '\n');
    }
    return 0;
}

// This process's anonymous memory in transparent huge pages, MiB.
double huge_page_mib()
{
    std::ifstream in("/proc/self/smaps_rollup");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("AnonHugePages:", 0) == 0) return std::stod(line.substr(14)) / 1024;
    return 0;
}

}  // namespace

SubmitCostResult jsonlw_raw_submit_cost(const SubmitCostSpec& s)
{
    SubmitCostResult r;
    LogTally logs;
    std::filesystem::path file;
    std::optional<jsonlw::CloseReport> report;
    std::string floor_problem;  // beside_floor: the bare ring's
    {
        Loop loop;
        // By default what a user gets (queue 1024, batch 1024, drop_newest): below saturation
        // the queue never fills.
        const double rss0 = resident_mib();
        const auto t0 = SteadyClock::now();
        jsonlw::RawJsonWriter w(loop.executor(),
                                jsonlw::WriterOptions{
                                    .directory = s.dir,
                                    .stem = "submit",
                                    .subject = "bench",
                                    .queue_capacity = s.queue_capacity,
                                    .batch_records = s.batch_records,
                                    .flush_interval = std::chrono::milliseconds(s.flush_interval_ms),
                                    .overflow = s.block ? jsonlw::Overflow::block
                                                        : jsonlw::Overflow::drop_newest,
                                    .log = logs.sink(),
                                    .idle_poll = std::chrono::microseconds(s.idle_poll_us),
                                    .idle_poll_max = s.idle_poll_max_us
                                                         ? std::chrono::microseconds(s.idle_poll_max_us)
                                                         : jsonlw::WriterOptions{}.idle_poll_max,
                                });
        w.start();
        r.start_ms = seconds_since(t0) * 1e3;
        r.start_rss_mib = resident_mib() - rss0;
        // beside_floor: twice the steps, every other one a push into a bare ring.
        SubmitCostSpec steps = s;
        if (s.beside_floor) steps.rate_per_s *= 2;
        std::optional<BareRing> floor;
        if (s.beside_floor)
            floor.emplace(s.queue_capacity, std::chrono::microseconds(s.idle_poll_us));
        PacedSubmits paced{w, s, PacedCalls(steps, r), floor ? &*floor : nullptr, &r.floor_ns};
        if (s.from_loop) {
            // A small handler (two pointers and the executor) that re-posts itself.
            struct Next {
                PacedSubmits* paced;
                std::promise<void>* done;
                asio::any_io_executor ex;
                void operator()() const
                {
                    paced->step();
                    if (paced->calls.more()) asio::post(ex, *this);
                    else done->set_value();
                }
            };
            std::promise<void> done;
            asio::post(loop.executor(), Next{&paced, &done, loop.executor()});
            done.get_future().wait();
        } else {
            while (paced.calls.more()) paced.step();
        }
        paced.calls.finish();
        if (floor) {
            floor->finish();
            // Half the steps were the floor's (the odd ones), and every push went in.
            const std::uint64_t pushes = r.calls / 2;
            if (floor->popped() != pushes)
                floor_problem = fmt::format("bare ring: {} popped, {} pushed", floor->popped(), pushes);
            r.calls -= pushes;
            r.achieved_rate /= 2;
        }
        report = w.async_close(asio::use_future).get();
        file = w.file_path();
    }
    const FileCheck c = check_file(file);
    const std::uint64_t accepted = r.calls - r.refused;
    r.problem = file_problem(c, accepted, accepted * s.pool->line_bytes);
    if (r.problem.empty()) r.problem = floor_problem;
    // Saturated (refusals) is reported, not a failure; the accounting must be exact either way.
    const jsonlw::WriterStats& st = report->stats;
    if (r.problem.empty() && (st.written != accepted || st.dropped.queue_full != r.refused ||
                              st.dropped.total() != r.refused || st.unknown || st.pending))
        r.problem = fmt::format("stats: written {} (accepted {}), dropped {} (refused {})",
                                st.written, accepted, st.dropped.total(), r.refused);
    empty_dir(s.dir);
    return r;
}

IdleCostResult jsonlw_idle_cost(const std::filesystem::path& dir, double seconds,
                                std::chrono::milliseconds flush_interval)
{
    IdleCostResult r;
    const auto written = [](const jsonlw::RawJsonWriter& w, std::uint64_t n) {
        const auto t0 = SteadyClock::now();
        while (w.stats().written < n) {
            if (seconds_since(t0) > 10) return false;
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        return true;
    };
    LogTally logs;
    {
        Loop loop;
        jsonlw::RawJsonWriter w(loop.executor(), jsonlw::WriterOptions{
                                                     .directory = dir,
                                                     .stem = "idle",
                                                     .subject = "bench",
                                                     .flush_interval = flush_interval,
                                                     .log = logs.sink(),
                                                 });
        w.start();
        w.submit(std::string_view(R"({"idle":0})"));
        if (!written(w, 1)) r.problem = "the first record was not written in 10 s";
        // The spell: the drain polls every idle_poll (1 ms), after 50 ms backing off to
        // idle_poll_max (8 ms), or to flush_interval when that is shorter.
        const double c0 = process_cpu_seconds();
        const auto t0 = SteadyClock::now();
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        r.cpu_share = (process_cpu_seconds() - c0) / seconds_since(t0);
        const auto s0 = SteadyClock::now();
        w.submit(std::string_view(R"({"idle":1})"));
        if (!written(w, 2) && r.problem.empty()) r.problem = "the record after the spell was not written in 10 s";
        r.wake_ms = seconds_since(s0) * 1e3;
        r.wakeups = w.drain_wakeups();
        w.async_close(asio::use_future).get();
    }
    empty_dir(dir);
    return r;
}

StartCostResult jsonlw_start_cost(const std::filesystem::path& dir, std::size_t capacity,
                                  bool huge_pages)
{
    StartCostResult r;
    LogTally logs;
    {
        Loop loop;
        const double rss0 = resident_mib(), huge0 = huge_page_mib();
        const auto t0 = SteadyClock::now();
        jsonlw::RawJsonWriter w(loop.executor(), jsonlw::WriterOptions{
                                                     .directory = dir,
                                                     .stem = "start",
                                                     .subject = "bench",
                                                     .queue_capacity = capacity,
                                                     .huge_pages = huge_pages,
                                                     .log = logs.sink(),
                                                 });
        w.start();
        r.ms = seconds_since(t0) * 1e3;
        r.rss_mib = resident_mib() - rss0;
        r.huge_mib = huge_page_mib() - huge0;
        if (!w.enabled()) r.problem = "the writer did not start";
        w.async_close(asio::use_future).get();
    }
    empty_dir(dir);
    return r;
}

}  // namespace bench
