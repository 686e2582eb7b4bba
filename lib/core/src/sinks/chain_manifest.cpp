// The chain manifest (<jsonlw/chain_manifest.hpp>): reading it and a file's last chain value,
// and ChainManifestWriter, which appends ChainSink's events to it.
#include <jsonlw/chain_manifest.hpp>
#include <jsonlw/utc_time.hpp>

#include "chain_manifest_writer.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace jsonlw {

namespace {

constexpr std::string_view chain_key = "\"chain\":\"";

bool is_value(std::string_view s) noexcept
{
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
}

// The chain value at the end of `line` (without its newline), as seal() lays it out.
std::optional<std::string> value_of(std::string_view line)
{
    constexpr std::size_t tail = chain_key.size() + 64 + 2;  // "chain":"<V>"}
    if (line.size() < tail + 1) return std::nullopt;
    const std::string_view t = line.substr(line.size() - tail);
    if (t.substr(0, chain_key.size()) != chain_key || t.substr(tail - 2) != "\"}")
        return std::nullopt;
    const std::string_view v = t.substr(chain_key.size(), 64);
    if (!is_value(v)) return std::nullopt;
    return std::string(v);
}

std::string json_string(std::string_view s)
{
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
            out.push_back(c);
        }
    }
    out.push_back('"');
    return out;
}

}  // namespace

const char* chain_mode_name(ChainMode mode) noexcept
{
    switch (mode) {
    case ChainMode::sha256: return "sha256";
    case ChainMode::hmac_sha256: return "hmac-sha256";
    case ChainMode::none: break;
    }
    return "none";
}

std::optional<ChainMode> parse_chain_mode(std::string_view name) noexcept
{
    if (name == "none") return ChainMode::none;
    if (name == "sha256") return ChainMode::sha256;
    if (name == "hmac-sha256") return ChainMode::hmac_sha256;
    return std::nullopt;
}

std::filesystem::path chain_manifest_path(const std::filesystem::path& directory,
                                          const std::string& stem)
{
    return directory / (stem + ".chain");
}

ChainManifest read_chain_manifest(const std::filesystem::path& path)
{
    ChainManifest m;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return m;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(errno));
    simdjson::dom::parser parser;
    std::size_t n = 0;
    auto bad = [&](std::string why) {
        if (!m.bad_line) {
            m.bad_line = n;
            m.bad_reason = std::move(why);
        }
    };
    for (std::string text; std::getline(in, text);) {
        ++n;
        if (in.eof()) {
            bad("torn last line (no newline)");
            break;
        }
        simdjson::dom::element doc;
        if (parser.parse(text).get(doc) != simdjson::SUCCESS) {
            bad("not JSON");
            continue;
        }
        ChainManifestEvent e;
        e.line = n;
        std::string_view event, file, prev, last, mode;
        std::uint64_t records = 0;
        if (doc["event"].get(event) != simdjson::SUCCESS || doc["file"].get(file) != simdjson::SUCCESS) {
            bad("no \"event\" or \"file\"");
            continue;
        }
        e.file = std::string(file);
        if (event == "open") {
            e.kind = ChainManifestEvent::Kind::open;
            if (doc["prev"].get(prev) != simdjson::SUCCESS || !is_value(prev) ||
                doc["mode"].get(mode) != simdjson::SUCCESS || !parse_chain_mode(mode)) {
                bad("an open event without a valid \"prev\" or \"mode\"");
                continue;
            }
            e.prev = std::string(prev);
            e.mode = *parse_chain_mode(mode);
        } else if (event == "close" || event == "delete") {
            e.kind = event == "close" ? ChainManifestEvent::Kind::close
                                      : ChainManifestEvent::Kind::remove;
            if (doc["last"].get(last) != simdjson::SUCCESS || !is_value(last) ||
                doc["records"].get(records) != simdjson::SUCCESS) {
                bad("a close or delete event without a valid \"last\" or \"records\"");
                continue;
            }
            e.last = std::string(last);
            e.records = records;
        } else {
            bad("an unknown event");
            continue;
        }
        m.events.push_back(std::move(e));
    }
    return m;
}

std::optional<std::string> read_last_chain_value(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in) return std::nullopt;
    const std::streamoff size = in.tellg();
    // The value sits at the end of the last complete line: the last 4 KiB nearly always hold
    // it; a longer torn tail, or a line without a key, widens the look to 1 MiB.
    for (const std::streamoff window : {std::streamoff{4096}, std::streamoff{1} << 20}) {
        const std::streamoff want = std::min(size, window);
        std::string tail(static_cast<std::size_t>(want), '\0');
        in.clear();
        in.seekg(size - want);
        in.read(tail.data(), want);
        if (in.gcount() != want) return std::nullopt;
        // Complete lines only, newest first: a torn last line (no newline) is skipped. A line
        // cut by the window's start still shows its end, which is all value_of() reads.
        std::size_t end = tail.rfind('\n');
        while (end != std::string::npos && end > 0) {
            const std::size_t nl = tail.rfind('\n', end - 1);
            const std::size_t begin = nl == std::string::npos ? 0 : nl + 1;
            if (auto v = value_of(std::string_view(tail).substr(begin, end - begin))) return v;
            if (nl == std::string::npos) break;
            end = nl;
        }
        if (want == size) break;
    }
    return std::nullopt;
}

namespace detail {

void ChainManifestWriter::start(const SinkContext& ctx, std::filesystem::path path, ChainMode mode)
{
    ctx_ = &ctx;
    path_ = std::move(path);
    mode_ = mode;
}

void ChainManifestWriter::opened(std::string_view file, std::string_view prev) noexcept
{
    try {
        write(fmt::format(
            "{{\"event\":\"open\",\"file\":{},\"prev\":\"{}\",\"mode\":\"{}\",\"host\":{},"
            "\"pid\":{},\"time\":\"{}\"}}\n",
            json_string(file), prev, chain_mode_name(mode_), json_string(ctx_->host), ctx_->pid,
            utc_iso8601(WallClock::now())));
    } catch (...) {
        ++failures_;
    }
}

void ChainManifestWriter::closed(std::string_view file, std::uint64_t records,
                                 std::string_view last) noexcept
{
    try {
        write(fmt::format("{{\"event\":\"close\",\"file\":{},\"records\":{},\"last\":\"{}\"}}\n",
                          json_string(file), records, last));
    } catch (...) {
        ++failures_;
    }
}

void ChainManifestWriter::deleted(std::string_view file, std::uint64_t records,
                                  std::string_view last) noexcept
{
    try {
        write(fmt::format("{{\"event\":\"delete\",\"file\":{},\"records\":{},\"last\":\"{}\"}}\n",
                          json_string(file), records, last));
    } catch (...) {
        ++failures_;
    }
}

// One writev per event (O_APPEND), retried on a short write; fsync'ed when the writer's
// durability asks for any.
void ChainManifestWriter::write(const std::string& line) noexcept
{
    if (ctx_ == nullptr) return;
    FileIo& io = *ctx_->file_io;
    int err = 0;
    if (fd_ < 0) {
        fd_ = io.open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, ctx_->file_mode);
        if (fd_ < 0) err = errno;
    }
    std::size_t done = 0;
    while (err == 0 && done < line.size()) {
        iovec v{const_cast<char*>(line.data() + done), line.size() - done};
        const ssize_t n = io.writev(fd_, &v, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) err = n < 0 ? errno : EIO;
        else done += static_cast<std::size_t>(n);
    }
    if (err == 0 && ctx_->durability != Durability::none && io.fsync(fd_) != 0) err = errno;
    if (err == 0) return;
    if (failures_++ == 0)
        ctx_->write_log(LogLevel::error,
                        fmt::format("Failed to write the {} JSONL chain manifest {}: {}; the "
                                    "lines keep their chain, later failures are only counted",
                                    ctx_->subject, path_.native(), std::strerror(err)));
    if (fd_ >= 0 && done > 0) {  // a partial event: the next one starts on a new line
        io.close(fd_);
        fd_ = -1;
    }
}

void ChainManifestWriter::close() noexcept
{
    if (fd_ >= 0 && ctx_ != nullptr) ctx_->file_io->close(fd_);
    fd_ = -1;
}

}  // namespace detail

}  // namespace jsonlw
