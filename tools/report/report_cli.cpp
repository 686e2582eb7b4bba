// report_main: the `jsonlw report` command line (options in tools/main.cpp's help text).
#include <jsonlw/report/report.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string_view>

namespace jsonlw::tools {

namespace {

constexpr int exit_ok = 0, exit_findings = 1, exit_usage = 2;

bool write_file(const std::string& path, const std::string& text)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.close();
    return static_cast<bool>(f);
}

int bench_baseline(const ReportOptions& opts)
{
    std::vector<std::string> errors;
    const auto files = find_jsonl_files(opts.dir, errors);
    // The baseline first and the report second read the same bytes, both from the page cache
    // after a warm-up pass.
    (void)iterate_many_baseline(files);
    const BaselineResult base = iterate_many_baseline(files);
    ReportOptions quiet = opts;
    quiet.progress.enabled = false;
    const Report r = build_report(quiet);
    const double report_mb_s = r.seconds > 0 ? static_cast<double>(r.bytes) / 1e6 / r.seconds : 0;
    fmt::print("iterate_many baseline: {} files, {} bytes, {} documents, {:.3f} s, {:.0f} MB/s{}\n",
               files.size(), base.bytes, base.documents, base.seconds, base.mb_per_s(),
               base.error.empty() ? "" : " (stopped: " + base.error + ")");
    fmt::print("jsonlw report:         {} files, {} bytes, {} lines, {:.3f} s, {:.0f} MB/s, {} threads\n",
               r.files.size(), r.bytes, r.lines, r.seconds, report_mb_s, r.threads);
    fmt::print("report / baseline:     {:.2f}\n", base.mb_per_s() > 0 ? report_mb_s / base.mb_per_s() : 0.0);
    return exit_ok;
}

}  // namespace

int report_main(std::span<char*> args)
{
    ReportOptions opts;
    std::optional<std::string> html;
    bool json = false, baseline = false;
    std::optional<std::string> dir;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a(args[i]);
        const auto value = [&]() -> std::optional<std::string_view> {
            if (i + 1 >= args.size()) return std::nullopt;
            return std::string_view(args[++i]);
        };
        if (a == "--html") {
            const auto v = value();
            if (!v) return fmt::print(stderr, "jsonlw report: --html needs a FILE\n"), exit_usage;
            html = std::string(*v);
        } else if (a == "--json") {
            json = true;
        } else if (a == "--jobs" || a == "-j") {
            const auto v = value();
            unsigned n = 0;
            if (!v || std::from_chars(v->data(), v->data() + v->size(), n).ec != std::errc() || n == 0 || n > 1024)
                return fmt::print(stderr, "jsonlw report: --jobs needs a number from 1 to 1024\n"), exit_usage;
            opts.jobs = n;
        } else if (a == "--quiet" || a == "-q") {
            opts.progress.enabled = false;
        } else if (a == "--verify-logits") {
            opts.verify_logits = true;
        } else if (a == "--bench-baseline") {  // hidden: for measuring, see docs/tools.md
            baseline = true;
        } else if (a.starts_with("-")) {
            return fmt::print(stderr, "jsonlw report: unknown option '{}' (see jsonlw help report)\n", a), exit_usage;
        } else if (!dir) {
            dir = std::string(a);
        } else {
            return fmt::print(stderr, "jsonlw report: one DIR only, got '{}' too\n", a), exit_usage;
        }
    }
    if (!dir) return fmt::print(stderr, "jsonlw report: no DIR given (see jsonlw help report)\n"), exit_usage;
    opts.dir = *dir;
    try {
        if (baseline) return bench_baseline(opts);
        const Report r = build_report(opts);
        const std::string text = json ? report_json(r) : report_text(r);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        if (html && !write_file(*html, report_html(r)))
            return fmt::print(stderr, "jsonlw report: cannot write {}\n", *html), exit_usage;
        return r.has_integrity_problems() ? exit_findings : exit_ok;
    } catch (const std::bad_alloc&) {
        fmt::print(stderr, "jsonlw report: out of memory\n");
        return exit_usage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "jsonlw report: {}\n", e.what());
        return exit_usage;
    }
}

}  // namespace jsonlw::tools
