#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "trace_support.hpp"

#include <algorithm>
#include <cerrno>
#include <fstream>

using namespace jsonlw_test;

namespace {

const auto t14 = utc(2026, 9, 3, 14, 30, 0);
const auto t15 = utc(2026, 9, 3, 15, 0, 0, 5);

// The counts object of a sidecar equals these stats.
void check_counts(const Json& side, const jsonlw::WriterStats& s)
{
    const auto c = side["counts"];
    CHECK(Json::keys_of(c) ==
          std::vector<std::string>{"submitted", "persisted", "dropped", "unknown", "pending"});
    CHECK(u64(c, "submitted") == s.submitted);
    CHECK(u64(c, "persisted") == s.written);
    CHECK(u64(c, "unknown") == s.unknown);
    CHECK(u64(c, "pending") == s.pending);
    const auto d = c["dropped"].value();
    CHECK(u64(d, "queue_full") == s.dropped.queue_full);
    CHECK(u64(d, "oldest_evicted") == s.dropped.oldest_evicted);
    CHECK(u64(d, "malformed") == s.dropped.malformed);
    CHECK(u64(d, "write_error") == s.dropped.write_error);
    CHECK(u64(d, "shutdown") == s.dropped.shutdown);
    CHECK(u64(d, "unexpected") == s.dropped.unexpected);
    CHECK(u64(d, "closed") == s.dropped.closed);
    CHECK(u64(side["attributes"], "sanitized") == s.sanitized);
}

struct ShardInfo {
    std::string file;
    std::uint64_t start_offset, persisted_end, persisted_records, fragments_isolated;
    std::vector<std::array<std::uint64_t, 3>> extents;
};

std::vector<ShardInfo> shards_of(const Json& side)
{
    std::vector<ShardInfo> out;
    simdjson::dom::array arr;
    REQUIRE(side["shards"].get_array().get(arr) == simdjson::SUCCESS);
    for (simdjson::dom::element s : arr) {
        CHECK(Json::keys_of(s) == std::vector<std::string>{"file", "start_offset",
                                                           "persisted_end", "persisted_records",
                                                           "fragments_isolated",
                                                           "unknown_extents"});
        ShardInfo i{str(s, "file"), u64(s, "start_offset"), u64(s, "persisted_end"),
                    u64(s, "persisted_records"), u64(s, "fragments_isolated"), {}};
        simdjson::dom::array ex;
        REQUIRE(s["unknown_extents"].get_array().get(ex) == simdjson::SUCCESS);
        for (simdjson::dom::element e : ex)
            i.extents.push_back({u64(e, "start"), u64(e, "landed"), u64(e, "records")});
        out.push_back(std::move(i));
    }
    return out;
}

const ShardInfo& shard(const std::vector<ShardInfo>& all, const std::string& file)
{
    auto it = std::find_if(all.begin(), all.end(), [&](const ShardInfo& s) { return s.file == file; });
    INFO("shard " << file);
    REQUIRE(it != all.end());
    return *it;
}

std::string rel(const char* hour, const char* kind) { return std::string(hour) + "/" + kind + pid_suffix() + ".jsonl"; }

bool is_hex(std::string_view s)
{
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
bool is_digits(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

TEST_CASE("Durable mode fsyncs every append and counts a record as written only after its "
          "fsync",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    ReleaseOnExit release(rig.seam);
    rig.seam->hold_fsync();
    rig.w().start();
    rig.w().record_request(request("tr_1", t14));
    rig.w().record_request(request("tr_2", t14));
    rig.loop.start();  // both in the first batch
    REQUIRE(rig.seam->wait_fsync_held());
    // The bytes are in the file, but not yet on stable storage: not counted as written.
    const auto lines = read_lines(rig.w().requests_file(t14));
    REQUIRE(lines.size() == 2);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_1");
    CHECK(str(Json(lines[1])["trace_id"]) == "tr_2");
    auto s = rig.w().stats();
    CHECK(s.written == 0);
    CHECK(s.pending == 2);
    CHECK(invariant_holds(s));
    rig.seam->release();
    flush(rig.w());
    s = rig.w().stats();
    CHECK(s.written == 2);
    CHECK(invariant_holds(s));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 2);
    CHECK(rig.seam->fsync_count() == rig.seam->writev_count());
    CHECK(rig.seam->fsync_count() >= 1);
}

TEST_CASE("After a clean durable run the sidecar is closed, equals stats() and the verifier "
          "finds every record",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    rig.w().start();
    for (int i = 0; i < 70; ++i) {
        const std::string id = "tr_" + std::to_string(i);
        const auto t = i < 40 ? t14 : t15;
        if (i % 2 == 0) rig.w().record_request(request(id, t));
        else rig.w().record_response(response(id, t));
    }
    rig.loop.start();
    const auto report = close(rig.w());
    REQUIRE(report.drained);
    CHECK(report.stats.written == 70);
    CHECK(rig.seam->fsync_count() == rig.seam->writev_count());

    const std::string gen = rig.w().generation();
    const auto side_path = rig.root() / "_writer" / (gen + ".json");
    REQUIRE(rig.w().sidecar_path() == side_path);
    // Only the sidecar: the temporary file was renamed into place.
    CHECK(files_in(rig.root() / "_writer") == std::vector<std::string>{gen + ".json"});
    const auto side_lines = read_lines(side_path);
    REQUIRE(side_lines.size() == 1);
    Json side(side_lines[0]);
    CHECK(side.keys() == std::vector<std::string>{"schema", "generation", "pid",
                                                  "writer_suffix", "started_at",
                                                  "published_at", "sequence", "closed",
                                                  "durability", "counts", "attributes",
                                                  "shards", "errors"});
    CHECK(str(side["schema"]) == "jsonlw-request-trace-writer/1");
    CHECK(str(side["generation"]) == gen);
    // <pid>-<time_ns>-<8 hex>
    const auto d1 = gen.find('-'), d2 = gen.rfind('-');
    REQUIRE(d1 != std::string::npos);
    REQUIRE(d2 != d1);
    CHECK(gen.substr(0, d1) == std::to_string(::getpid()));
    CHECK(is_digits(gen.substr(d1 + 1, d2 - d1 - 1)));
    CHECK(gen.size() - d2 - 1 == 8);
    CHECK(is_hex(gen.substr(d2 + 1)));
    CHECK(i64(side["pid"]) == ::getpid());
    CHECK(str(side["writer_suffix"]) == pid_suffix());
    for (const char* k : {"started_at", "published_at"}) {
        const std::string t = str(side[k]);
        CHECK(t.size() == 32);
        CHECK(t.substr(26) == "+00:00");
    }
    CHECK(str(side["started_at"]) <= str(side["published_at"]));
    CHECK(u64(side.root(), "sequence") >= 2);  // the first batch, then close
    CHECK(boolean(side["closed"]));
    CHECK_FALSE(str(side["durability"]).empty());
    check_counts(side, rig.w().stats());
    CHECK(minified(side["errors"]) == R"({"write_errors":0,"last_error":null,"sidecar_errors":0})");

    const auto shards = shards_of(side);
    REQUIRE(shards.size() == 4);
    std::uint64_t total = 0;
    for (const auto& [hour, kind, n] :
         {std::tuple{"2026-09-03T14", "requests", 20}, std::tuple{"2026-09-03T14", "responses", 20},
          std::tuple{"2026-09-03T15", "requests", 15}, std::tuple{"2026-09-03T15", "responses", 15}}) {
        const ShardInfo& s = shard(shards, rel(hour, kind));
        const auto path = rig.root() / s.file;
        CHECK(s.start_offset == 0);
        CHECK(s.persisted_end == std::filesystem::file_size(path));
        CHECK(s.persisted_records == static_cast<std::uint64_t>(n));
        CHECK(s.fragments_isolated == 0);
        CHECK(s.extents.empty());
        const auto lines = read_lines(path);
        REQUIRE(lines.size() == static_cast<std::size_t>(n));
        for (const auto& l : lines) {
            Json j(l);
            CHECK(str(j["event"]) == (std::string(kind) == "requests" ? "request" : "response"));
            CHECK(str(j["trace_id"]).rfind("tr_", 0) == 0);
            CHECK(str(j["session"]) == "s1");
        }
        total += s.persisted_records;
    }
    CHECK(total == 70);

    const auto v = jsonlw::verify_request_trace_shards(side_path);
    CHECK(v.error.empty());
    CHECK(v.consistent);
    CHECK(v.counts_consistent);
    CHECK(v.records == 70);
    CHECK(v.bad == 0);
    REQUIRE(v.shards.size() == 4);
    for (const auto& s : v.shards) CHECK(s.consistent);
}

TEST_CASE("The verifier detects a line damaged inside the persisted range and ignores bytes "
          "after it",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    rig.w().start();
    rig.loop.start();
    for (int i = 0; i < 5; ++i) rig.w().record_request(request("tr_" + std::to_string(i), t14));
    close(rig.w());
    const auto side = rig.w().sidecar_path();
    const auto shard_file = rig.w().requests_file(t14);
    REQUIRE(jsonlw::verify_request_trace_shards(side).consistent);

    // Someone else's bytes after persisted_end are not this generation's concern.
    {
        std::ofstream out(shard_file, std::ios::binary | std::ios::app);
        out << "garbage after the persisted range\n";
    }
    auto v = jsonlw::verify_request_trace_shards(side);
    CHECK(v.consistent);
    CHECK(v.records == 5);

    // A damaged line inside the range: one bad line, one record short.
    {
        std::fstream f(shard_file, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(0);
        f.put('#');
    }
    v = jsonlw::verify_request_trace_shards(side);
    CHECK_FALSE(v.consistent);
    CHECK(v.bad == 1);
    CHECK(v.records == 4);
    REQUIRE(v.shards.size() == 1);
    CHECK(v.shards[0].persisted_records == 5);
    CHECK_FALSE(v.shards[0].consistent);

    // A shard cut short is reported, not read past its end.
    std::filesystem::resize_file(shard_file, 10);
    v = jsonlw::verify_request_trace_shards(side);
    CHECK_FALSE(v.consistent);
    REQUIRE(v.shards.size() == 1);
    CHECK(v.shards[0].error.find("fewer than persisted_end") != std::string::npos);

    // Not a sidecar.
    write_file(rig.dir / "other.json", R"({"schema":"something-else"})");
    v = jsonlw::verify_request_trace_shards(rig.dir / "other.json");
    CHECK_FALSE(v.consistent);
    CHECK_FALSE(v.error.empty());
    v = jsonlw::verify_request_trace_shards(rig.dir / "missing.json");
    CHECK_FALSE(v.consistent);
    CHECK(v.error.find("cannot open") != std::string::npos);
}

TEST_CASE("A torn tail left by an earlier run is isolated with a newline and every new line "
          "parses",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    const auto shard_file = rig.w().requests_file(t14);
    std::filesystem::create_directories(shard_file.parent_path());
    const std::string old = R"({"event":"request","trace_id":"tr_old"})" "\n" R"({"event":"requ)";
    write_file(shard_file, old);

    rig.w().start();
    rig.loop.start();
    rig.w().record_request(request("tr_new1", t14));
    rig.w().record_request(request("tr_new2", t14));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 2);

    const auto lines = read_lines(shard_file);
    INFO("file: " << read_file(shard_file));
    REQUIRE(lines.size() == 4);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_old");
    CHECK(lines[1] == R"({"event":"requ)");  // the fragment, alone on its line
    CHECK(str(Json(lines[2])["trace_id"]) == "tr_new1");
    CHECK(str(Json(lines[3])["trace_id"]) == "tr_new2");

    Json side(read_file(rig.w().sidecar_path()));
    const auto shards = shards_of(side);
    REQUIRE(shards.size() == 1);
    CHECK(shards[0].file == rel("2026-09-03T14", "requests"));
    CHECK(shards[0].fragments_isolated == 1);
    CHECK(shards[0].start_offset == old.size() + 1);
    CHECK(shards[0].persisted_end == std::filesystem::file_size(shard_file));
    CHECK(shards[0].persisted_records == 2);
    const auto v = jsonlw::verify_request_trace_shards(rig.w().sidecar_path());
    CHECK(v.consistent);
    CHECK(v.records == 2);
}

TEST_CASE("A failing append shows up in the sidecar's errors and as write_error, with the "
          "invariant intact",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    rig.w().start();
    rig.loop.start();
    rig.w().record_request(request("tr_ok", t14));
    flush(rig.w());
    // The first batch published the sidecar.
    {
        Json side(read_file(rig.w().sidecar_path()));
        CHECK_FALSE(boolean(side["closed"]));
        CHECK(u64(side.root(), "sequence") == 1);
        check_counts(side, rig.w().stats());
    }

    // Every write fails until the two records are resolved (in one batch or two).
    rig.seam->fail_writev(EIO, -1);
    rig.w().record_request(request("tr_lost1", t14));
    rig.w().record_request(request("tr_lost2", t14));
    flush(rig.w());
    rig.seam->fail_writev(0, 0);
    auto s = rig.w().stats();
    CHECK(s.written == 1);
    CHECK(s.dropped.write_error == 2);
    CHECK(s.unknown == 0);
    CHECK(invariant_holds(s));
    // Rate-limited: the first failure is logged.
    CHECK(rig.logs.count(jsonlw::LogLevel::warning, "Failed to write request trace JSONL") == 1);
    // A failed batch publishes at once (well within 10 s of the first), counting itself.
    std::uint64_t failures = 0;
    {
        Json side(read_file(rig.w().sidecar_path()));
        CHECK_FALSE(boolean(side["closed"]));
        failures = u64(side["errors"], "write_errors");
        CHECK((failures == 1 || failures == 2));
        CHECK(u64(side.root(), "sequence") == 1 + failures);
        check_counts(side, s);
        CHECK(str(side["errors"], "last_error").find("Input/output error") != std::string::npos);
    }

    rig.w().record_request(request("tr_after", t14));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 2);
    CHECK(invariant_holds(report.stats));

    Json side(read_file(rig.w().sidecar_path()));
    CHECK(boolean(side["closed"]));
    check_counts(side, report.stats);
    CHECK(u64(side["errors"], "write_errors") == failures);
    CHECK(str(side["errors"], "last_error") ==
          "Input/output error (" + rel("2026-09-03T14", "requests") + ")");
    CHECK(u64(side["errors"], "sidecar_errors") == 0);
    const auto shards = shards_of(side);
    REQUIRE(shards.size() == 1);
    CHECK(shards[0].persisted_records == 2);
    CHECK(shards[0].extents.empty());  // nothing of the failed append landed

    const auto lines = read_lines(rig.w().requests_file(t14));
    REQUIRE(lines.size() == 2);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_ok");
    CHECK(str(Json(lines[1])["trace_id"]) == "tr_after");
    const auto v = jsonlw::verify_request_trace_shards(rig.w().sidecar_path());
    CHECK(v.consistent);
    CHECK(v.counts_consistent);
    CHECK(v.records == 2);
}

TEST_CASE("A short write that cannot be cut back leaves an unknown extent that the verifier blanks out",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    rig.w().start();
    rig.seam->short_write_once(EIO);
    rig.seam->fail_ftruncate(EIO);  // the torn bytes stay
    // Three lines of equal length: half of their bytes ends in the middle of the second.
    for (int i = 0; i < 3; ++i) rig.w().record_request(request("tr_torn" + std::to_string(i), t14));
    rig.loop.start();
    flush(rig.w());
    auto s = rig.w().stats();
    CHECK(s.written == 0);
    CHECK(s.unknown == 2);  // the whole first line and the torn second one
    CHECK(s.dropped.write_error == 1);
    CHECK(invariant_holds(s));

    rig.w().record_request(request("tr_next", t14));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 1);
    CHECK(report.stats.unknown == s.unknown);
    CHECK(invariant_holds(report.stats));

    Json side(read_file(rig.w().sidecar_path()));
    check_counts(side, report.stats);
    const auto shards = shards_of(side);
    REQUIRE(shards.size() == 1);
    const ShardInfo& sh = shards[0];
    CHECK(sh.start_offset == 0);
    REQUIRE(sh.extents.size() == 1);
    CHECK(sh.extents[0][0] == 0);                  // start
    CHECK(sh.extents[0][1] > 0);                   // landed
    CHECK(sh.extents[0][2] == report.stats.unknown);  // records
    CHECK(sh.fragments_isolated == 1);             // the torn half-line got its '\n'
    CHECK(sh.persisted_records == 1);
    const auto size = std::filesystem::file_size(rig.w().requests_file(t14));
    CHECK(sh.persisted_end == size);

    // The file: the half that landed (whole lines parse, the torn one does not), then '\n',
    // then the next record.
    const auto lines = read_lines(rig.w().requests_file(t14));
    REQUIRE(lines.size() == 3);
    CHECK(str(Json(lines.back())["trace_id"]) == "tr_next");
    CHECK_FALSE(is_valid_json(lines[lines.size() - 2]));
    for (std::size_t i = 0; i + 2 < lines.size(); ++i)
        CHECK(str(Json(lines[i])["trace_id"]) == "tr_torn" + std::to_string(i));

    const auto v = jsonlw::verify_request_trace_shards(rig.w().sidecar_path());
    CHECK(v.consistent);
    CHECK(v.counts_consistent);
    CHECK(v.records == 1);
    CHECK(v.bad == 0);
}

TEST_CASE("A short write is cut back: its records are write errors, the sidecar has no unknown "
          "extent, and the shard verifies with the next record right after the last whole line",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    rig.w().start();
    rig.seam->short_write_once(EIO);
    for (int i = 0; i < 3; ++i) rig.w().record_request(request("tr_cut" + std::to_string(i), t14));
    rig.loop.start();
    flush(rig.w());
    auto s = rig.w().stats();
    CHECK(s.written == 0);
    CHECK(s.unknown == 0);
    CHECK(s.dropped.write_error == 3);
    CHECK(invariant_holds(s));
    CHECK(rig.seam->ftruncate_count() == 1);

    rig.w().record_request(request("tr_next", t14));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 1);
    CHECK(report.stats.unknown == 0);
    CHECK(report.stats.dropped.write_error == 3);

    Json side(read_file(rig.w().sidecar_path()));
    check_counts(side, report.stats);
    const auto shards = shards_of(side);
    REQUIRE(shards.size() == 1);
    CHECK(shards[0].extents.empty());
    CHECK(shards[0].fragments_isolated == 0);
    CHECK(shards[0].persisted_records == 1);
    const auto lines = read_lines(rig.w().requests_file(t14));
    REQUIRE(lines.size() == 1);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_next");
    const auto v = jsonlw::verify_request_trace_shards(rig.w().sidecar_path());
    CHECK(v.consistent);
    CHECK(v.counts_consistent);
    CHECK(v.records == 1);
    CHECK(v.bad == 0);
}

TEST_CASE("An append that isolates a torn tail and then fails after part of its bytes, and "
          "cannot be cut back, still counts the isolated fragment, 1 in the sidecar of the "
          "failure and 2 once the next append isolates its own torn half-line",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    const auto shard_file = rig.w().requests_file(t14);
    std::filesystem::create_directories(shard_file.parent_path());
    const std::string old = R"({"event":"request","trace_id":"tr_old"})" "\n" R"({"event":"requ)";
    write_file(shard_file, old);

    rig.w().start();
    rig.seam->short_write_once(EIO);
    rig.seam->fail_ftruncate(EIO);  // the torn bytes stay
    // One append: the isolating '\n', then three lines of equal length; half of those bytes
    // land (the '\n', the first line, part of the second), then the disk fails.
    for (int i = 0; i < 3; ++i) rig.w().record_request(request("tr_torn" + std::to_string(i), t14));
    rig.loop.start();
    flush(rig.w());
    auto s = rig.w().stats();
    CHECK(s.written == 0);
    CHECK(s.unknown == 2);
    CHECK(s.dropped.write_error == 1);
    CHECK(invariant_holds(s));
    const auto calls = rig.seam->writev_calls();
    REQUIRE(calls.size() == 2);  // the short one, then the one that failed
    REQUIRE(calls[0].data.front() == '\n');
    const std::uint64_t half = calls[0].bytes / 2;
    CHECK(calls[0].result == static_cast<ssize_t>(half));
    CHECK(calls[1].result == -1);
    {
        // A failed batch publishes at once.
        Json side(read_file(rig.w().sidecar_path()));
        check_counts(side, s);
        const auto shards = shards_of(side);
        REQUIRE(shards.size() == 1);
        CHECK(shards[0].fragments_isolated == 1);
        CHECK(shards[0].start_offset == old.size() + 1);
        CHECK(shards[0].persisted_end == old.size() + 1);
        CHECK(shards[0].persisted_records == 0);
        REQUIRE(shards[0].extents.size() == 1);
        CHECK(shards[0].extents[0] == std::array<std::uint64_t, 3>{old.size() + 1, half - 1, 2});
    }

    rig.w().record_request(request("tr_next", t14));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 1);
    CHECK(report.stats.unknown == 2);
    CHECK(invariant_holds(report.stats));

    Json side(read_file(rig.w().sidecar_path()));
    CHECK(boolean(side["closed"]));
    check_counts(side, report.stats);
    const auto shards = shards_of(side);
    REQUIRE(shards.size() == 1);
    CHECK(shards[0].fragments_isolated == 2);
    CHECK(shards[0].start_offset == old.size() + 1);
    CHECK(shards[0].persisted_end == std::filesystem::file_size(shard_file));
    CHECK(shards[0].persisted_records == 1);
    REQUIRE(shards[0].extents.size() == 1);
    CHECK(shards[0].extents[0] == std::array<std::uint64_t, 3>{old.size() + 1, half - 1, 2});

    // The old line, its fragment, the landed line, the torn half-line, the next record.
    const auto lines = read_lines(shard_file);
    INFO("file: " << read_file(shard_file));
    REQUIRE(lines.size() == 5);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_old");
    CHECK(lines[1] == R"({"event":"requ)");
    CHECK(str(Json(lines[2])["trace_id"]) == "tr_torn0");
    CHECK_FALSE(is_valid_json(lines[3]));
    CHECK(str(Json(lines[4])["trace_id"]) == "tr_next");
    const auto v = jsonlw::verify_request_trace_shards(rig.w().sidecar_path());
    CHECK(v.consistent);
    CHECK(v.records == 1);
}

TEST_CASE("A failed fsync counts its batch as unknown, not written", "[request_trace][durable]")
{
    TraceRig rig(true);
    rig.w().start();
    rig.seam->fail_fsync(EIO);
    rig.w().record_request(request("tr_a", t14));
    rig.w().record_request(request("tr_b", t14));
    rig.loop.start();
    const auto report = close(rig.w());
    CHECK(report.stats.written == 0);
    CHECK(report.stats.unknown == 2);
    CHECK(invariant_holds(report.stats));

    const auto file = rig.w().requests_file(t14);
    const auto lines = read_lines(file);
    REQUIRE(lines.size() == 2);  // written, but never confirmed durable
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_a");
    CHECK(str(Json(lines[1])["trace_id"]) == "tr_b");

    Json side(read_file(rig.w().sidecar_path()));
    check_counts(side, report.stats);
    const auto shards = shards_of(side);
    REQUIRE(shards.size() == 1);
    CHECK(shards[0].persisted_records == 0);
    CHECK(shards[0].persisted_end == 0);
    REQUIRE(shards[0].extents.size() == 1);
    CHECK(shards[0].extents[0] ==
          std::array<std::uint64_t, 3>{0, std::filesystem::file_size(file), 2});
    CHECK(str(side["errors"], "last_error").find("Input/output error") != std::string::npos);
    const auto v = jsonlw::verify_request_trace_shards(rig.w().sidecar_path());
    CHECK(v.consistent);  // nothing claimed persisted, nothing outside the extent
    CHECK(v.records == 0);
}

TEST_CASE("A malformed record in a durable batch is counted in the sidecar published with "
          "that batch",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    rig.w().start();
    rig.w().record_request(request("tr_1", t14));
    rig.w().record_request(request("", t14));
    rig.w().record_response(response("tr_1", t14));
    rig.loop.start();
    flush(rig.w());
    const auto s = rig.w().stats();
    CHECK(s.written == 2);
    CHECK(s.dropped.malformed == 1);
    Json side(read_file(rig.w().sidecar_path()));
    CHECK(u64(side.root(), "sequence") == 1);
    CHECK_FALSE(boolean(side["closed"]));
    check_counts(side, s);
    const auto v = jsonlw::verify_request_trace_shards(rig.w().sidecar_path());
    CHECK(v.consistent);
    CHECK(v.counts_consistent);
    CHECK(v.records == 2);
}

TEST_CASE("A durable writer destroyed without close still leaves a closed sidecar",
          "[request_trace][durable]")
{
    Harness h;
    std::filesystem::path side;
    {
        auto o = trace_options(h, h.dir.path());
        o.durable = true;
        jsonlw::RequestTraceWriter w(h.executor(), o);
        h.start(w);
        w.record_request(request("tr_1", t14));
        flush(w);
        side = w.sidecar_path();
    }
    Json j(read_file(side));
    CHECK(boolean(j["closed"]));
    CHECK(u64(j["counts"], "submitted") == 1);
    CHECK(u64(j["counts"], "persisted") == 1);
    CHECK(u64(j["counts"], "pending") == 0);
    CHECK(jsonlw::verify_request_trace_shards(side).consistent);
}

TEST_CASE("A sidecar that cannot be published is counted and warned about, and the traces "
          "are still written",
          "[request_trace][durable]")
{
    TraceRig rig(true);
    // A regular file where the _writer folder should be.
    std::filesystem::create_directories(rig.root());
    write_file(rig.root() / "_writer", "not a directory");
    rig.w().start();
    rig.loop.start();
    rig.w().record_request(request("tr_1", t14));
    const auto report = close(rig.w());
    CHECK(report.stats.written == 1);
    CHECK(rig.logs.count(jsonlw::LogLevel::warning,
                         "Failed to publish request trace writer accounting") == 1);
    const auto lines = read_lines(rig.w().requests_file(t14));
    REQUIRE(lines.size() == 1);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_1");
    CHECK_FALSE(std::filesystem::exists(rig.w().sidecar_path()));
}

namespace {

// Fails the first `n` opens with EEXIST, as a network filesystem does when many writers
// create files in a new hour folder at once.
class EexistOnOpen : public SeamFileIo {
public:
    explicit EexistOnOpen(int n) : left_(n) {}
    int open(const char* path, int flags, mode_t mode) noexcept override
    {
        attempts_.fetch_add(1);
        if (left_.fetch_sub(1) > 0) {
            errno = EEXIST;
            return -1;
        }
        return SeamFileIo::open(path, flags, mode);
    }
    int attempts() const { return attempts_.load(); }

private:
    std::atomic<int> left_;
    std::atomic<int> attempts_{0};
};

jsonlw::CloseReport trace_through(const std::shared_ptr<EexistOnOpen>& io_seam, Harness& h)
{
    auto o = trace_options(h, h.dir.path() / "traces");
    o.durable = true;
    o.file_io = io_seam;
    jsonlw::CloseReport report;
    {
        jsonlw::RequestTraceWriter w(h.executor(), std::move(o));
        h.start(w);
        w.record_request(request("tr_1", t14));
        report = close(w);
    }
    h.loop.stop();
    return report;
}

}  // namespace

TEST_CASE("An open that fails with EEXIST is retried, and the record is then written",
          "[request_trace][durable][eexist]")
{
    Harness h;
    auto io_seam = std::make_shared<EexistOnOpen>(2);  // the 50 ms and 250 ms retries succeed
    const auto report = trace_through(io_seam, h);
    CHECK(io_seam->attempts() == 3);
    CHECK(report.stats.written == 1);
    CHECK(report.stats.dropped.write_error == 0);
    CHECK(invariant_holds(report.stats));
    const auto lines = read_lines(h.dir.path() / "traces" / "2026-09-03T14" /
                                  ("requests" + pid_suffix() + ".jsonl"));
    REQUIRE(lines.size() == 1);
    CHECK(str(Json(lines[0])["trace_id"]) == "tr_1");
}

TEST_CASE("An open that keeps failing with EEXIST is given up after three retries and the "
          "record counted as a write error",
          "[request_trace][durable][eexist]")
{
    Harness h;
    auto io_seam = std::make_shared<EexistOnOpen>(1000);
    const auto report = trace_through(io_seam, h);
    CHECK(io_seam->attempts() == 4);  // the first open, then after 50 ms, 250 ms and 1 s
    CHECK(report.stats.written == 0);
    CHECK(report.stats.dropped.write_error == 1);
    CHECK(invariant_holds(report.stats));
    CHECK(h.logs.count(jsonlw::LogLevel::warning, "Failed to write request trace JSONL") == 1);
}

TEST_CASE("A full queue and a close that outlives its timeout are logged in TensorRT-LLM's "
          "words",
          "[request_trace][durable][logs]")
{
    Harness h(with_seam);
    auto o = trace_options(h, h.dir.path() / "traces");
    o.durable = true;
    o.queue_capacity = 8;
    o.shutdown_timeout = std::chrono::milliseconds(300);
    jsonlw::RequestTraceWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.seam->hold_writev();
    w.start();
    h.loop.start();
    w.record_request(request("tr_first", t14));
    REQUIRE(h.seam->wait_writev_held());  // the I/O thread is stuck in its first append
    for (int i = 0; i < 8 + 1000; ++i) w.record_request(request("tr_" + std::to_string(i), t14));
    const auto report = close(w);
    CHECK_FALSE(report.drained);
    CHECK(report.stats.dropped.queue_full == 1000);
    CHECK(report.stats.dropped.shutdown == 8);
    CHECK(report.stats.unknown == 1);
    CHECK(invariant_holds(report.stats));
    CHECK(h.logs.count(jsonlw::LogLevel::warning,
                       "Dropped 1 request trace records: the writer queue is full") == 1);
    CHECK(h.logs.count(jsonlw::LogLevel::warning,
                       "Dropped 1000 request trace records: the writer queue is full") == 1);
    CHECK(h.logs.count(jsonlw::LogLevel::warning,
                       "Timed out flushing request traces; dropping remaining records") == 1);
    CHECK(h.logs.count(jsonlw::LogLevel::warning, "request trace JSONL") == 0);
    // The closed sidecar is published right after the timeout, by a thread of the writer's
    // own, not when the stuck append returns: its counts are the close report's.
    REQUIRE(wait_until([&] {
        return std::filesystem::exists(w.sidecar_path()) &&
               read_file(w.sidecar_path()).find("\"closed\":true") != std::string::npos;
    }));
    CHECK(w.append_outlived_close());
    const Json side(read_file(w.sidecar_path()));
    check_counts(side, report.stats);
}

TEST_CASE("A durable request trace refuses format otlp when it is made, naming why",
          "[request_trace][durable]")
{
    boost::asio::io_context io;
    jsonlw::RequestTraceOptions o;
    o.directory = std::filesystem::temp_directory_path() / "jsonlw-durable-otlp";
    o.durable = true;
    o.format = jsonlw::LineFormat::otlp;
    try {
        jsonlw::RequestTraceWriter w(io.get_executor(), o);
        FAIL("constructed");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) ==
              "request trace: durable mode needs format jsonl (its sidecar verifies record lines)");
    }
    CHECK_FALSE(std::filesystem::exists(o.directory));
    o.durable = false;  // not durable: OTLP is fine
    jsonlw::RequestTraceWriter w(io.get_executor(), o);
    CHECK(w.stats().written == 0);
}
