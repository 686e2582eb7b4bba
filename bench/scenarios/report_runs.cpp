// `jsonlw report` next to a bare simdjson iterate_many pass over the same demo output. The
// demo output is made once by the jsonlw executable, then copied until it is big enough.
#include "runs.hpp"

#include <jsonlw/report/report.hpp>

#include <fmt/format.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <thread>

namespace bench {

namespace fs = std::filesystem;

ReportData make_report_data(const fs::path& dir, std::uint64_t target_bytes)
{
    ReportData d;
    d.dir = dir;
    const fs::path src = dir / "demo";
    // A fast, long demo: no simulated forward pass, arrivals as fast as the loop takes them.
    const std::string cmd = fmt::format(
        "'{}' demo --in-process --requests 4000 --rate 1000000 --step-us 0 --concurrency 128 --seed 3 "
        "--out '{}' >/dev/null 2>&1",
        JSONLW_EXE, src.string());
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
        d.problem = fmt::format("jsonlw demo failed (status {})", rc);
        return d;
    }
    std::vector<fs::path> originals;
    std::uint64_t one = 0;
    for (const auto& e : fs::recursive_directory_iterator(src))
        if (e.is_regular_file() && e.path().extension() == ".jsonl") {
            originals.push_back(e.path());
            one += e.file_size();
        }
    if (one == 0) {
        d.problem = "the demo wrote nothing";
        return d;
    }
    // Copies of the whole output under data/copy-N/ (the first copy is the demo's own files).
    const fs::path data = dir / "data";
    fs::create_directories(data);
    fs::rename(src, data / "copy-0");
    std::uint64_t total = one;
    for (int copy = 1; total < target_bytes; ++copy) {
        fs::copy(data / "copy-0", data / fmt::format("copy-{}", copy), fs::copy_options::recursive);
        total += one;
    }
    d.data = data;
    for (const auto& e : fs::recursive_directory_iterator(data))
        if (e.is_regular_file() && e.path().extension() == ".jsonl") d.files.push_back(e.path());
    d.bytes = total;
    return d;
}

ReportRunResult report_run(const ReportData& d, unsigned jobs)
{
    ReportRunResult r;
    jsonlw::tools::ReportOptions o;
    o.dir = d.data;
    o.jobs = jobs;
    o.progress.enabled = false;
    const auto t0 = std::chrono::steady_clock::now();
    const jsonlw::tools::Report rep = jsonlw::tools::build_report(o);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.bytes = rep.bytes;
    r.lines = rep.lines;
    if (rep.bytes != d.bytes) r.problem = fmt::format("report read {} of {} bytes", rep.bytes, d.bytes);
    else if (rep.malformed || rep.torn_tails) r.problem = "report found malformed lines or torn tails";
    return r;
}

ReportRunResult iterate_many_run(const ReportData& d)
{
    ReportRunResult r;
    const auto res = jsonlw::tools::iterate_many_baseline(d.files);
    r.seconds = res.seconds;
    r.bytes = res.bytes;
    r.lines = res.documents;
    if (!res.error.empty()) r.problem = res.error;
    else if (res.bytes != d.bytes) r.problem = "iterate_many did not read every byte";
    return r;
}

}  // namespace bench
