#include <jsonlw/report/detail/report_read.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace jsonlw::tools {

namespace fs = std::filesystem;

LineScanner::LineScanner(int fd, std::uint64_t begin, std::uint64_t end, std::size_t chunk_bytes)
    : fd_(fd),
      end_(end),
      start_(begin),
      buf_(chunk_bytes + simdjson::SIMDJSON_PADDING),
      chunk_(chunk_bytes),
      offset_(begin),
      read_pos_(begin),
      aligned_(begin == 0)
{
    if (begin > 0) {
        // Does a line start exactly at `begin`? Only if the byte before it is '\n'.
        char prev = 0;
        ssize_t n;
        do n = ::pread(fd_, &prev, 1, static_cast<off_t>(begin - 1));
        while (n < 0 && errno == EINTR);
        if (n < 0) error_.assign(errno, std::generic_category()), done_ = true;
        aligned_ = n == 1 && prev == '\n';
    }
}

bool LineScanner::fill()
{
    if (eof_ || error_) return false;
    // Keep the unread bytes (a line being read) at the front; grow for a line longer than
    // the buffer.
    if (head_ > 0) {
        std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
        tail_ -= head_;
        head_ = 0;
    }
    if (tail_ + chunk_ / 2 > buf_.size() - simdjson::SIMDJSON_PADDING)
        buf_.resize(std::max(buf_.size() * 2, tail_ + chunk_ + simdjson::SIMDJSON_PADDING));
    const std::size_t room = buf_.size() - simdjson::SIMDJSON_PADDING - tail_;
    ssize_t n;
    do n = ::pread(fd_, buf_.data() + tail_, room, static_cast<off_t>(read_pos_));
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        error_.assign(errno, std::generic_category());
        return false;
    }
    if (n == 0) {
        eof_ = true;
        return false;
    }
    tail_ += static_cast<std::size_t>(n);
    read_pos_ += static_cast<std::uint64_t>(n);
    // simdjson may read the padding: keep it defined.
    std::memset(buf_.data() + tail_, ' ', simdjson::SIMDJSON_PADDING);
    return true;
}

bool LineScanner::next(std::string_view& line, std::uint64_t& offset)
{
    while (!done_) {
        if (aligned_ && offset_ >= end_) {  // the next line belongs to the next range
            done_ = true;
            break;
        }
        const char* base = buf_.data() + head_;
        const auto* nl = static_cast<const char*>(std::memchr(base, '\n', tail_ - head_));
        if (nl != nullptr) {
            const auto len = static_cast<std::size_t>(nl - base);
            const std::uint64_t at = offset_;
            head_ += len + 1;
            offset_ += len + 1;
            if (!aligned_) {  // the rest of a line that began in the previous range
                aligned_ = true;
                continue;
            }
            line = std::string_view(base, len);
            offset = at;
            return true;
        }
        if (fill()) continue;
        done_ = true;
        if (aligned_ && tail_ > head_) {
            torn_ = std::string_view(buf_.data() + head_, tail_ - head_);
            torn_offset_ = offset_;
        }
        offset_ += tail_ - head_;
        head_ = tail_;
    }
    return false;
}

const char* record_kind_name(RecordKind k) noexcept
{
    switch (k) {
    case RecordKind::perf_worker: return "perf_metrics";
    case RecordKind::perf_disagg: return "perf_metrics_disagg";
    case RecordKind::raw_output: return "raw_output";
    case RecordKind::trace_request: return "trace_request";
    case RecordKind::trace_response: return "trace_response";
    case RecordKind::other: return "other";
    }
    return "other";
}

RecordKind classify(simdjson::dom::element root) noexcept
{
    simdjson::dom::object obj;
    if (root.get(obj) != simdjson::SUCCESS) return RecordKind::other;
    std::string_view event;
    bool trace_id = false, perf = false, disagg = false;
    for (const auto field : obj) {
        const std::string_view k = field.key;
        if (k == "event") {
            if (field.value.get(event) != simdjson::SUCCESS) event = {};
            if (event == "raw_output") return RecordKind::raw_output;
        } else if (k == "trace_id") {
            trace_id = true;
        } else if (k == "perf_metrics") {
            perf = true;
        } else if (k == "ctx_server" || k == "ctx_perf_metrics" || k == "gen_perf_metrics") {
            disagg = true;
        }
    }
    if (trace_id && event == "request") return RecordKind::trace_request;
    if (trace_id && event == "response") return RecordKind::trace_response;
    if (disagg) return RecordKind::perf_disagg;
    if (perf) return RecordKind::perf_worker;
    return RecordKind::other;
}

std::string FileIntegrity::kind_label() const
{
    std::uint64_t best = 0, total = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        total += kinds[i];
        if (kinds[i] > best) best = kinds[i], at = i;
    }
    if (total == 0) return "empty";
    // The two perf shapes and the two trace kinds may share a file legitimately.
    const auto label = std::string(record_kind_name(static_cast<RecordKind>(at)));
    return best == total ? label : label + "+";
}

bool is_open_jsonl(const fs::path& path)
{
    return path.extension() == ".open" && path.stem().extension() == ".jsonl";
}

std::vector<fs::path> find_jsonl_files(const fs::path& dir, std::vector<std::string>& errors, JsonlFiles which)
{
    std::vector<fs::path> out;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
        errors.push_back(dir.string() + ": " + ec.message());
        return out;
    }
    for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
        if (ec) {
            errors.push_back(it->path().string() + ": " + ec.message());
            ec.clear();
            continue;
        }
        std::error_code sec;
        const fs::path& p = it->path();
        const bool wanted = p.extension() == ".jsonl" || (which == JsonlFiles::with_open && is_open_jsonl(p));
        if (wanted && it->is_regular_file(sec)) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<fs::path> find_trace_sidecars(const fs::path& dir)
{
    std::vector<fs::path> out;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
        const fs::path& p = it->path();
        std::error_code sec;
        if (p.extension() == ".json" && p.parent_path().filename() == "_writer" &&
            p.filename().string().front() != '.' && it->is_regular_file(sec))
            out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace jsonlw::tools
