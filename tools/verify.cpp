// `jsonlw verify` (verify.hpp). Per manifest, in the order of each file's first "open":
//   1. the file's start value (the open's "prev") must be 64 '0's, a value of a line of an
//      earlier file of the writer, or the "last" recorded for an earlier file (closed or
//      deleted): a FileSink's next file starts where the last ended, a PartitionedFileSink's
//      new hour file from the writer's most recent line, a restart from the manifest's end;
//   2. a file deleted by retention ("delete") is gone: its recorded "last" stands for it; a
//      file missing without a "delete" is a deleted file;
//   3. verify_chain() recomputes the file from its start value (edited, reordered, inserted,
//      torn lines: docs/chain.md);
//   4. a closed file's last value must be the one its last "close" recorded (lines removed
//      from its end: truncated);
// then any *.jsonl beside the writer's files, named like them and in no manifest, is an
// inserted file.
#include "verify.hpp"

#include "commands.hpp"

#include <jsonlw/chain_manifest.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>

namespace jsonlw::tools {

namespace {

namespace fs = std::filesystem;

const std::string zeros(64, '0');

struct FileEntry {
    std::string name;  // relative to the manifest's folder
    std::string prev;  // the first open's
    std::optional<std::string> closed_last;  // the last close's, unless opened again after
    std::optional<ChainManifestEvent> deleted;
    std::size_t opened_at = 0;  // the manifest line of its first open
};

// The name up to its first digit: "records-host-", "raw-output-": the writer's file pattern.
std::string name_pattern(const std::string& filename)
{
    const auto it = std::find_if(filename.begin(), filename.end(),
                                 [](char c) { return c >= '0' && c <= '9'; });
    return std::string(filename.begin(), it);
}

// The file on disk: its name, or the name with an open suffix (<name>.<suffix>).
std::optional<fs::path> find_on_disk(const fs::path& p)
{
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
    const std::string head = p.filename().string() + ".";
    for (fs::directory_iterator it(p.parent_path(), ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename().string().rfind(head, 0) == 0 && it->is_regular_file(ec))
            return it->path();
    return std::nullopt;
}

// The chain value at the end of each '\n'-terminated line of a file that verified.
void collect_values(const fs::path& p, std::unordered_set<std::string>& into)
{
    std::ifstream in(p, std::ios::binary);
    for (std::string line; std::getline(in, line);)
        if (line.size() >= 67 && line.compare(line.size() - 2, 2, "\"}") == 0)
            into.insert(line.substr(line.size() - 66, 64));
}

std::string rel(const fs::path& p, const fs::path& dir)
{
    return p.lexically_relative(dir).generic_string();
}

const char* kind_name(ChainBreak::Kind k)
{
    switch (k) {
    case ChainBreak::Kind::edited: return "edited";
    case ChainBreak::Kind::deleted_or_inserted: return "deleted_or_inserted";
    case ChainBreak::Kind::reordered: return "reordered";
    case ChainBreak::Kind::truncated: return "truncated";
    case ChainBreak::Kind::missing_key: return "missing_key";
    case ChainBreak::Kind::not_json_object: return "not_json_object";
    }
    return "edited";
}

// One writer: returns its break, or fills `summary`.
std::optional<ChainVerifyBreak> verify_writer(const fs::path& dir, const fs::path& manifest_path,
                                              const ChainManifest& m,
                                              const std::optional<ChainKey>& key,
                                              const std::set<fs::path>& claimed,
                                              ChainWriterSummary& summary)
{
    const fs::path base = manifest_path.parent_path();
    const std::string mrel = rel(manifest_path, dir);
    if (m.bad_line && *m.bad_line != m.events.size() + 1)  // a torn last line is a crash's
        return ChainVerifyBreak{mrel, *m.bad_line, "manifest", m.bad_reason};
    // Pass 1: the files in the order of their first open, with their recorded ends.
    std::vector<FileEntry> files;
    std::map<std::string, std::size_t> index;
    std::set<std::string> open_now;
    bool interleaved = false;  // files open at once (hour folders): one may start mid-way in another
    for (const ChainManifestEvent& e : m.events) {
        if (e.kind == ChainManifestEvent::Kind::open) {
            interleaved = interleaved || !open_now.empty();
            open_now.insert(e.file);
        } else {
            open_now.erase(e.file);
        }
        auto [it, fresh] = index.try_emplace(e.file, files.size());
        if (fresh) {
            if (e.kind != ChainManifestEvent::Kind::open)
                return ChainVerifyBreak{mrel, e.line, "manifest",
                                        "\"" + e.file + "\" is closed or deleted before it is opened"};
            files.push_back({e.file, e.prev, std::nullopt, std::nullopt, e.line});
            continue;
        }
        FileEntry& f = files[it->second];
        if (e.kind == ChainManifestEvent::Kind::open) f.closed_last.reset();
        else if (e.kind == ChainManifestEvent::Kind::close) f.closed_last = e.last;
        else f.deleted = e;
    }
    // Pass 2: each file from its start value.
    // Where a file may start: 64 zeros, a recorded last, an earlier file's end; and, read only
    // when a start is none of those (a partitioned writer's new file starting mid-way through
    // another), any line value of an earlier file.
    std::unordered_set<std::string> known{zeros};
    std::vector<fs::path> earlier;
    std::size_t scanned = 0;
    const auto is_known = [&](const std::string& v) {
        while (!known.contains(v) && scanned < earlier.size()) collect_values(earlier[scanned++], known);
        return known.contains(v);
    };
    std::string last = zeros;
    for (const FileEntry& f : files) {
        const fs::path path = base / f.name;
        const std::string frel = rel(path, dir);
        // A start inside a file retention deleted cannot be checked (only its last value is
        // kept): where files were written at once and one was deleted, it is taken as given.
        if (!is_known(f.prev) && !(interleaved && summary.deleted_files > 0))
            return ChainVerifyBreak{frel, 1, "broken link",
                                    fmt::format("the file starts from {}, a value that no earlier file of "
                                                "this writer holds or ends with: a file before it is "
                                                "missing, or the manifest was changed",
                                                f.prev)};
        const std::optional<fs::path> on_disk = find_on_disk(path);
        if (f.deleted && !on_disk) {
            ++summary.deleted_files;
            known.insert(f.deleted->last);
            last = f.deleted->last;
            continue;
        }
        if (!on_disk)
            return ChainVerifyBreak{frel, 0, "deleted file",
                                    fmt::format("the manifest lists it (line {} of {}), it is not on "
                                                "disk, and no retention deletion of it is recorded",
                                                f.opened_at, mrel)};
        std::ifstream in(*on_disk, std::ios::binary);
        if (!in) return ChainVerifyBreak{frel, 0, "unreadable", "cannot be opened"};
        std::string value = f.prev;
        std::size_t lines = 0;
        const std::optional<ChainBreak> b = verify_chain(in, summary.mode, key, value);
        if (b) return ChainVerifyBreak{rel(*on_disk, dir), b->line, kind_name(b->kind), b->detail};
        {
            std::ifstream count(*on_disk, std::ios::binary);
            lines = static_cast<std::size_t>(std::count(std::istreambuf_iterator<char>(count),
                                                        std::istreambuf_iterator<char>(), '\n'));
        }
        if (f.closed_last && *f.closed_last != value) {
            std::unordered_set<std::string> mine;
            collect_values(*on_disk, mine);
            const bool longer = mine.contains(*f.closed_last);
            return ChainVerifyBreak{
                rel(*on_disk, dir), longer ? lines : lines + 1, longer ? "inserted" : "truncated",
                longer ? fmt::format("the manifest recorded {} as the file's last value when it was "
                                     "closed, but lines follow it: lines were appended after it closed",
                                     *f.closed_last)
                       : fmt::format("the file ends at line {} with value {}, but when it was closed its "
                                     "last line's value was {}: lines were removed from its end",
                                     lines, value, *f.closed_last)};
        }
        earlier.push_back(*on_disk);
        known.insert(value);
        if (f.closed_last) known.insert(*f.closed_last);
        ++summary.files;
        summary.lines += lines;
        last = value;
    }
    // The chain's end, where a restarted writer goes on from: the last close's value (a late
    // line may have gone to an older file; retention deletes after the newest close).
    for (auto it = m.events.rbegin(); it != m.events.rend(); ++it) {
        if (it->kind == ChainManifestEvent::Kind::remove) continue;
        if (it->kind == ChainManifestEvent::Kind::close) last = it->last;
        break;
    }
    summary.last = last;
    // Inserted files: named like this writer's, beside them, in no manifest.
    std::set<std::pair<fs::path, std::string>> patterns;
    for (const FileEntry& f : files) {
        const fs::path p = base / f.name;
        patterns.insert({p.parent_path(), name_pattern(p.filename().string())});
    }
    for (const auto& [folder, pattern] : patterns) {
        std::error_code ec;
        std::vector<fs::path> found;
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string name = it->path().filename().string();
            const bool jsonl = name.ends_with(".jsonl") || name.find(".jsonl.") != std::string::npos;
            if (jsonl && name_pattern(name) == pattern) found.push_back(it->path());
        }
        std::sort(found.begin(), found.end());
        for (const fs::path& p : found) {
            fs::path listed = p;
            if (const std::size_t dot = p.filename().string().find(".jsonl."); dot != std::string::npos)
                listed.replace_filename(p.filename().string().substr(0, dot + 6));
            if (claimed.contains(listed.lexically_normal())) continue;
            return ChainVerifyBreak{rel(p, dir), 0, "inserted file",
                                    fmt::format("named like the files of {}, but no manifest lists it",
                                                mrel)};
        }
    }
    return std::nullopt;
}

}  // namespace

ChainVerifyResult verify_chain_directory(const fs::path& dir, const std::optional<ChainKey>& key)
{
    ChainVerifyResult r;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        r.error = dir.string() + ": not a readable directory";
        r.exit_status = 2;
        return r;
    }
    std::vector<fs::path> manifests;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".chain" && it->is_regular_file(ec)) manifests.push_back(it->path());
    std::sort(manifests.begin(), manifests.end());
    if (manifests.empty()) {
        r.error = dir.string() + ": no *.chain manifest under it (was a writer's chain on?)";
        r.exit_status = 2;
        return r;
    }
    std::vector<ChainManifest> read;
    std::set<fs::path> claimed;
    for (const fs::path& p : manifests) {
        try {
            read.push_back(read_chain_manifest(p));
        } catch (const std::exception& e) {
            r.error = e.what();
            r.exit_status = 2;
            return r;
        }
        for (const ChainManifestEvent& e : read.back().events)
            claimed.insert((p.parent_path() / e.file).lexically_normal());
    }
    for (std::size_t i = 0; i < manifests.size(); ++i) {
        ChainWriterSummary s;
        s.manifest = rel(manifests[i], dir);
        for (const ChainManifestEvent& e : read[i].events)
            if (e.kind == ChainManifestEvent::Kind::open) {
                s.mode = e.mode;
                break;
            }
        if (s.mode == ChainMode::hmac_sha256 && !key) {
            r.error = s.manifest + ": written with chain hmac-sha256: give its key with --key FILE";
            r.exit_status = 2;
            return r;
        }
        if (s.mode == ChainMode::none) s.mode = ChainMode::sha256;  // no file yet
        const std::optional<ChainKey> k = s.mode == ChainMode::hmac_sha256 ? key : std::nullopt;
        try {
            r.broken = verify_writer(dir, manifests[i], read[i], k, claimed, s);
        } catch (const std::exception& e) {
            r.error = s.manifest + ": " + e.what();
            r.exit_status = 2;
            return r;
        }
        if (r.broken) {
            r.exit_status = 1;
            return r;
        }
        r.writers.push_back(std::move(s));
    }
    return r;
}

std::string format_chain_verify(const ChainVerifyResult& r)
{
    if (r.broken) {
        const ChainVerifyBreak& b = *r.broken;
        return b.line > 0 ? fmt::format("{}:{}: {}: {}\n", b.file, b.line, b.kind, b.detail)
                          : fmt::format("{}: {}: {}\n", b.file, b.kind, b.detail);
    }
    std::string out;
    for (const ChainWriterSummary& w : r.writers)
        out += fmt::format("{}: {} chain verified: {} files, {} lines, {} deleted by retention, last {}\n",
                           w.manifest, chain_mode_name(w.mode), w.files, w.lines, w.deleted_files, w.last);
    return out;
}

int verify_main(std::span<char*> args)
{
    std::optional<fs::path> dir, key_file;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a(args[i]);
        if (a == "--key" && i + 1 < args.size()) key_file = args[++i];
        else if (a.starts_with("-")) {
            fmt::print(stderr, "jsonlw verify: unknown option '{}' (see jsonlw help verify)\n", a);
            return 2;
        } else if (!dir) dir = fs::path(a);
        else {
            fmt::print(stderr, "jsonlw verify: one DIR only (see jsonlw help verify)\n");
            return 2;
        }
    }
    if (!dir) {
        fmt::print(stderr, "jsonlw verify: no DIR given (see jsonlw help verify)\n");
        return 2;
    }
    std::optional<ChainKey> key;
    if (key_file) {
        try {
            key = ChainKey::from_file(*key_file);
        } catch (const std::exception& e) {
            fmt::print(stderr, "jsonlw verify: {}\n", e.what());
            return 2;
        }
    }
    const ChainVerifyResult r = verify_chain_directory(*dir, key);
    if (!r.error.empty()) fmt::print(stderr, "jsonlw verify: {}\n", r.error);
    fmt::print("{}", format_chain_verify(r));
    std::fflush(stdout);
    return r.exit_status;
}

}  // namespace jsonlw::tools
