// Checker::run_direct() (see checker.hpp): the sink alone, the calling thread its I/O thread:
// start, a group, one OTLP-style line of several records, reopen, a group, sync, close twice.
#include "checker.hpp"
#include "conformance_rules.hpp"
#include "observed_io.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>

namespace jsonlw::testing::conformance {

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
    ctx.log = report_.log_sink();
    ctx.writer_stats = [] { return WriterStats{}; };
    report_.checked("lifecycle.start");
    if (const std::error_code ec = sink->start(ctx)) {
        report_.fail("lifecycle.start", run, fmt::format("start() failed: {}", ec.message()));
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
        check_adds_up(report_, r, n, run);
        report_.checked("counts.exact");
        if (r.records_written != n)
            report_.fail("counts.exact", run,
                         fmt::format("an append of {} records, nothing wrong, reported {} "
                                     "written ({})",
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
        check_adds_up(report_, r, 4, run);
        report_.checked("counts.log_records");
        if (r.records_written != 4)
            report_.fail("counts.log_records", run,
                         fmt::format("one line of Lines::log_records holding 4 records reported "
                                     "{} written, {} failed, {} unknown (count lines.records, "
                                     "not '\\n')",
                                     r.records_written, r.records_failed, r.records_unknown));
        Group g;
        g.ids = {100003};
        g.records = 4;
        g.written = std::min<std::uint64_t>(r.records_written, 4);
        groups.push_back(g);
    }
    report_.checked("lifecycle.reopen");
    if (const std::error_code ec = sink->reopen())
        report_.fail("lifecycle.reopen", run, fmt::format("reopen() failed: {}", ec.message()));
    put(100004, 3);
    report_.checked("durability.sync_per_append");
    if (const std::error_code ec = sink->sync())
        report_.fail("durability.sync_per_append", run,
                     fmt::format("sync() failed with nothing wrong: {}", ec.message()));
    sink->close(true);
    std::vector<std::filesystem::path> files;
    try {
        files = sink->files();
    } catch (...) {
    }
    check_closed_sink(report_, opts_, *sink, files, dir, groups, true, run);
    check_files(report_, files, dir, io->snapshot(), run);
}

}  // namespace jsonlw::testing::conformance
