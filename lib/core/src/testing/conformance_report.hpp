// ReportBuilder: the ConformanceReport a check_sink() run fills in. Called by the Checker and
// the rules on check_sink()'s thread, except the LogSink it hands out, which the writers call
// from their threads (it locks). Owns the report until take().
#pragma once

#include <jsonlw/log.hpp>
#include <jsonlw/testing/sink_conformance.hpp>

#include <mutex>
#include <string>

namespace jsonlw::testing::conformance {

class ReportBuilder {
public:
    // `rule` failed in `run` (kept once per rule and run); also checks it.
    void fail(const std::string& rule, const std::string& run, const std::string& message);
    // `rule` was checked (listed once).
    void checked(const std::string& rule);
    // `rule` could not be checked, `why` (each line once).
    void skip(const std::string& rule, const std::string& why);
    // Keeps the first 1000 lines the writers and the sink log.
    LogSink log_sink();
    ConformanceReport take();

private:
    std::mutex log_mu_;  // report_.log, from the writers' threads
    ConformanceReport report_;
};

}  // namespace jsonlw::testing::conformance
