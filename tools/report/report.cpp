#include <jsonlw/report/report.hpp>
#include <jsonlw/report/detail/otlp_lines.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace jsonlw::tools {

namespace fs = std::filesystem;

namespace {

// Part of one file: the lines that start in [begin, end).
struct Part {
    std::size_t file = 0;
    std::size_t index = 0;  // within its file
    std::uint64_t begin = 0, end = 0;
};

struct PartResult {
    std::uint64_t lines = 0, valid = 0, malformed = 0, torn_tail_bytes = 0, otlp_lines = 0;
    std::array<std::uint64_t, record_kind_count> kinds{};
    std::vector<MalformedLine> malformed_lines;  // line = index within the part, 1-based
    std::string error;
};

// What one reader thread owns: its parser and its own accumulators, merged at the end.
struct Reader {
    explicit Reader(bool verify_logits) : raw(verify_logits) {}
    simdjson::dom::parser parser;
    simdjson::dom::parser record_parser;  // the records of an OTLP line
    OtlpRecords otlp;
    PerfAccumulator perf;
    RawOutputAccumulator raw;
    TraceAccumulator trace;
    TraceparentJoin join;

    // One valid record: counted by kind and added to the accumulators.
    void take(simdjson::dom::element root, PartResult& out, std::uint64_t order)
    {
        ++out.valid;
        const RecordKind kind = classify(root);
        ++out.kinds[static_cast<std::size_t>(kind)];
        simdjson::dom::object obj;
        if (kind == RecordKind::other || root.get(obj) != simdjson::SUCCESS) return;
        switch (kind) {
        case RecordKind::perf_worker: perf.add_worker(obj, order); break;
        case RecordKind::perf_disagg: perf.add_disagg(obj, order); break;
        case RecordKind::raw_output: raw.add(obj); break;
        case RecordKind::trace_request: trace.add_request(obj); break;
        case RecordKind::trace_response: trace.add_response(obj); break;
        case RecordKind::other: break;
        }
        join.add(obj, kind);
    }

    void read(const fs::path& path, std::size_t file_index, const Part& part, PartResult& out,
              Progress& progress)
    {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            out.error = std::error_code(errno, std::generic_category()).message();
            progress.advance(part.end - part.begin);
            return;
        }
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        LineScanner scanner(fd, part.begin, part.end);
        std::string_view line;
        std::uint64_t offset = 0, reported = 0;
        // Lines ordered across files for "the first N requests": file index, then offset.
        const std::uint64_t order_base = static_cast<std::uint64_t>(file_index) << 40;
        while (scanner.next(line, offset)) {
            ++out.lines;
            simdjson::dom::element root;
            const auto err = line.empty()
                                 ? simdjson::EMPTY
                                 : parser.parse(reinterpret_cast<const std::uint8_t*>(line.data()),
                                                line.size(), false)
                                       .get(root);
            if (err != simdjson::SUCCESS) {
                ++out.malformed;
                if (out.malformed_lines.size() < FileIntegrity::max_listed)
                    out.malformed_lines.push_back(
                        {out.lines, offset, line.empty() ? "empty line" : simdjson::error_message(err)});
            } else if (is_otlp_logs(root)) {
                // One LogsData line: its records, read as if each were a line of their own.
                ++out.otlp_lines;
                const bool whole = otlp.decode(root);
                for (std::size_t i = 0; i < otlp.size(); ++i) {
                    simdjson::dom::element rec;
                    const std::string_view text = otlp.record(i);
                    if (record_parser.parse(text.data(), text.size()).get(rec) == simdjson::SUCCESS)
                        take(rec, out, order_base + offset + i);
                }
                if (!whole) {
                    ++out.malformed;
                    if (out.malformed_lines.size() < FileIntegrity::max_listed)
                        out.malformed_lines.push_back({out.lines, offset, "OTLP: " + otlp.error()});
                }
            } else {
                take(root, out, order_base + offset);
            }
            if (scanner.consumed() - reported >= (1u << 20)) {
                progress.advance(scanner.consumed() - reported);
                reported = scanner.consumed();
            }
        }
        out.torn_tail_bytes = scanner.torn_tail().size();
        if (scanner.error()) out.error = scanner.error().message();
        ::close(fd);
        const std::uint64_t span = part.end == LineScanner::to_eof ? scanner.consumed() : part.end - part.begin;
        if (span > reported) progress.advance(span - reported);
    }
};

}  // namespace

bool Report::has_integrity_problems() const noexcept
{
    if (malformed > 0 || !errors.empty()) return true;
    for (const auto& f : files)
        if (!f.error.empty()) return true;
    for (const auto& s : sidecars)
        if (!s.consistent) return true;
    return false;
}

Report build_report(const ReportOptions& options)
{
    Report r;
    r.dir = options.dir;
    std::error_code ec;
    if (!fs::is_directory(options.dir, ec))
        throw std::runtime_error(options.dir.string() + ": not a readable directory" +
                                 (ec ? " (" + ec.message() + ")" : std::string()));
    const auto started = std::chrono::steady_clock::now();

    const std::vector<fs::path> paths = find_jsonl_files(options.dir, r.errors);
    std::vector<Part> parts;
    r.files.resize(paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) {
        FileIntegrity& f = r.files[i];
        f.path = paths[i];
        f.name = paths[i].lexically_relative(options.dir).generic_string();
        const auto size = fs::file_size(paths[i], ec);
        f.bytes = ec ? 0 : size;
        r.bytes += f.bytes;
        const std::uint64_t n = std::max<std::uint64_t>(1, f.bytes / std::max<std::uint64_t>(options.part_bytes, 1));
        for (std::uint64_t k = 0; k < n; ++k)
            parts.push_back({i, static_cast<std::size_t>(k), f.bytes / n * k,
                             k + 1 == n ? LineScanner::to_eof : f.bytes / n * (k + 1)});
    }
    // Biggest parts first, so no thread is left with a big one at the end.
    std::vector<std::size_t> schedule(parts.size());
    for (std::size_t i = 0; i < schedule.size(); ++i) schedule[i] = i;
    const auto part_size = [&](const Part& p) {
        return (p.end == LineScanner::to_eof ? r.files[p.file].bytes : p.end) - p.begin;
    };
    std::stable_sort(schedule.begin(), schedule.end(), [&](std::size_t a, std::size_t b) {
        return part_size(parts[a]) > part_size(parts[b]);
    });

    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    r.threads = static_cast<unsigned>(std::clamp<std::size_t>(
        options.jobs ? options.jobs : hw, 1, std::max<std::size_t>(parts.size(), 1)));

    std::vector<PartResult> results(parts.size());
    std::vector<std::unique_ptr<Reader>> readers;
    for (unsigned t = 0; t < r.threads; ++t) readers.push_back(std::make_unique<Reader>(options.verify_logits));
    {
        Progress progress("jsonlw report", r.bytes, options.progress);
        std::atomic<std::size_t> next{0};
        std::mutex failure_mu;
        std::exception_ptr failure;
        const auto work = [&](Reader& reader) {
            try {
                for (std::size_t k; (k = next.fetch_add(1)) < schedule.size();) {
                    const Part& p = parts[schedule[k]];
                    reader.read(r.files[p.file].path, p.file, p, results[schedule[k]], progress);
                }
            } catch (...) {
                std::lock_guard lock(failure_mu);
                if (!failure) failure = std::current_exception();
                next.store(schedule.size());
            }
        };
        std::vector<std::thread> threads;
        for (unsigned t = 1; t < r.threads; ++t) threads.emplace_back(work, std::ref(*readers[t]));
        work(*readers[0]);
        for (auto& t : threads) t.join();
        progress.finish();
        if (failure) std::rethrow_exception(failure);
    }

    // Parts back into files, in order: line numbers become file-wide.
    std::vector<std::uint64_t> lines_before(r.files.size(), 0);
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const Part& p = parts[i];
        PartResult& pr = results[i];
        FileIntegrity& f = r.files[p.file];
        for (auto& m : pr.malformed_lines) {
            if (f.malformed_lines.size() >= FileIntegrity::max_listed) break;
            m.line += lines_before[p.file];
            f.malformed_lines.push_back(std::move(m));
        }
        lines_before[p.file] += pr.lines;
        f.lines += pr.lines;
        f.valid += pr.valid;
        f.otlp_lines += pr.otlp_lines;
        f.malformed += pr.malformed;
        f.torn_tail_bytes += pr.torn_tail_bytes;
        for (std::size_t k = 0; k < record_kind_count; ++k) f.kinds[k] += pr.kinds[k];
        if (f.error.empty() && !pr.error.empty()) f.error = pr.error;
    }
    for (const auto& f : r.files) {
        r.lines += f.lines;
        r.valid += f.valid;
        r.otlp_lines += f.otlp_lines;
        r.malformed += f.malformed;
        r.torn_tails += f.torn_tail_bytes > 0 ? 1 : 0;
    }

    for (std::size_t t = 1; t < readers.size(); ++t) {
        readers[0]->perf.merge(std::move(readers[t]->perf));
        readers[0]->raw.merge(std::move(readers[t]->raw));
        readers[0]->trace.merge(std::move(readers[t]->trace));
        readers[0]->join.merge(std::move(readers[t]->join));
    }
    r.perf = std::move(readers[0]->perf);
    r.raw = std::move(readers[0]->raw);
    r.trace = std::move(readers[0]->trace);
    r.join = std::move(readers[0]->join);
    readers.clear();
    r.perf.finish();
    r.trace.finish();
    r.join.finish();
    for (std::size_t s = 0; s < perf_source_count; ++s)
        for (std::size_t k = 0; k < span_count; ++k)
            r.perf_summary[s][k] = summarize(r.perf.spans[s][k].values);
    r.frames_per_output = summarize(r.raw.frames_per_output.values);
    r.tokens_per_output = summarize(r.raw.tokens_per_output.values);
    r.mean_logprob_per_output = summarize(r.raw.mean_logprob_per_output.values);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    for (const fs::path& s : find_trace_sidecars(options.dir)) r.sidecars.push_back(check_sidecar(s, options.dir));
    return r;
}

}  // namespace jsonlw::tools
