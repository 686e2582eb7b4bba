// jsonlw verify (docs/chain.md): writers with a hash chain write real directories — rotation
// with retention, hmac-sha256, a restart, a failed write, hour folders — that verify accepts
// with an exact summary; copies damaged by hand (a byte edited, a file cut, lines swapped, a
// file deleted, a line inserted) break at the exact file and line, as the kind they look like.
// Called as a library, and once through the built `jsonlw verify`.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include "../sinks/sink_rig.hpp"
#include "common.hpp"
#include "verify.hpp"

#include <jsonlw/chain_manifest.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/sinks/chain_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

using namespace jsonlw;
using namespace jsonlw::tools;
using namespace jsonlw_test;
namespace fs = std::filesystem;

namespace {

const std::string zeros(64, '0');

// The *.jsonl files directly in `dir`, sorted (their names sort by open time and index).
std::vector<fs::path> jsonl_in(const fs::path& dir)
{
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".jsonl") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

// The value of records 0..n-1 of TestWriter, sealed one after the other from 64 zeros.
std::string chain_of_records(int n, ChainMode mode = ChainMode::sha256,
                             std::optional<ChainKey> key = std::nullopt)
{
    LineChain chain(mode, std::move(key));
    std::string out;
    for (int i = 0; i < n; ++i)
        chain.seal(out, fmt::format("{{\"id\":{},\"text\":\"r{}\",\"value\":0.0}}\n", i, i));
    return chain.last();
}

// Writes records [from, from + n) with a writer whose options are the harness's (in `dir`)
// plus `tweak`, then closes it.
void write_records(Harness& h, const fs::path& dir, int from, int n,
                   const std::function<void(WriterOptions&)>& tweak)
{
    WriterOptions o = h.options();
    o.directory = dir;
    tweak(o);
    TestWriter w(h.executor(), o);
    for (int i = from; i < from + n; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.start(w);  // the loop's thread starts once
    close(w);
}

// 24 records, 4 per file (rotate_bytes 450, lines of 109-111 bytes), retain_files 2: files
// 4 and 5 stay, 0..3 are deleted by retention.
struct RetainedRun {
    Harness h;
    RetainedRun()
    {
        write_records(h, h.dir.path(), 0, 24, [](WriterOptions& o) {
            o.chain = ChainMode::sha256;
            o.sink = std::make_shared<FileSink>(
                FileSinkOptions{.rotation = {.rotate_bytes = 450, .retention = {.retain_files = 2}}});
        });
    }
    // A copy of the directory to damage.
    fs::path copy(TempDir& to) const
    {
        fs::copy(h.dir.path(), to.path(), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
        return to.path();
    }
};

// A copy of a RetainedRun's directory to damage (a Catch2 fixture): its .jsonl files in order,
// and the chain verified over the copy.
struct DamagedCopy {
    RetainedRun run;
    TempDir t;
    const std::vector<fs::path> files = jsonl_in(run.copy(t));

    ChainVerifyResult verify() const { return verify_chain_directory(t.path(), std::nullopt); }
};

void check_break(const ChainVerifyResult& r, const fs::path& file, std::size_t line,
                 const std::string& kind)
{
    REQUIRE(r.broken);
    CHECK(r.exit_status == 1);
    CHECK(r.broken->file == file.filename().string());
    CHECK(r.broken->line == line);
    CHECK(r.broken->kind == kind);
}

std::string lines_text(const std::vector<std::string>& v)
{
    std::string s;
    for (const std::string& l : v) s += l + "\n";
    return s;
}

// Rewrites `file` with edit(lines) done to its lines.
template <class Edit>
void edit_lines(const fs::path& file, Edit edit)
{
    std::vector<std::string> lines = read_lines(file);
    edit(lines);
    write_file(file, lines_text(lines));
}

// Runs the built `jsonlw verify ARGS`; returns its exit status, and its stdout in `out`.
int run_verify(const std::string& args, const fs::path& scratch, std::string& out)
{
    const fs::path o = scratch / "verify.out";
    const int rc = std::system(
        fmt::format("'{}' verify {} > '{}' 2>/dev/null", JSONLW_EXE, args, o.native()).c_str());
    out = read_file(o);
    fs::remove(o);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_CASE("A rotating writer with chain sha256 and retain_files verifies, its deleted files "
          "standing in by their recorded last value",
          "[tools][verify]")
{
    RetainedRun run;
    const auto files = jsonl_in(run.h.dir.path());
    REQUIRE(files.size() == 2);
    const ChainVerifyResult r = verify_chain_directory(run.h.dir.path(), std::nullopt);
    CHECK(r.error == "");
    REQUIRE_FALSE(r.broken);
    CHECK(r.exit_status == 0);
    const std::string last = chain_of_records(24);
    CHECK(format_chain_verify(r) ==
          "test.chain: sha256 chain verified: 2 files, 8 lines, 4 deleted by retention, last " +
              last + "\n");
    CHECK(read_last_chain_value(files[1]) == last);

    SECTION("the built jsonlw verify prints the same and exits 0")
    {
        TempDir scratch;
        std::string out;
        CHECK(run_verify("'" + run.h.dir.path().native() + "'", scratch.path(), out) == 0);
        CHECK(out == format_chain_verify(r));
    }
}

TEST_CASE_METHOD(DamagedCopy,
                 "A byte edited in a line breaks the chain at that file and line, as edited",
                 "[tools][verify]")
{
    std::string text = read_file(files[0]);  // records 16..19
    const std::size_t at = text.find("\"r17\"");
    REQUIRE(at != std::string::npos);
    text[at + 2] = '8';
    write_file(files[0], text);
    const ChainVerifyResult r = verify();
    check_break(r, files[0], 2, "edited");
    CHECK(format_chain_verify(r).rfind(files[0].filename().string() + ":2: edited: line 2's bytes", 0) == 0);
}

TEST_CASE_METHOD(DamagedCopy,
                 "The last file cut in the middle of a line is truncated at that line", "[tools][verify]")
{
    fs::resize_file(files[1], fs::file_size(files[1]) - 20);
    check_break(verify(), files[1], 4, "truncated");
}

TEST_CASE_METHOD(DamagedCopy,
                 "Whole lines removed from a closed file's end are truncated, found against the "
                 "manifest's close record",
                 "[tools][verify]")
{
    edit_lines(files[0], [](auto& lines) { lines.pop_back(); });
    check_break(verify(), files[0], 4, "truncated");
}

TEST_CASE_METHOD(DamagedCopy,
                 "Two lines swapped are reordered at the first of them", "[tools][verify]")
{
    edit_lines(files[1], [](auto& lines) { std::swap(lines[0], lines[1]); });
    check_break(verify(), files[1], 1, "reordered");
}

TEST_CASE_METHOD(DamagedCopy,
                 "A file deleted by hand is a deleted file; one retention deleted is not",
                 "[tools][verify]")
{
    fs::remove(files[0]);
    check_break(verify(), files[0], 0, "deleted file");
}

TEST_CASE_METHOD(DamagedCopy,
                 "A file deleted by hand together with its manifest lines leaves the next file "
                 "starting from nowhere: a broken link",
                 "[tools][verify]")
{
    fs::remove(files[0]);
    const std::string removed = files[0].filename().string();
    edit_lines(t.path() / "test.chain", [&](auto& lines) {
        std::erase_if(lines, [&](const std::string& l) { return l.find(removed) != std::string::npos; });
    });
    check_break(verify(), files[1], 1, "broken link");
}

TEST_CASE_METHOD(DamagedCopy,
                 "A line inserted in the middle of a file breaks there as deleted_or_inserted, and a "
                 "file of the writer's name that no manifest lists is an inserted file",
                 "[tools][verify]")
{
    const std::string first = read_lines(files[0])[0];
    edit_lines(files[1], [&](auto& lines) { lines.insert(lines.begin() + 2, first); });
    check_break(verify(), files[1], 3, "deleted_or_inserted");

    TempDir u;
    const auto again = jsonl_in(run.copy(u));
    fs::path extra = again[1];
    extra.replace_filename(again[1].filename().string() + "-copy.jsonl");
    fs::copy_file(again[1], extra);
    const ChainVerifyResult r = verify_chain_directory(u.path(), std::nullopt);
    REQUIRE(r.broken);
    CHECK(r.broken->kind == "inserted file");
    CHECK(r.broken->file == extra.filename().string());

    SECTION("the built jsonlw verify exits 1 with the break")
    {
        std::string out;
        CHECK(run_verify("'" + u.path().native() + "'", t.path(), out) == 1);
        CHECK(out == format_chain_verify(r));
    }
}

TEST_CASE("An hmac-sha256 chain verifies with its key, needs --key, and breaks at line 1 "
          "with another key",
          "[tools][verify]")
{
    Harness h;
    write_records(h, h.dir.path(), 0, 6, [](WriterOptions& o) {
        o.chain = ChainMode::hmac_sha256;
        o.chain_key = ChainKey{"secret\n"};
    });
    const ChainVerifyResult ok = verify_chain_directory(h.dir.path(), ChainKey{"secret\n"});
    CHECK(format_chain_verify(ok) ==
          "test.chain: hmac-sha256 chain verified: 1 files, 6 lines, 0 deleted by retention, last " +
              chain_of_records(6, ChainMode::hmac_sha256, ChainKey{"secret\n"}) + "\n");
    const ChainVerifyResult no_key = verify_chain_directory(h.dir.path(), std::nullopt);
    CHECK(no_key.exit_status == 2);
    CHECK(no_key.error == "test.chain: written with chain hmac-sha256: give its key with --key FILE");
    const auto files = jsonl_in(h.dir.path());
    REQUIRE(files.size() == 1);
    check_break(verify_chain_directory(h.dir.path(), ChainKey{"secret"}), files[0], 1, "edited");

    SECTION("jsonlw verify --key reads the key file's bytes exactly")
    {
        TempDir scratch;
        write_file(scratch.path() / "key", "secret\n");
        std::string out;
        CHECK(run_verify("'" + h.dir.path().native() + "' --key '" + (scratch.path() / "key").native() + "'",
                         scratch.path(), out) == 0);
        CHECK(out == format_chain_verify(ok));
        CHECK(run_verify("'" + h.dir.path().native() + "'", scratch.path(), out) == 2);
    }
}

TEST_CASE("Two writers one after the other in one directory make one chain", "[tools][verify]")
{
    Harness h;
    const auto chained = [](WriterOptions& o) { o.chain = ChainMode::sha256; };
    write_records(h, h.dir.path(), 0, 3, chained);
    write_records(h, h.dir.path(), 3, 3, chained);
    const ChainVerifyResult r = verify_chain_directory(h.dir.path(), std::nullopt);
    REQUIRE_FALSE(r.broken);
    REQUIRE(r.writers.size() == 1);
    CHECK(r.writers[0].lines == 6);
    CHECK(r.writers[0].last == chain_of_records(6));
    const ChainManifest m = read_chain_manifest(h.dir.path() / "test.chain");
    REQUIRE(m.events.size() == 4);  // open, close, open, close
    CHECK(m.events[2].prev == m.events[1].last);
}

TEST_CASE("A write that failed in the middle leaves a chain that verifies over what landed",
          "[tools][verify]")
{
    Harness h(with_seam);
    WriterOptions o = h.options();
    o.chain = ChainMode::sha256;
    TestWriter w(h.executor(), o);
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.start(w);
    flush(w);
    h.seam->fail_writev(ENOSPC, 1);
    for (int i = 3; i < 6; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    flush(w);
    for (int i = 6; i < 9; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    close(w);
    CHECK(w.stats().written == 6);
    const ChainVerifyResult r = verify_chain_directory(h.dir.path(), std::nullopt);
    REQUIRE_FALSE(r.broken);
    REQUIRE(r.writers.size() == 1);
    CHECK(r.writers[0].lines == 6);
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 6, 7, 8});
}

TEST_CASE("Hour files of a PartitionedFileSink, a late line to an older hour included, verify "
          "as one chain",
          "[tools][verify]")
{
    SinkRig rig;
    ChainSink chain(std::make_shared<PartitionedFileSink>(), ChainMode::sha256);
    rig.start(chain);
    REQUIRE(rig.put(chain, "2026-12-02T10/t-1.jsonl", 0, 3).records_written == 3);
    REQUIRE(rig.put(chain, "2026-12-02T11/t-1.jsonl", 3, 2).records_written == 2);
    REQUIRE(rig.put(chain, "2026-12-02T10/t-1.jsonl", 5, 1).records_written == 1);  // late
    REQUIRE(rig.put(chain, "2026-12-02T11/t-1.jsonl", 6, 1).records_written == 1);
    chain.close(false);
    const ChainManifest m = read_chain_manifest(rig.dir.path() / "t.chain");
    REQUIRE(m.events.size() == 4);  // two opens, two closes (close_all at the end)
    CHECK(m.events[0].prev == zeros);
    CHECK(m.events[1].kind == ChainManifestEvent::Kind::open);
    CHECK(m.events[1].prev != zeros);  // where the T10 file was: its third line
    // The summary's last value is the manifest's last (what a restart goes on from).
    const ChainVerifyResult r = verify_chain_directory(rig.dir.path(), std::nullopt);
    CHECK(format_chain_verify(r) ==
          "t.chain: sha256 chain verified: 2 files, 7 lines, 0 deleted by retention, last " +
              m.events.back().last + "\n");
}

TEST_CASE("A writer that crashed before its close record goes on, restarted, from its file's "
          "last line: one chain",
          "[tools][verify]")
{
    Harness h;
    const auto chained = [](WriterOptions& o) { o.chain = ChainMode::sha256; };
    write_records(h, h.dir.path(), 0, 3, chained);
    // The crash: the manifest ends with the open, its close never written.
    const fs::path manifest = h.dir.path() / "test.chain";
    auto events = read_lines(manifest);
    REQUIRE(events.size() == 2);
    events.pop_back();
    write_file(manifest, lines_text(events));
    write_records(h, h.dir.path(), 3, 2, chained);
    const ChainVerifyResult r = verify_chain_directory(h.dir.path(), std::nullopt);
    REQUIRE_FALSE(r.broken);
    REQUIRE(r.writers.size() == 1);
    CHECK(r.writers[0].lines == 5);
    CHECK(r.writers[0].last == chain_of_records(5));
}

TEST_CASE("The raw-output writer with chain sha256 writes hour folders whose chain verifies",
          "[tools][verify]")
{
    Harness h;
    jsonlw::RawOutputOptions o;
    o.directory = h.dir.path();
    o.log = h.logs.sink();
    o.chain = ChainMode::sha256;
    jsonlw::RawOutputWriter w(h.executor(), o);
    w.start();
    // Finished in three hours, one batch: three hour folders, one file each.
    const auto base = std::chrono::sys_days{std::chrono::year{2026} / 11 / 4} + std::chrono::hours{5};
    for (int i = 0; i < 6; ++i) {
        jsonlw::RawOutputRecord r;
        r.request_id = static_cast<std::uint64_t>(i);
        r.finished_at = base + std::chrono::minutes{60 * (i % 3)};
        r.started_at = r.finished_at - std::chrono::seconds{1};
        r.frames_text = "ok";
        r.frame_ends = {2};
        r.token_ids = {562};
        REQUIRE(w.submit(std::move(r)) == SubmitResult::accepted);
    }
    h.loop.start();
    close(w);
    const ChainVerifyResult r = verify_chain_directory(h.dir.path(), std::nullopt);
    INFO(format_chain_verify(r) << r.error);
    REQUIRE_FALSE(r.broken);
    REQUIRE(r.writers.size() == 1);
    CHECK(r.writers[0].files == 3);
    CHECK(r.writers[0].lines == 6);
    CHECK(r.writers[0].manifest == "raw.chain");
}
