// What a writer's file holds: its name (<stem>-<host>-<pid>-<UTC>.jsonl), one compact JSON line
// per record in submission order, invalid UTF-8 replaced and counted; and each writer's own
// file and counters.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <unistd.h>

#include <cctype>
#include <climits>
#include <ctime>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::SubmitResult;

namespace {

std::string hostname()
{
    char buf[HOST_NAME_MAX + 1] = {};
    ::gethostname(buf, sizeof buf - 1);
    return buf;
}

Rec malformed(int id) { return failing(id, &Rec::throw_malformed); }

}  // namespace

TEST_CASE("records become one compact JSON line each, in submission order, in <stem>-<host>-<pid>-<UTC>.jsonl; a second start() changes nothing",
          "[integration][writer][lines]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    CHECK(w.file_path().empty());
    CHECK(w.options().stem == "test");
    CHECK(w.options().subject == "test");
    CHECK(w.get_executor() == boost::asio::any_io_executor(h.executor()));

    const std::time_t before = std::time(nullptr);
    w.start();
    const std::time_t after = std::time(nullptr);
    const std::filesystem::path path = w.file_path();
    REQUIRE_FALSE(path.empty());
    CHECK(path.parent_path() == h.dir.path());

    // <stem>-<hostname>-<pid>-<YYYYMMDDTHHMMSSZ>.jsonl, the time taken at start().
    const std::string name = path.filename().string();
    const std::string prefix = "test-" + hostname() + "-" + std::to_string(::getpid()) + "-";
    INFO("file name " << name);
    REQUIRE(name.rfind(prefix, 0) == 0);
    // YYYYMMDDTHHMMSSZ.jsonl
    const std::string stamp = name.substr(prefix.size());
    REQUIRE(stamp.size() == 22);
    for (std::size_t i : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 9u, 10u, 11u, 12u, 13u, 14u})
        REQUIRE(std::isdigit(static_cast<unsigned char>(stamp[i])));
    REQUIRE(stamp[8] == 'T');
    REQUIRE(stamp.substr(15) == "Z.jsonl");
    const auto num = [&](std::size_t pos, std::size_t len) { return std::stoi(stamp.substr(pos, len)); };
    std::tm tm{};
    tm.tm_year = num(0, 4) - 1900;
    tm.tm_mon = num(4, 2) - 1;
    tm.tm_mday = num(6, 2);
    tm.tm_hour = num(9, 2);
    tm.tm_min = num(11, 2);
    tm.tm_sec = num(13, 2);
    const std::time_t t = ::timegm(&tm);
    CHECK(t >= before - 1);
    CHECK(t <= after + 1);

    std::vector<std::string> want;
    for (int i = 0; i < 100; ++i) {
        const std::string text = "text " + std::to_string(i);
        const double value = i * 0.5;
        REQUIRE(w.submit(rec(i, text, value)) == SubmitResult::accepted);
        want.push_back(line_of(i, text, std::to_string(i / 2) + (i % 2 ? ".5" : ".0")));
    }
    h.loop.start();  // the drain finds all 100 queued: one batch (the cap is 1,024)
    flush(w);

    w.start();  // a second start(): same file, nothing new
    CHECK(w.file_path() == path);
    REQUIRE(w.submit(rec(100, "after")) == SubmitResult::accepted);
    want.push_back(line_of(100, "after"));
    flush(w);

    const std::string content = read_file(path);
    REQUIRE_FALSE(content.empty());
    CHECK(content.back() == '\n');
    CHECK(split_lines(content) == want);
    CHECK(files_in(h.dir.path()) == std::vector<std::string>{name});

    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.submitted == 101);
    CHECK(s.written == 101);
    CHECK(s.pending == 0);
    CHECK(s.dropped.total() == 0);
    CHECK(s.bytes == content.size());
    CHECK(s.batches == 2);  // the 100 queued before start() in one batch, then the 101st
    CHECK(invariant_holds(s));
    CHECK(h.logs.count(LogLevel::warning) == 0);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("invalid UTF-8 in a record is replaced by U+FFFD and counted as sanitized; the record is kept", "[integration][writer][utf8][lines]")
{
    Harness h;
    TestWriter w(h.executor(), h.options());
    h.start(w);
    REQUIRE(w.submit(rec(1, "caf\xC3\xA9")) == SubmitResult::accepted);
    REQUIRE(w.submit(rec(2, "bad\xFF" "byte")) == SubmitResult::accepted);
    flush(w);
    CHECK(read_lines(w.file_path()) ==
          std::vector<std::string>{line_of(1, "caf\xC3\xA9"), line_of(2, "bad\xEF\xBF\xBD" "byte")});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 2);
    CHECK(s.sanitized == 1);
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));
}

TEST_CASE("stats are per writer, never process-global", "[integration][writer][stats][lines]")
{
    Harness h;
    auto oa = h.options();
    oa.stem = "a";
    auto ob = h.options();
    ob.stem = "b";
    TestWriter a(h.executor(), oa);
    TestWriter b(h.executor(), ob);
    a.start();
    b.start();
    h.loop.start();
    for (int i = 0; i < 3; ++i) REQUIRE(a.submit(rec(i)) == SubmitResult::accepted);
    for (int i = 0; i < 5; ++i) REQUIRE(b.submit(rec(i)) == SubmitResult::accepted);
    REQUIRE(b.submit(malformed(9)) == SubmitResult::accepted);
    flush(a);
    flush(b);
    CHECK(a.stats().written == 3);
    CHECK(a.stats().dropped.malformed == 0);
    CHECK(b.stats().written == 5);
    CHECK(b.stats().dropped.malformed == 1);
    CHECK(a.file_path() != b.file_path());
    CHECK(count_lines(a.file_path()) == 3);
    CHECK(count_lines(b.file_path()) == 5);
}
