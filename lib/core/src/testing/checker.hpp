// Checker: one check_sink() call. Runs on check_sink()'s thread (its writer runs start an
// io_context thread each and join it); owns the report being built, the runs' root folder
// (removed at the end unless ConformanceOptions::keep_files) and their numbering; borrows the
// factory and the options for its lifetime. Its runs: sink_conformance.cpp (the order),
// direct_run.cpp, writer_run.cpp.
#pragma once

#include "conformance_report.hpp"

#include <jsonlw/durability.hpp>
#include <jsonlw/testing/sink_conformance.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace jsonlw::testing::conformance {

class Checker {
public:
    Checker(const SinkFactory& make, const ConformanceOptions& opts);
    ~Checker();

    // The direct run, a plain writer run under each durability, then the faults run.
    ConformanceReport run();

private:
    std::filesystem::path fresh_dir(std::string_view name);
    // The factory's sink, or none (lifecycle.start failed).
    std::shared_ptr<LineSink> make_sink(const std::string& run);

    void run_direct();
    void run_writer(Durability mode, bool faults);

    const SinkFactory& make_;
    const ConformanceOptions& opts_;
    std::filesystem::path root_;
    unsigned runs_ = 0;
    ReportBuilder report_;
};

}  // namespace jsonlw::testing::conformance
