// ConformanceReport (jsonlw/testing/sink_conformance.hpp) and ReportBuilder
// (conformance_report.hpp): the rules' verdicts as the caller reads them.
#include "conformance_report.hpp"

#include <fmt/format.h>

#include <algorithm>

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

namespace conformance {

void ReportBuilder::fail(const std::string& rule, const std::string& run,
                         const std::string& message)
{
    checked(rule);
    for (const auto& f : report_.failures)
        if (f.rule == rule && f.message.rfind(run, 0) == 0) return;  // once per run
    report_.failures.push_back({rule, fmt::format("{}: {}", run, message)});
}

void ReportBuilder::checked(const std::string& rule)
{
    if (std::find(report_.checked.begin(), report_.checked.end(), rule) ==
        report_.checked.end())
        report_.checked.push_back(rule);
}

void ReportBuilder::skip(const std::string& rule, const std::string& why)
{
    const std::string line = fmt::format("{}: {}", rule, why);
    if (std::find(report_.skipped.begin(), report_.skipped.end(), line) ==
        report_.skipped.end())
        report_.skipped.push_back(line);
}

LogSink ReportBuilder::log_sink()
{
    return [this](LogLevel, std::string_view m) {
        std::lock_guard lk(log_mu_);
        if (report_.log.size() < 1000) report_.log.emplace_back(m);
    };
}

ConformanceReport ReportBuilder::take()
{
    std::lock_guard lk(log_mu_);
    return std::move(report_);
}

}  // namespace conformance
}  // namespace jsonlw::testing
