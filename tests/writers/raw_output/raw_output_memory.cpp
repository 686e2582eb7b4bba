// RawOutputWriter's memory on the hook path: a written record's buffers go back to the hook
// (RecordShells), so in steady state an output costs its caller's thread only its two
// bookkeeping nodes (the pending map's and the LRU list's) and the writer's I/O thread frees
// nothing that thread allocated: before, each output cost 14 allocations on the caller's thread and 3 frees on the
// I/O thread, which contended for the caller's malloc arena. The test links the allocation
// counter (tests/support/alloc_count.hpp), which replaces the global operator new and delete.
#include <catch2/catch.hpp>

#include "alloc_count.hpp"
#include "raw_output_support.hpp"

#include <string>
#include <vector>

using namespace jsonlw_test;
using namespace raw_output_test;

namespace {

// One streamed output of 8 chunks (16 bytes of text and 4 ids each), as a server sends it.
// Returns what its hook calls allocated on this thread.
std::uint64_t stream_output(RawOutputWriter& w, std::uint64_t request)
{
    static const std::string text = "tok tok tok tok ";
    static const std::vector<std::int32_t> ids = {101, 102, 103, 104};
    std::uint64_t inside = 0;
    for (int k = 0; k < 8; ++k) {
        OutputChunk c;
        c.request_id = request;
        c.text_diff = text;
        c.token_ids_diff = ids;
        c.is_final = k == 7;
        c.streaming = true;
        const std::uint64_t before = allocations_on_this_thread();
        w.on_chunk(c);
        inside += allocations_on_this_thread() - before;
    }
    return inside;
}

}  // namespace

TEST_CASE("a steady stream of outputs reuses written records' buffers: two allocations per "
          "output on the caller's thread and none of them freed on the I/O thread",
          "[raw_output][memory]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);

    // Warm-up: the first outputs allocate their buffers; once written they are handed back.
    std::uint64_t request = 0;
    const std::uint64_t first_output = stream_output(w, request++);
    for (int i = 1; i < 128; ++i) stream_output(w, request++);
    // A flush, not the written count: records count as written inside the batch write, and
    // their buffers go back to the hook only after it (recycle); a flush completes after both.
    flush(w);
    REQUIRE(w.stats().written == 128);
    // 2 nodes + 4 buffers each for the text, the frame ends and the ids, grown chunk by chunk.
    CHECK(first_output == 14);

    // Steady state: rounds of 64 outputs, each written and recycled before the next round
    // starts, so every output finds a set of buffers handed back (the ring keeps 256).
    std::uint64_t inside = 0, outputs = 0;
    count_foreign_frees_on("jsonlw:raw");  // the writer's I/O thread (jsonlw:<stem>)
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 64; ++i, ++outputs) inside += stream_output(w, request++);
        flush(w);
        REQUIRE(w.stats().written == 128 + outputs);
    }
    stop_counting_foreign_frees();
    CHECK(inside == 2 * outputs);  // the pending map's node and the LRU list's node
    CHECK(foreign_frees() == 0);  // nothing another thread allocated

    const auto report = close(w);
    CHECK(report.stats.written == 128 + outputs);
    CHECK(report.stats.dropped.total() == 0);
    const std::vector<Record> records = read_records(h.dir.path());
    REQUIRE(records.size() == 128 + outputs);
    std::string whole;
    for (int k = 0; k < 8; ++k) whole += "tok tok tok tok ";
    std::size_t wrong = 0;
    for (const Record& r : records) wrong += r.text == whole && r.token_ids.size() == 32 ? 0 : 1;
    CHECK(wrong == 0);
}
