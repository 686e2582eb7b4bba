// Lines delivered somewhere the engine cannot see — a broker — go through a LineSink of their
// own (docs/sinks.md), whose append() says how many were acknowledged, refused and left in
// doubt; the writer counts exactly that (written, write_error, unknown) and keeps the invariant.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <jsonlw/sinks/line_sink.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

using namespace jsonlw_test;

namespace {

// A broker in memory: each group's first `acked` lines are acknowledged (kept as messages),
// the next `refused` are refused outright, and the rest are sent without an answer.
class BrokerSink final : public jsonlw::LineSink {
public:
    std::uint64_t acked = 0, refused = 0;  // per group, set by the test between batches

    jsonlw::AppendResult append(std::string_view, const jsonlw::Lines& lines) noexcept override
    {
        jsonlw::AppendResult r;
        r.attempted = true;
        std::string_view rest = lines.bytes;
        std::lock_guard lk(mu_);
        for (std::uint64_t i = 0; i < lines.records && i < acked; ++i) {
            const std::size_t end = rest.find('\n') + 1;
            messages_.emplace_back(rest.substr(0, end - 1));
            r.landed += end;
            rest.remove_prefix(end);
            ++r.records_written;
        }
        r.records_failed = std::min(refused, lines.records - r.records_written);
        r.records_unknown = lines.records - r.records_written - r.records_failed;
        if (r.records_written < lines.records) r.ec = std::make_error_code(std::errc::io_error);
        return r;
    }
    std::vector<std::string> messages() const
    {
        std::lock_guard lk(mu_);
        return messages_;
    }

private:
    mutable std::mutex mu_;
    std::vector<std::string> messages_;
};

std::string line_of(int i)
{
    return "{\"id\":" + std::to_string(i) + ",\"text\":\"r" + std::to_string(i) + "\",\"value\":0.0}";
}

}  // namespace

TEST_CASE("a broker sink's partly acknowledged batch counts written, write_error and unknown exactly", "[integration][sinks]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 4;
    auto broker = std::make_shared<BrokerSink>();
    o.sink = broker;
    TestWriter w(h.executor(), o);
    broker->acked = 2;
    broker->refused = 1;
    w.start();
    for (int i = 0; i < 4; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.loop.start();
    flush(w);
    const auto s = w.stats();
    CHECK(s.written == 2);
    CHECK(s.dropped.write_error == 1);
    CHECK(s.unknown == 1);
    CHECK(s.batches == 1);
    CHECK(s.bytes == line_of(0).size() + 1 + line_of(1).size() + 1);  // what the broker took
    CHECK(invariant_holds(s));
    CHECK(broker->messages() == std::vector<std::string>{line_of(0), line_of(1)});
    // Nothing went to a file.
    CHECK(w.file_path().empty());
    CHECK(w.files().empty());
    CHECK(std::filesystem::is_empty(h.dir.path()));

    // Acknowledged whole: every line's bytes count.
    broker->acked = 4;
    broker->refused = 0;
    for (int i = 4; i < 8; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    const auto report = close(w);
    CHECK(report.stats.written == 6);
    CHECK(report.stats.dropped.write_error == 1);
    CHECK(report.stats.unknown == 1);
    CHECK(report.stats.bytes == 2 * (line_of(0).size() + 1) + 4 * (line_of(4).size() + 1));
    CHECK(invariant_holds(report.stats));
    CHECK(broker->messages() == std::vector<std::string>{line_of(0), line_of(1), line_of(4),
                                                         line_of(5), line_of(6), line_of(7)});
}

TEST_CASE("a broker sink that acknowledges the whole batch counts every record written and every byte", "[integration][sinks]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 3;
    auto broker = std::make_shared<BrokerSink>();
    broker->acked = 10;  // more than the batch holds: all 3 acknowledged, none refused
    broker->refused = 10;
    o.sink = broker;
    TestWriter w(h.executor(), o);
    w.start();
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.loop.start();
    const auto report = close(w);
    CHECK(report.stats.written == 3);
    CHECK(report.stats.dropped.write_error == 0);
    CHECK(report.stats.unknown == 0);
    CHECK(report.stats.bytes == 3 * (line_of(0).size() + 1));
    CHECK(invariant_holds(report.stats));
    CHECK(broker->messages().size() == 3);
}
