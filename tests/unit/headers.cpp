// The small value types of the public API, and (through the generated header_*.cpp TUs linked
// into this test) that every public header compiles on its own.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/jsonlw.hpp>

#include "files.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <system_error>

using namespace std::chrono_literals;

TEST_CASE("every public header compiles when it is included first", "[unit][headers]")
{
    // The proof is that this executable links: each header_<name>.cpp includes one header
    // first. What remains to check here is the umbrella header's version.
    CHECK(std::string(jsonlw::version_string) ==
          std::to_string(JSONLW_VERSION_MAJOR) + "." + std::to_string(JSONLW_VERSION_MINOR) +
              "." + std::to_string(JSONLW_VERSION_PATCH));
}

TEST_CASE("every public header on disk has a self-containment TU and is in the umbrella header", "[unit][headers]")
{
    std::set<std::string> tested;
    std::stringstream list(JSONLW_TESTED_HEADERS);
    for (std::string h; std::getline(list, h, ',');) tested.insert(h);

    const std::filesystem::path root = JSONLW_INCLUDE_DIR;
    std::set<std::string> on_disk;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root))
        if (e.is_regular_file() && e.path().extension() == ".hpp")
            on_disk.insert(std::filesystem::relative(e.path(), root).generic_string());
    REQUIRE_FALSE(on_disk.empty());
    // A header missing here: add it to public_headers in tests/meson.build.
    CHECK(on_disk == tested);

    const std::string umbrella = jsonlw_test::read_file(root / "jsonlw.hpp");
    for (const auto& h : on_disk) {
        if (h == "jsonlw.hpp" || h.rfind("detail/", 0) == 0) continue;
        INFO("umbrella header lacks " << h);
        CHECK(umbrella.find("#include <jsonlw/" + h + ">") != std::string::npos);
    }
}

TEST_CASE("UTC timestamps are spelled as ISO-8601 with microseconds and +00:00", "[unit][utc_time]")
{
    using namespace std::chrono;
    const auto tp = sys_days{year{2026} / 9 / 3} + hours{14} + minutes{5} + seconds{9} + microseconds{123456};
    const auto wall = time_point_cast<jsonlw::WallClock::duration>(tp);
    CHECK(jsonlw::utc_iso8601(wall) == "2026-09-03T14:05:09.123456+00:00");
    CHECK(jsonlw::utc_hour(wall) == "2026-09-03T14");
    jsonlw::LineBuffer buf;
    buf.append(std::string_view("x="));
    jsonlw::append_utc_iso8601(buf, wall);
    CHECK(std::string(buf.data(), buf.size()) == "x=2026-09-03T14:05:09.123456+00:00");
    const auto early = time_point_cast<jsonlw::WallClock::duration>(sys_days{year{1970} / 1 / 1} + milliseconds{1500});
    CHECK(jsonlw::utc_iso8601(early) == "1970-01-01T00:00:01.500000+00:00");
}

TEST_CASE("WriterOptions defaults are the documented ones", "[unit][options]")
{
    const jsonlw::WriterOptions o;
    CHECK(o.directory.empty());
    CHECK(o.queue_capacity == 1024);
    CHECK_FALSE(o.huge_pages);
    CHECK(o.batch_records == 1024);
    CHECK(o.batch_bytes == std::size_t{1} << 20);
    CHECK(o.flush_interval == 0ms);
    CHECK(o.overflow == jsonlw::Overflow::drop_newest);
    CHECK(o.block_timeout == 100ms);
    CHECK(o.durability == jsonlw::Durability::none);
    CHECK(o.fsync_interval == 1000ms);
    CHECK(o.shutdown_timeout == 5000ms);
    CHECK(!o.log);
    CHECK(!o.io_executor.has_value());
    CHECK(o.file_io == nullptr);
    CHECK(o.idle_poll == std::chrono::microseconds(1000));
    CHECK(o.idle_poll_max == std::chrono::microseconds(8000));

    // An aggregate: designated initializers in declaration order.
    const jsonlw::WriterOptions d{
        .directory = "/tmp/x",
        .stem = "perf",
        .subject = "performance metrics",
        .queue_capacity = 8,
        .batch_records = 4,
        .overflow = jsonlw::Overflow::block,
        .shutdown_timeout = 300ms,
    };
    CHECK(d.stem == "perf");
    CHECK(d.queue_capacity == 8);
    CHECK(d.batch_bytes == std::size_t{1} << 20);
}

TEST_CASE("DropCounts::total sums every reason and WriterStats compare by value", "[unit][stats]")
{
    jsonlw::DropCounts d;
    CHECK(d.total() == 0);
    d.queue_full = 1;
    d.oldest_evicted = 2;
    d.malformed = 4;
    d.write_error = 8;
    d.shutdown = 16;
    d.unexpected = 32;
    d.closed = 64;
    CHECK(d.total() == 127);

    jsonlw::WriterStats a, b;
    CHECK(a == b);
    b.dropped.closed = 1;
    CHECK_FALSE(a == b);

    const jsonlw::CloseReport r;
    CHECK_FALSE(r.drained);
    CHECK(r.stats == jsonlw::WriterStats{});
}

TEST_CASE("SubmitResult and LogLevel have distinct names", "[unit][enums]")
{
    using jsonlw::SubmitResult;
    const std::string names[] = {
        std::string(jsonlw::to_string(SubmitResult::accepted)),
        std::string(jsonlw::to_string(SubmitResult::dropped_queue_full)),
        std::string(jsonlw::to_string(SubmitResult::closed)),
        std::string(jsonlw::to_string(SubmitResult::disabled)),
    };
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK_FALSE(names[i].empty());
        for (std::size_t j = i + 1; j < 4; ++j) CHECK(names[i] != names[j]);
    }
    CHECK(jsonlw::to_string(jsonlw::LogLevel::warning) != jsonlw::to_string(jsonlw::LogLevel::error));
    CHECK_FALSE(jsonlw::to_string(jsonlw::LogLevel::debug).empty());
    CHECK_FALSE(jsonlw::to_string(jsonlw::LogLevel::info).empty());
}

TEST_CASE("jsonlw error codes convert to std::error_code with their own category", "[unit][errors]")
{
    const std::error_code t = jsonlw::errc::timed_out;
    const std::error_code d = jsonlw::make_error_code(jsonlw::errc::disabled);
    CHECK(t);
    CHECK(d);
    CHECK(t != d);
    CHECK(&t.category() == &jsonlw::error_category());
    CHECK(std::string(t.category().name()).size() > 0);
    CHECK_FALSE(t.message().empty());
    CHECK(t.message() != d.message());
    CHECK(t.value() == 1);
}
