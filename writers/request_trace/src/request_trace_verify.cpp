#include <jsonlw/request_trace_verify.hpp>
#include <jsonlw/request_trace_writer.hpp>

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string_view>

namespace jsonlw {
namespace {

bool blank(std::string_view line) noexcept
{
    return std::all_of(line.begin(), line.end(), [](char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\0';
    });
}

std::uint64_t get_u64(simdjson::dom::element obj, const char* key, std::string& error)
{
    std::uint64_t v = 0;
    if (obj[key].get_uint64().get(v) != simdjson::SUCCESS && error.empty())
        error = fmt::format("sidecar: missing or bad '{}'", key);
    return v;
}

// Reads [start, end) of `path`; an error when the file is missing or shorter than `end`.
bool read_range(const std::filesystem::path& path, std::uint64_t start, std::uint64_t end,
                std::string& out, std::string& error)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = fmt::format("cannot open {}", path.native());
        return false;
    }
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::uint64_t>(in.tellg());
    if (size < end) {
        error = fmt::format("{} has {} bytes, fewer than persisted_end {}", path.native(), size,
                            end);
        return false;
    }
    out.assign(static_cast<std::size_t>(end - start), '\0');
    in.seekg(static_cast<std::streamoff>(start));
    in.read(out.data(), static_cast<std::streamsize>(out.size()));
    if (!in) {
        error = fmt::format("cannot read {}", path.native());
        return false;
    }
    return true;
}

}  // namespace

VerifyReport verify_request_trace_shards(const std::filesystem::path& sidecar_file)
{
    VerifyReport report;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    {
        std::ifstream in(sidecar_file, std::ios::binary);
        if (!in) {
            report.error = fmt::format("cannot open {}", sidecar_file.native());
            return report;
        }
        const std::string text((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        if (const auto err = parser.parse(text).get(doc)) {
            report.error = fmt::format("sidecar is not JSON: {}", simdjson::error_message(err));
            return report;
        }
    }
    std::string_view schema;
    if (doc["schema"].get_string().get(schema) != simdjson::SUCCESS ||
        schema != RequestTraceWriter::sidecar_schema) {
        report.error = "sidecar: not a jsonlw-request-trace-writer/1 document";
        return report;
    }
    simdjson::dom::array shards;
    simdjson::dom::element counts;
    if (doc["shards"].get_array().get(shards) != simdjson::SUCCESS ||
        doc["counts"].get(counts) != simdjson::SUCCESS) {
        report.error = "sidecar: missing 'shards' or 'counts'";
        return report;
    }
    // Copy what the rest needs: the line parser below reuses its own buffers.
    struct Extent {
        std::uint64_t start, landed;
    };
    struct Shard {
        std::string file;
        std::uint64_t start = 0, end = 0, persisted = 0;
        std::vector<Extent> extents;
    };
    std::vector<Shard> list;
    for (simdjson::dom::element s : shards) {
        Shard sh;
        std::string_view file;
        if (s["file"].get_string().get(file) != simdjson::SUCCESS) {
            report.error = "sidecar: shard without 'file'";
            return report;
        }
        sh.file = std::string(file);
        sh.start = get_u64(s, "start_offset", report.error);
        sh.end = get_u64(s, "persisted_end", report.error);
        sh.persisted = get_u64(s, "persisted_records", report.error);
        simdjson::dom::array extents;
        if (s["unknown_extents"].get_array().get(extents) == simdjson::SUCCESS)
            for (simdjson::dom::element e : extents)
                sh.extents.push_back({get_u64(e, "start", report.error),
                                      get_u64(e, "landed", report.error)});
        if (!report.error.empty()) return report;
        list.push_back(std::move(sh));
    }
    std::string err;
    const std::uint64_t submitted = get_u64(counts, "submitted", err);
    const std::uint64_t persisted = get_u64(counts, "persisted", err);
    const std::uint64_t unknown = get_u64(counts, "unknown", err);
    const std::uint64_t pending = get_u64(counts, "pending", err);
    std::uint64_t dropped = 0;
    simdjson::dom::object drops;
    if (counts["dropped"].get_object().get(drops) == simdjson::SUCCESS)
        for (auto [key, value] : drops) {
            std::uint64_t v = 0;
            if (value.get_uint64().get(v) == simdjson::SUCCESS) dropped += v;
        }
    std::uint64_t shard_sum = 0;
    for (const Shard& s : list) shard_sum += s.persisted;
    report.counts_consistent = err.empty() &&
                               submitted == persisted + dropped + unknown + pending &&
                               shard_sum == persisted;

    const std::filesystem::path dir = sidecar_file.parent_path().parent_path();
    simdjson::dom::parser lines;
    std::string bytes;
    report.consistent = true;
    for (const Shard& s : list) {
        ShardVerification v;
        v.file = s.file;
        v.persisted_records = s.persisted;
        if (s.end < s.start) {
            v.error = "persisted_end before start_offset";
        } else if (read_range(dir / s.file, s.start, s.end, bytes, v.error)) {
            for (const Extent& e : s.extents) {
                const std::uint64_t from = std::max(e.start, s.start);
                const std::uint64_t to = std::min(e.start + e.landed, s.end);
                if (from < to)
                    std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from - s.start),
                              bytes.begin() + static_cast<std::ptrdiff_t>(to - s.start), ' ');
            }
            std::string_view rest(bytes);
            while (!rest.empty()) {
                const std::size_t nl = rest.find('\n');
                const std::string_view line = rest.substr(0, nl);
                rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
                if (blank(line)) continue;
                simdjson::dom::element parsed;
                if (lines.parse(line.data(), line.size(), true).get(parsed) == simdjson::SUCCESS)
                    ++v.records;
                else
                    ++v.bad;
            }
        }
        v.consistent = v.error.empty() && v.bad == 0 && v.records == v.persisted_records;
        report.consistent = report.consistent && v.consistent;
        report.records += v.records;
        report.bad += v.bad;
        report.shards.push_back(std::move(v));
    }
    return report;
}

}  // namespace jsonlw
