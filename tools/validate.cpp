#include "validate.hpp"

#include "commands.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

namespace jsonlw::tools {

ValidateResult validate_file(const std::filesystem::path& path)
{
    ValidateResult r;
    r.file = path.string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r.error = std::error_code(errno, std::generic_category()).message();
        return r;
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    simdjson::dom::parser parser;
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
        if (err == simdjson::SUCCESS) {
            ++r.valid;
            continue;
        }
        ++r.malformed;
        if (r.problems.size() < ValidateResult::max_problems)
            r.problems.push_back({r.lines, offset, line.empty() ? "empty line" : simdjson::error_message(err)});
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
        torn = torn || r.torn_tail_bytes > 0;
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
    std::vector<std::filesystem::path> files;
    bool options_done = false;
    for (const char* a : args) {
        const std::string_view arg(a);
        if (!options_done && arg == "--allow-torn-tail") allow_torn = true;
        else if (!options_done && (arg == "-q" || arg == "--quiet")) quiet = true;
        else if (!options_done && arg == "--") options_done = true;
        else if (!options_done && arg.starts_with("-") && arg != "-") {
            fmt::print(stderr, "jsonlw validate: unknown option '{}' (see jsonlw help validate)\n", arg);
            return 3;
        } else files.emplace_back(arg == "-" ? "/dev/stdin" : a);
    }
    if (files.empty()) {
        fmt::print(stderr, "jsonlw validate: no FILE given (see jsonlw help validate)\n");
        return 3;
    }
    std::vector<ValidateResult> results;
    for (const auto& f : files) {
        results.push_back(validate_file(f));
        const ValidateResult& r = results.back();
        if (!r.error.empty()) {
            fmt::print(stderr, "{}: error: {}\n", r.file, r.error);
            continue;
        }
        for (const auto& p : r.problems) fmt::print("{}:{}: malformed: {}\n", r.file, p.line, p.error);
        if (r.malformed > r.problems.size())
            fmt::print("{}: ... {} more malformed lines\n", r.file, r.malformed - r.problems.size());
        if (r.torn_tail_bytes)
            fmt::print("{}:{}: torn tail: {} bytes after the last newline{}\n", r.file, r.torn_tail_line,
                       r.torn_tail_bytes, allow_torn ? " (allowed)" : "");
        if (!quiet)
            fmt::print("{}: {} lines, {} valid, {} malformed, torn tail {}\n", r.file, r.lines, r.valid,
                       r.malformed, r.torn_tail_bytes ? fmt::format("{} B", r.torn_tail_bytes) : "none");
    }
    std::fflush(stdout);
    return validate_exit_status(results, allow_torn);
}

}  // namespace jsonlw::tools
