// How queued records become batches: batch_records caps a batch, and records queued while an
// append is slow are gathered into full batches.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <cstdint>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;

TEST_CASE("10 queued records with batch_records = 4 are appended as 4, 4 and 2", "[integration][writer][batching]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 4;
    TestWriter w(h.executor(), o);
    w.start();
    // All ten are queued before the drain first runs.
    for (int i = 0; i < 10; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.loop.start();
    flush(w);

    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{4, 4, 2});
    const auto calls = h.seam->writev_calls();
    REQUIRE(calls.size() == 3);
    std::size_t bytes = 0;
    for (const auto& c : calls) {
        CHECK(c.result == static_cast<ssize_t>(c.bytes));
        bytes += c.bytes;
    }
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.batches == 3);
    CHECK(s.written == 10);
    CHECK(s.bytes == bytes);
    CHECK(ids_of(read_lines(w.file_path())) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    CHECK(invariant_holds(s));
}

TEST_CASE("while an append is slow, queued records are gathered into full batches", "[integration][writer][batching]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_records = 64;
    TestWriter w(h.executor(), o);
    ReleaseOnExit release(h.seam);
    h.start(w);
    REQUIRE(h.stick_append(w, rec(0)));
    for (int i = 1; i <= 100; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
    h.seam->release();
    flush(w);
    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{1, 64, 36});
    CHECK(w.stats().batches == 3);
    CHECK(count_lines(w.file_path()) == 101);
}
