// What a closed sink holds (see conformance_rules.hpp): reading it back, counts.found and
// lifecycle.close_twice on what is read, files.exist on what files() lists.
#include "conformance_lines.hpp"
#include "conformance_rules.hpp"

#include <fmt/format.h>

#include <fstream>

namespace jsonlw::testing::conformance {

std::optional<std::vector<std::string>> read_back(
    ReportBuilder& report, const ConformanceOptions& opts, LineSink& sink,
    const std::vector<std::filesystem::path>& files, const std::filesystem::path& dir,
    const std::string& run, std::string& why)
{
    if (opts.read_back) {
        try {
            return opts.read_back(sink, files);
        } catch (const std::exception& e) {
            why = fmt::format("ConformanceOptions::read_back threw: {}", e.what());
            report.fail("counts.found", run, why);
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

void check_closed_sink(ReportBuilder& report, const ConformanceOptions& opts, LineSink& sink,
                       const std::vector<std::filesystem::path>& files,
                       const std::filesystem::path& dir, const std::vector<Group>& groups,
                       bool durable, const std::string& run)
{
    std::string why;
    const auto first = read_back(report, opts, sink, files, dir, run, why);
    sink.close(durable);  // as the destructor may
    const auto second = read_back(report, opts, sink, files, dir, run, why);
    if (first) {
        check_found(report, groups, *first, run);
        report.checked("lifecycle.close_twice");
        if (!second || *second != *first)
            report.fail("lifecycle.close_twice", run,
                        "a second close() changed what is read back");
    } else {
        report.skip("counts.found", why);
    }
}

void check_files(ReportBuilder& report, const std::vector<std::filesystem::path>& files,
                 const std::filesystem::path& dir, const ObservedIo::Snapshot& io,
                 const std::string& run)
{
    report.checked("files.exist");
    for (const auto& f : files) {
        std::error_code ec;
        if (!std::filesystem::exists(f.is_relative() ? dir / f : f, ec)) {
            report.fail("files.exist", run,
                        fmt::format("files() lists {}, which does not exist after close",
                                    f.native()));
            return;
        }
    }
    if (files.empty() && io.opened_for_write > 0)
        report.fail("files.exist", run,
                    fmt::format("files() is empty, but the sink opened {} file(s) for writing "
                                "through SinkContext::file_io",
                                io.opened_for_write));
}

}  // namespace jsonlw::testing::conformance
