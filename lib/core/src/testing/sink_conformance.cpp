// check_sink() (see jsonlw/testing/sink_conformance.hpp): each run makes a fresh sink, puts
// a FaultySink and a Probe in front of it (the probe records every call the engine makes, on
// which thread, and what the writer had counted by then), gives it a FileIo seam that watches
// what the sink writes and fsyncs, and drives it with a writer whose record i is the line
// {"conformance":i} — or directly, as the I/O thread would. The rules are then checked from
// the probe's record, the seam's and what is read back from the closed sink. Here: the
// Checker's order of runs, their folders and their sinks.
#include <jsonlw/testing/sink_conformance.hpp>

#include "checker.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace jsonlw::testing {

namespace conformance {

Checker::Checker(const SinkFactory& make, const ConformanceOptions& opts)
    : make_(make), opts_(opts)
{
    static std::atomic<unsigned> serial{0};
    const std::filesystem::path base =
        opts_.directory.empty() ? std::filesystem::temp_directory_path() : opts_.directory;
    root_ = base / fmt::format("jsonlw-conformance-{}-{}", ::getpid(), serial++);
}

Checker::~Checker()
{
    if (!opts_.keep_files) {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
}

ConformanceReport Checker::run()
{
    run_direct();
    for (const Durability d : opts_.durabilities) run_writer(d, false);
    if (!opts_.durabilities.empty()) {
        const bool batch = std::find(opts_.durabilities.begin(), opts_.durabilities.end(),
                                     Durability::fsync_batch) != opts_.durabilities.end();
        run_writer(batch ? Durability::fsync_batch : opts_.durabilities.front(), true);
    }
    return report_.take();
}

std::filesystem::path Checker::fresh_dir(std::string_view name)
{
    const auto dir = root_ / fmt::format("{:02}-{}", runs_++, name);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    return dir;
}

std::shared_ptr<LineSink> Checker::make_sink(const std::string& run)
{
    try {
        auto sink = make_();
        if (!sink) report_.fail("lifecycle.start", run, "the factory returned no sink");
        return sink;
    } catch (const std::exception& e) {
        report_.fail("lifecycle.start", run, fmt::format("the factory threw: {}", e.what()));
    } catch (...) {
        report_.fail("lifecycle.start", run, "the factory threw");
    }
    return nullptr;
}

}  // namespace conformance

ConformanceReport check_sink(const SinkFactory& make, const ConformanceOptions& options)
{
    conformance::Checker c(make, options);
    return c.run();
}

}  // namespace jsonlw::testing
