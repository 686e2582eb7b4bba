// RetentionKeeper (retention_keeper.hpp): the rules of Retention over a sink's closed files,
// oldest first — the parts of logrotate's rotate / maxsize / maxage that a writer can apply
// to its own files as it seals them.
#include "retention_keeper.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace jsonlw::detail {

RetentionKeeper::RetentionKeeper(const Retention& rules, const SinkContext& ctx,
                                 SinkCounters& counters)
    : rules_(rules), ctx_(ctx), counters_(counters)
{
}

void RetentionKeeper::sealed(const std::filesystem::path& path, std::uint64_t records,
                             clock::time_point now) noexcept
{
    try {
        const std::string& key = path.native();
        struct stat st {};
        const std::uint64_t bytes =
            ::stat(key.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
        if (auto it = index_.find(key); it != index_.end()) {
            // Sealed before, written again (a late record for its hour), sealed again: one
            // file, now as new as its last record.
            Entry& old = entries_[it->second];
            if (!old.gone) records += old.records;
            old.gone = true;
        }
        entries_.push_back({key, records, now, false, false, bytes});
        index_[key] = entries_.size() - 1;
    } catch (...) {
        // Out of memory: this file is never deleted by retention; it stays on disk.
    }
}

void RetentionKeeper::opened(const std::string& path) noexcept
{
    if (entries_.empty()) return;
    if (auto it = index_.find(path); it != index_.end()) entries_[it->second].open = true;
}

std::vector<std::string> RetentionKeeper::take_deleted() noexcept
{
    std::vector<std::string> out;
    out.swap(deleted_);
    return out;
}

void RetentionKeeper::remove(Entry& e, Rule rule) noexcept
{
    e.gone = true;
    struct stat st {};
    if (::stat(e.path.c_str(), &st) != 0) {
        // Someone else removed (or moved) it: its records are not where we put them.
        const std::uint64_t n = e.records;
        counters_.update([&](FileSinkCounters& c) { c.records_removed += n; });
        return;
    }
    ctx_.file_event(FileEvent::Kind::deleted, e.path, e.records);  // before: it can be read
    if (::unlink(e.path.c_str()) != 0) {
        const std::error_code ec{errno, std::system_category()};
        try {
            ctx_.write_log(LogLevel::warning,
                           fmt::format("Failed to delete {} JSONL file {} (retention): {}; it "
                                       "stays and is not tried again",
                                       ctx_.subject, e.path, ec.message()));
        } catch (...) {
        }
        return;
    }
    const auto bytes = static_cast<std::uint64_t>(st.st_size);
    const std::uint64_t records = e.records;
    counters_.update([&](FileSinkCounters& c) {
        ++c.files_deleted;
        c.bytes_deleted += bytes;
        c.records_deleted += records;
    });
    try {
        deleted_.push_back(e.path);
        if (!logged_[rule]) {
            logged_[rule] = true;
            static constexpr const char* names[] = {"retain_files", "retain_bytes", "retain_age"};
            const std::string limit =
                rule == by_files   ? fmt::format("{} files", rules_.retain_files)
                : rule == by_bytes ? fmt::format("{} bytes", rules_.retain_bytes)
                                   : fmt::format("{} ms", rules_.retain_age.count());
            ctx_.write_log(LogLevel::info,
                           fmt::format("Deleted closed {} JSONL file {} ({} records, {} bytes): "
                                       "{} = {}; later deletions by this rule are only counted",
                                       ctx_.subject, e.path, records, bytes, names[rule], limit));
        }
        // An hour folder emptied by the deletion goes too (rmdir refuses a folder that is
        // not empty); the writer's own directory stays.
        const std::filesystem::path parent = std::filesystem::path(e.path).parent_path();
        if (!parent.empty() && parent != ctx_.directory &&
            parent.lexically_relative(ctx_.directory).native().rfind("..", 0) != 0)
            ::rmdir(parent.c_str());
    } catch (...) {
    }
}

void RetentionKeeper::enforce(clock::time_point now) noexcept
{
    if (!active() || entries_.empty()) return;
    const auto candidate = [](const Entry& e) { return !e.gone && !e.open; };
    if (rules_.retain_age.count() > 0)
        for (Entry& e : entries_)
            if (candidate(e) && now - e.sealed_at >= rules_.retain_age) remove(e, by_age);
    if (rules_.retain_files > 0) {
        std::size_t n = 0;
        for (const Entry& e : entries_) n += candidate(e) ? 1 : 0;
        for (Entry& e : entries_) {
            if (n <= rules_.retain_files) break;
            if (!candidate(e)) continue;
            remove(e, by_files);
            --n;
        }
    }
    if (rules_.retain_bytes > 0) {
        std::uint64_t total = 0;
        for (const Entry& e : entries_) total += candidate(e) ? e.bytes : 0;
        for (Entry& e : entries_) {
            if (total <= rules_.retain_bytes) break;
            if (!candidate(e)) continue;
            total -= e.bytes;
            remove(e, by_bytes);
        }
    }
    compact();
}

std::optional<RetentionKeeper::clock::time_point> RetentionKeeper::next_expiry() const noexcept
{
    if (rules_.retain_age.count() <= 0) return std::nullopt;
    for (const Entry& e : entries_)  // oldest first
        if (!e.gone && !e.open) return e.sealed_at + rules_.retain_age;
    return std::nullopt;
}

void RetentionKeeper::audit() noexcept
{
    for (Entry& e : entries_) {
        if (e.gone) continue;
        struct stat st {};
        if (::stat(e.path.c_str(), &st) == 0) continue;
        e.gone = true;
        const std::uint64_t n = e.records;
        counters_.update([&](FileSinkCounters& c) { c.records_removed += n; });
    }
    compact();
}

void RetentionKeeper::compact() noexcept
{
    std::size_t live = 0;
    for (const Entry& e : entries_) live += e.gone ? 0 : 1;
    if (live * 2 + 16 > entries_.size()) return;  // amortized: rebuild when half are gone
    try {
        std::vector<Entry> kept;
        std::unordered_map<std::string, std::size_t> index;
        kept.reserve(live);
        for (const Entry& e : entries_)
            if (!e.gone) {
                index[e.path] = kept.size();
                kept.push_back(e);
            }
        entries_.swap(kept);
        index_.swap(index);
    } catch (...) {
        // Out of memory: the gone entries stay, skipped.
    }
}

}  // namespace jsonlw::detail
