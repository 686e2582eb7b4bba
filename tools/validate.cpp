#include "validate.hpp"

#include "commands.hpp"

#include <jsonlw/report/detail/otlp_lines.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

namespace jsonlw::tools {

std::vector<ValidateInput> validate_inputs(const std::vector<std::filesystem::path>& args,
                                           std::vector<std::string>& errors)
{
    std::vector<ValidateInput> out;
    for (const auto& arg : args) {
        std::error_code ec;
        if (!std::filesystem::is_directory(arg, ec)) {  // a file, "-" or a missing path: read it
            out.push_back({arg, is_open_jsonl(arg)});
            continue;
        }
        const std::size_t errors_before = errors.size();
        const auto found = find_jsonl_files(arg, errors, JsonlFiles::with_open);
        if (found.empty() && errors.size() == errors_before)
            errors.push_back(arg.string() + ": no *.jsonl or *.jsonl.open file under it");
        for (const auto& f : found) out.push_back({f, is_open_jsonl(f)});
    }
    return out;
}

ValidateResult validate_file(const std::filesystem::path& path, bool still_written)
{
    ValidateResult r;
    r.file = path.string();
    r.still_written = still_written;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r.error = std::error_code(errno, std::generic_category()).message();
        return r;
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    simdjson::dom::parser parser;
    OtlpRecords otlp;
    LineScanner scanner(fd, 0);
    std::string_view line;
    std::uint64_t offset = 0;
    while (scanner.next(line, offset)) {
        ++r.lines;
        simdjson::dom::element root;
        const auto err = line.empty() ? simdjson::EMPTY
                                      : parser.parse(reinterpret_cast<const std::uint8_t*>(line.data()),
                                                     line.size(), false)
                                            .get(root);
        if (err == simdjson::SUCCESS && !is_otlp_logs(root)) {
            ++r.valid;
            continue;
        }
        // An OTLP LogsData line is valid when it follows the OTLP JSON rules too (docs/otlp.md).
        if (err == simdjson::SUCCESS) {
            ++r.otlp_lines;
            if (otlp.decode(root)) {
                ++r.valid;
                r.otlp_records += otlp.size();
                continue;
            }
        }
        ++r.malformed;
        if (r.problems.size() < ValidateResult::max_problems)
            r.problems.push_back({r.lines, offset,
                                  err != simdjson::SUCCESS
                                      ? (line.empty() ? std::string("empty line") : simdjson::error_message(err))
                                      : "OTLP: " + otlp.error()});
    }
    r.torn_tail_bytes = scanner.torn_tail().size();
    if (r.torn_tail_bytes) r.torn_tail_line = r.lines + 1;
    if (scanner.error()) r.error = scanner.error().message();
    ::close(fd);
    return r;
}

int validate_exit_status(const std::vector<ValidateResult>& results, bool allow_torn_tail) noexcept
{
    bool malformed = false, torn = false, unreadable = false;
    for (const auto& r : results) {
        malformed = malformed || r.malformed > 0;
        torn = torn || (r.torn_tail_bytes > 0 && !r.still_written);
        unreadable = unreadable || !r.error.empty();
    }
    if (malformed) return 1;
    if (torn && !allow_torn_tail) return 2;
    if (unreadable) return 3;
    return 0;
}

int validate_main(std::span<char*> args)
{
    bool allow_torn = false, quiet = false;
    std::vector<std::filesystem::path> paths;
    bool options_done = false;
    for (const char* a : args) {
        const std::string_view arg(a);
        if (!options_done && arg == "--allow-torn-tail") allow_torn = true;
        else if (!options_done && (arg == "-q" || arg == "--quiet")) quiet = true;
        else if (!options_done && arg == "--") options_done = true;
        else if (!options_done && arg.starts_with("-") && arg != "-") {
            fmt::print(stderr, "jsonlw validate: unknown option '{}' (see jsonlw help validate)\n", arg);
            return 3;
        } else paths.emplace_back(arg == "-" ? "/dev/stdin" : a);
    }
    if (paths.empty()) {
        fmt::print(stderr, "jsonlw validate: no FILE or DIR given (see jsonlw help validate)\n");
        return 3;
    }
    std::vector<std::string> walk_errors;
    const std::vector<ValidateInput> inputs = validate_inputs(paths, walk_errors);
    for (const auto& e : walk_errors) fmt::print(stderr, "jsonlw validate: {}\n", e);
    std::vector<ValidateResult> results;
    std::uint64_t lines = 0, valid = 0, malformed = 0, torn_closed = 0, torn_open = 0;
    for (const auto& in : inputs) {
        results.push_back(validate_file(in.path, in.still_written));
        const ValidateResult& r = results.back();
        if (!r.error.empty()) {
            fmt::print(stderr, "{}: error: {}\n", r.file, r.error);
            continue;
        }
        const std::string_view expected_torn = r.still_written ? " (still being written)"
                                               : allow_torn    ? " (allowed)"
                                                               : "";
        for (const auto& p : r.problems) fmt::print("{}:{}: malformed: {}\n", r.file, p.line, p.error);
        if (r.malformed > r.problems.size())
            fmt::print("{}: ... {} more malformed lines\n", r.file, r.malformed - r.problems.size());
        if (r.torn_tail_bytes && !(quiet && r.still_written))
            fmt::print("{}:{}: torn tail: {} bytes after the last newline{}\n", r.file, r.torn_tail_line,
                       r.torn_tail_bytes, expected_torn);
        if (!quiet)
            fmt::print("{}: {} lines, {} valid, {} malformed, torn tail {}{}\n", r.file, r.lines, r.valid, r.malformed,
                       r.torn_tail_bytes ? fmt::format("{} B{}", r.torn_tail_bytes,
                                                       r.still_written ? " (still being written)" : "")
                                         : "none",
                       r.otlp_lines ? fmt::format("; {} OTLP LogsData lines holding {} log records",
                                                  r.otlp_lines, r.otlp_records)
                                    : "");
        lines += r.lines;
        valid += r.valid;
        malformed += r.malformed;
        if (r.torn_tail_bytes) ++(r.still_written ? torn_open : torn_closed);
    }
    if (!quiet && inputs.size() > 1)
        fmt::print("{} files: {} lines, {} valid, {} malformed, {} torn tail{}{}\n", inputs.size(), lines, valid,
                   malformed, torn_closed, torn_closed == 1 ? "" : "s",
                   torn_open ? fmt::format(" (+{} still being written)", torn_open) : "");
    std::fflush(stdout);
    const int status = validate_exit_status(results, allow_torn);
    return status == 0 && !walk_errors.empty() ? 3 : status;
}

}  // namespace jsonlw::tools
