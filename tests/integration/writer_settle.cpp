// settle(): a write_batch that sends its lines somewhere other than a file (a broker) reports
// how they fared, and the counters keep the invariant — the hook the Kafka sink uses.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <memory>
#include <mutex>
#include <vector>

using namespace jsonlw_test;

namespace {

// Sends nothing anywhere: each batch of n records is settled as `delivered` written,
// `failed` write_error, the rest unknown, as set by the test.
class SettlingEncoder final : public jsonlw::RecordEncoder<Rec> {
public:
    std::uint64_t delivered = 0, failed = 0;  // per batch (the test sends one batch at a time)
    std::vector<jsonlw::AppendResult> results;

    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("id", r.id).end_object();
    }
    void write_batch(std::span<const Rec> batch, jsonlw::BatchOutput<Rec>& out) override
    {
        const jsonlw::Lines lines = out.serialize_batch(batch);
        results.push_back(out.settle(lines, delivered, failed));
    }
};

}  // namespace

TEST_CASE("a batch settled as partly delivered counts written, write_error and unknown exactly", "[integration][settle]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 4;
    auto enc = std::make_shared<SettlingEncoder>();
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(), o, enc);
    enc->delivered = 2;
    enc->failed = 1;
    w.start();
    for (int i = 0; i < 4; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.loop.start();
    flush(w);
    const auto s = w.stats();
    CHECK(s.written == 2);
    CHECK(s.dropped.write_error == 1);
    CHECK(s.unknown == 1);
    CHECK(s.batches == 1);
    CHECK(s.bytes == 0);  // which lines were delivered is the caller's to say: not given here
    CHECK(invariant_holds(s));
    REQUIRE(enc->results.size() == 1);
    CHECK(enc->results[0].records_written == 2);
    CHECK(enc->results[0].records_failed == 1);
    CHECK(enc->results[0].records_unknown == 1);
    CHECK_FALSE(enc->results[0].ok());
    // Nothing was written to a file: settle() is not an append.
    CHECK_FALSE(std::filesystem::exists(w.file_path()));

    // Delivered whole: the lines' bytes count, and the result is a success.
    enc->delivered = 4;
    enc->failed = 0;
    for (int i = 4; i < 8; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    const auto report = close(w);
    CHECK(report.stats.written == 6);
    CHECK(report.stats.bytes == 4 * std::string(R"({"id":4})" "\n").size());
    CHECK(invariant_holds(report.stats));
    CHECK(enc->results.back().ok());
}

TEST_CASE("settle never counts more records than the group holds", "[integration][settle]")
{
    Harness h;
    auto o = h.options();
    o.batch_records = 3;
    auto enc = std::make_shared<SettlingEncoder>();
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(), o, enc);
    enc->delivered = 10;  // more than the batch: clamped
    enc->failed = 10;
    w.start();
    for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.loop.start();
    const auto report = close(w);
    CHECK(report.stats.written == 3);
    CHECK(report.stats.dropped.write_error == 0);
    CHECK(report.stats.unknown == 0);
    // Every line was delivered: all of their bytes count.
    CHECK(report.stats.bytes == std::string(R"({"id":0})" "\n").size() * 3);
    CHECK(invariant_holds(report.stats));
}
