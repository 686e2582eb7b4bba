// The stage around the reference: ring slots and back-pressure, delivery order and leases,
// the CPU backend's results and thread pool, first-gen capture, argument checks, the Asio
// bridge, and no-GPU detection.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/snapshot/asio_bridge.hpp>
#include <jsonlw/snapshot/fast_row.hpp>
#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include "../../lib/snapshot/src/slot_ring.hpp"
#include "stage_support.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace jsonlw::snapshot;
using namespace std::chrono_literals;
using jsonlw_test::Keeper;
using jsonlw_test::Step;

namespace {

SnapshotConfig small_config()
{
    return jsonlw_test::cpu_config(5, 64, 4096, 2);
}

bool same_bits(float a, float b)
{
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// The CPU backend runs fast_row: ids, logits, rank, counts and flags are the oracle's bit for
// bit, lse and logprobs within fast_row_tolerance (fast_row.hpp).
void check_row_matches_reference(const TokenSnapshot& got, const Step& s, int r, int k)
{
    TokenSnapshot want{};
    RowScratch scratch;
    reference_row(s.logits.data() + std::size_t(r) * std::size_t(s.vocab), LogitDType::f32, s.vocab,
                  s.sampled[std::size_t(r)], k, want, scratch);
    CHECK(got.request_id == s.meta[std::size_t(r)].request_id);
    CHECK(got.seq_index == s.meta[std::size_t(r)].seq_index);
    CHECK(got.step == s.meta[std::size_t(r)].step);
    CHECK(got.sampled_id == want.sampled_id);
    CHECK(same_bits(got.sampled_logit, want.sampled_logit));
    CHECK(fast_row_tolerance.within(got.sampled_logprob, want.sampled_logprob));
    CHECK(got.sampled_rank == want.sampled_rank);
    CHECK(fast_row_tolerance.within(got.lse, want.lse));
    CHECK(got.k == want.k);
    CHECK(got.status_flags == want.status_flags);
    for (int i = 0; i < want.k; ++i) {
        CHECK(got.topk_ids[i] == want.topk_ids[i]);
        CHECK(same_bits(got.topk_logits[i], want.topk_logits[i]));
        CHECK(fast_row_tolerance.within(got.topk_logprobs[i], want.topk_logprobs[i]));
    }
}

}  // namespace

TEST_CASE("the CPU stage delivers one batch per step, in order, equal to the reference row by row", "[snapshot][stage]")
{
    Keeper keep;
    SnapshotConfig c = small_config();
    c.ring_slots = 4;
    auto stage = SnapshotStage::create(c, Backend::cpu, keep.sink());
    REQUIRE(stage->backend() == Backend::cpu);
    const Step a(3, 1000, 1, 7), b(5, 1000, 2, 8);
    REQUIRE(a.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(b.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(stage->drain(5s));
    REQUIRE(keep.size() == 2);
    CHECK(keep.batches[0].batch_seq == 0);
    CHECK(keep.batches[1].batch_seq == 1);
    CHECK(keep.batches[0].gap_before == 0);
    CHECK(keep.batches[0].t_ready_ns >= keep.batches[0].t_enqueue_ns);
    REQUIRE(keep.batches[0].rows.size() == 3);
    REQUIRE(keep.batches[1].rows.size() == 5);
    for (int r = 0; r < 3; ++r) check_row_matches_reference(keep.batches[0].rows[std::size_t(r)], a, r, 5);
    for (int r = 0; r < 5; ++r) check_row_matches_reference(keep.batches[1].rows[std::size_t(r)], b, r, 5);
    // The CPU backend delivers on the capturing thread.
    CHECK(keep.threads[0] == std::this_thread::get_id());
    const SnapshotStats st = stage->stats();
    CHECK(st.captured_steps == 2);
    CHECK(st.captured_rows == 8);
    CHECK(st.delivered_batches == 2);
    CHECK(st.in_flight == 0);
    CHECK(st.leased == 2);
}

TEST_CASE("rows spread over the thread pool give the same bits as one thread", "[snapshot][stage][threads]")
{
    const Step s(64, 3000, 11);
    Keeper one, many;
    SnapshotConfig c = small_config();
    c.k = 20;
    c.cpu_threads = 1;
    auto a = SnapshotStage::create(c, Backend::cpu, one.sink());
    c.cpu_threads = 4;
    c.cpu_parallel_min_rows = 2;
    auto b = SnapshotStage::create(c, Backend::cpu, many.sink());
    for (int i = 0; i < 2; ++i) {  // the pool is reused across steps
        REQUIRE(s.capture(*a) == CaptureResult::enqueued);
        REQUIRE(s.capture(*b) == CaptureResult::enqueued);
        REQUIRE(one.size() == 1);
        REQUIRE(many.size() == 1);
        const auto& x = one.batches.back().rows;
        const auto& y = many.batches.back().rows;
        REQUIRE(x.size() == y.size());
        for (std::size_t r = 0; r < x.size(); ++r) {
            // Only the first k entries of the arrays are defined.
            CHECK(std::memcmp(&x[r], &y[r], offsetof(TokenSnapshot, topk_ids)) == 0);
            CHECK(std::memcmp(x[r].topk_ids, y[r].topk_ids, 20 * sizeof(std::int32_t)) == 0);
            CHECK(std::memcmp(x[r].topk_logprobs, y[r].topk_logprobs, 20 * sizeof(float)) == 0);
        }
        for (int r = 0; r < 64; r += 9) check_row_matches_reference(y[std::size_t(r)], s, r, 20);
        one.batches.clear();  // drops the leases: the slots are free again
        many.batches.clear();
    }
}

TEST_CASE("a full ring drops the step with a count, and the next batch says how many were lost", "[snapshot][stage][backpressure]")
{
    Keeper keep;
    auto stage = SnapshotStage::create(small_config(), Backend::cpu, keep.sink());
    const Step s(4, 100, 3);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    // Both slots are leased by the keeper: the decode loop is not blocked, the step is dropped.
    CHECK(s.capture(*stage) == CaptureResult::dropped);
    CHECK(s.capture(*stage) == CaptureResult::dropped);
    SnapshotStats st = stage->stats();
    CHECK(st.dropped_steps == 2);
    CHECK(st.dropped_rows == 8);
    CHECK(st.leased == 2);

    // Slots come back only when a lease is dropped, oldest slot first (round robin).
    keep.batches[1].lease.release();
    CHECK(s.capture(*stage) == CaptureResult::dropped);  // slot 0 is next, still leased
    keep.batches[0] = SnapshotBatch{};                    // drops lease 0
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(keep.size() == 3);
    CHECK(keep.batches[2].batch_seq == 2);
    CHECK(keep.batches[2].gap_before == 3);
    st = stage->stats();
    CHECK(st.captured_steps == 3);
    CHECK(st.dropped_steps == 3);
    CHECK(st.delivered_batches == 3);
}

TEST_CASE("completions in any order are delivered in capture order, once each", "[snapshot][ring]")
{
    std::vector<std::uint64_t> seen;
    detail::RingLayout layout;
    layout.slots = 4;
    layout.max_rows = 2;
    auto ring = detail::SlotRing::create(layout, detail::aligned_host_allocator(),
                                         [&](SnapshotBatch&& b) { seen.push_back(b.batch_seq); });
    int slots[3];
    for (int i = 0; i < 3; ++i) {
        slots[i] = ring->try_acquire();
        REQUIRE(slots[i] == i);
        ring->commit(slots[i], 1, 0, 0, 0);
    }
    REQUIRE(ring->complete(slots[2], false));
    REQUIRE(ring->complete(slots[1], true));
    CHECK(seen.empty());  // 0 is not ready: nothing may overtake it
    CHECK_FALSE(ring->wait_delivered(std::chrono::steady_clock::now() + 20ms));
    REQUIRE(ring->complete(slots[0], false));
    CHECK(seen == std::vector<std::uint64_t>{0, 1, 2});
    CHECK(ring->failed_batches() == 1);
    // The watchdog and the host function racing: the second completion is a no-op.
    CHECK_FALSE(ring->complete(slots[0], true));
    CHECK(seen.size() == 3);
    CHECK(ring->wait_delivered(std::chrono::steady_clock::now() + 1s));
}

TEST_CASE("a completion from another thread wakes a drain waiting off the loop", "[snapshot][ring][threads]")
{
    std::atomic<int> delivered{0};
    detail::RingLayout layout;
    layout.slots = 2;
    layout.max_rows = 1;
    auto ring = detail::SlotRing::create(layout, detail::aligned_host_allocator(),
                                         [&](SnapshotBatch&&) { ++delivered; });
    const int slot = ring->try_acquire();
    ring->commit(slot, 0, 0, 0, 0);
    auto drained = std::async(std::launch::async, [&] {
        return ring->wait_delivered(std::chrono::steady_clock::now() + 20s);
    });
    std::thread completer([&] { ring->complete(slot, false); });
    CHECK(drained.get());
    completer.join();
    CHECK(delivered == 1);
}

TEST_CASE("a sink that throws costs its batch only: counted, the slot freed", "[snapshot][stage][faults]")
{
    int calls = 0;
    auto stage = SnapshotStage::create(small_config(), Backend::cpu, [&](SnapshotBatch&&) {
        if (++calls == 1) throw std::runtime_error("writer gone");
    });
    const Step s(2, 50, 4);
    for (int i = 0; i < 5; ++i) REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    const SnapshotStats st = stage->stats();
    CHECK(st.sink_failures == 1);
    CHECK(st.delivered_batches == 5);
    CHECK(st.leased == 0);
    CHECK(st.last_error.find("writer gone") != std::string::npos);
}

TEST_CASE("invalid arguments are refused with a reason and counted, never read", "[snapshot][stage][args]")
{
    Keeper keep;
    auto stage = SnapshotStage::create(small_config(), Backend::cpu, keep.sink());
    const Step s(2, 100, 5);
    const auto expect_invalid = [&](LogitsView v, const std::int32_t* ids, std::span<const RowMeta> meta,
                                    const char* why) {
        CHECK(stage->capture(v, ids, meta) == CaptureResult::invalid_argument);
        CHECK(stage->stats().last_error.find(why) != std::string::npos);
    };
    LogitsView v = s.view();
    v.data = nullptr;
    expect_invalid(v, s.sampled.data(), s.meta, "null");
    expect_invalid(s.view(), nullptr, s.meta, "null");
    v = s.view();
    v.rows = 65;
    expect_invalid(v, s.sampled.data(), s.meta, "max_rows");
    v = s.view();
    v.vocab = 5000;
    v.row_stride = 5000;
    expect_invalid(v, s.sampled.data(), s.meta, "max_vocab");
    v = s.view();
    v.row_stride = 99;
    expect_invalid(v, s.sampled.data(), s.meta, "row_stride");
    v = s.view();
    v.device = 0;
    expect_invalid(v, s.sampled.data(), s.meta, "host memory");
    expect_invalid(s.view(), s.sampled.data(), std::span(s.meta).first(1), "meta.size()");
    v = s.view();
    v.vocab = 0;
    expect_invalid(v, s.sampled.data(), s.meta, "vocab");
    CHECK(stage->stats().invalid_arguments == 8);
    CHECK(keep.size() == 0);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);  // nothing was consumed by them
    CHECK(keep.batches[0].batch_seq == 0);
    CHECK(keep.batches[0].gap_before == 0);
}

TEST_CASE("a configuration out of range is refused when the stage is created", "[snapshot][stage][args]")
{
    const auto sink = [](SnapshotBatch&&) {};
    for (int k : {0, 65, -1}) {
        SnapshotConfig c;
        c.k = k;
        CHECK_THROWS_AS(SnapshotStage::create(c, Backend::cpu, sink), std::invalid_argument);
    }
    SnapshotConfig c;
    c.ring_slots = 1;
    CHECK_THROWS_AS(SnapshotStage::create(c, Backend::cpu, sink), std::invalid_argument);
    CHECK_THROWS_AS(SnapshotStage::create(SnapshotConfig{}, Backend::cpu, BatchSink{}),
                    std::invalid_argument);
    c = SnapshotConfig{};
    c.k = 64;
    CHECK(SnapshotStage::create(c, Backend::cpu, sink) != nullptr);
}

TEST_CASE("first-gen rows are captured as whole rows in the configured format, the rest counted", "[snapshot][stage][first_gen]")
{
    Keeper keep;
    SnapshotConfig c = small_config();
    c.first_gen = FirstGenMode::float16_compat;
    c.max_first_gen_rows_per_step = 1;
    c.ring_slots = 3;
    auto stage = SnapshotStage::create(c, Backend::cpu, keep.sink());

    // bf16 logits, with values that overflow fp16.
    const int V = 6;
    std::vector<std::uint16_t> bf16 = {0x3f80, 0xc000, 0x4780 /*65536*/, 0x477f /*65280*/,
                                       0x7f80 /*inf*/, 0x0000,
                                       0x3f00, 0x3f00, 0x3f00, 0x3f00, 0x3f00, 0x3f00};
    std::vector<std::int32_t> sampled = {0, 1};
    std::vector<RowMeta> meta = {{7, 0, 0, RowMeta::first_gen}, {8, 0, 0, RowMeta::first_gen}};
    const LogitsView v{bf16.data(), LogitDType::bf16, 2, V, V, -1};
    REQUIRE(stage->capture(v, sampled.data(), meta) == CaptureResult::enqueued);
    REQUIRE(keep.size() == 1);
    const SnapshotBatch& b = keep.batches[0];
    REQUIRE(b.first_gen.size() == 1);  // the pool holds one row: the second is dropped
    CHECK(b.first_gen_dropped == 1);
    const FirstGenLogits& fg = b.first_gen[0];
    CHECK(fg.request_id == 7);
    CHECK(fg.dtype == LogitDType::f16);
    CHECK(fg.shape[0] == 1);
    CHECK(fg.shape[1] == V);
    CHECK(fg.overflow_to_inf == 1);  // 65536 overflows; 65280 fits; inf was inf already
    std::vector<std::byte> want(first_gen_item_bytes(c.first_gen, LogitDType::bf16, V));
    CHECK(convert_first_gen_row(bf16.data(), LogitDType::bf16, V, c.first_gen, want.data()) == 1);
    REQUIRE(fg.bytes.size() == want.size());
    CHECK(std::memcmp(fg.bytes.data(), want.data(), want.size()) == 0);
    SnapshotStats st = stage->stats();
    CHECK(st.first_gen_rows == 1);
    CHECK(st.first_gen_dropped == 1);
    CHECK(st.first_gen_overflow_to_inf == 1);

    // drop_step keeps records whole: a step whose first-gen rows do not fit is dropped.
    c.backpressure = Backpressure::drop_step;
    Keeper strict;
    auto s2 = SnapshotStage::create(c, Backend::cpu, strict.sink());
    CHECK(s2->capture(v, sampled.data(), meta) == CaptureResult::dropped);
    meta[1].flags = 0;
    CHECK(s2->capture(v, sampled.data(), meta) == CaptureResult::enqueued);
    REQUIRE(strict.size() == 1);
    CHECK(strict.batches[0].gap_before == 1);
    CHECK(strict.batches[0].first_gen.size() == 1);
}

TEST_CASE("a batch outlives its stage: its rows stay readable until the lease is dropped", "[snapshot][stage][lifetime]")
{
    Keeper keep;
    const Step s(3, 200, 6);
    {
        auto stage = SnapshotStage::create(small_config(), Backend::cpu, keep.sink());
        REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    }
    REQUIRE(keep.size() == 1);
    check_row_matches_reference(keep.batches[0].rows[2], s, 2, 5);  // ASan would see a use-after-free
    keep.batches.clear();
}

TEST_CASE("the Asio bridge posts each batch once onto the writer's strand", "[snapshot][asio]")
{
    boost::asio::io_context io;
    auto strand = boost::asio::make_strand(io);
    std::vector<std::uint64_t> seqs;
    bool on_strand = true;
    auto stage = SnapshotStage::create(
        small_config(), Backend::cpu, post_batches(strand, [&](SnapshotBatch&& b) {
            on_strand = on_strand && strand.running_in_this_thread();
            seqs.push_back(b.batch_seq);
        }));
    const Step s(2, 64, 7);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    // Nothing ran on the capturing thread: the handlers wait for the loop, holding the slots.
    CHECK(seqs.empty());
    CHECK(s.capture(*stage) == CaptureResult::dropped);
    const std::size_t handlers = io.poll();
    CHECK(handlers == 2);  // one post per batch
    CHECK(seqs == std::vector<std::uint64_t>{0, 1});
    CHECK(on_strand);
    CHECK(stage->stats().leased == 0);  // the handler dropped each batch: slots free
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    io.restart();  // poll() ran out of work and stopped the context
    CHECK(io.poll() == 1);
    CHECK(seqs.back() == 2);
}

TEST_CASE("batches posted to a loop that never runs them free their slots when it is destroyed", "[snapshot][asio][lifetime]")
{
    Keeper none;
    auto io = std::make_unique<boost::asio::io_context>();
    auto stage = SnapshotStage::create(small_config(), Backend::cpu,
                                       post_batches(io->get_executor(), [](SnapshotBatch&&) {}));
    const Step s(2, 64, 8);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    CHECK(stage->stats().leased == 2);
    io.reset();  // the pending handlers are destroyed, and with them the leases
    CHECK(stage->stats().leased == 0);
    // The stage's sink still posts to the dead loop's executor; make a new stage instead.
    auto again = SnapshotStage::create(small_config(), Backend::cpu, none.sink());
    REQUIRE(s.capture(*again) == CaptureResult::enqueued);
}

TEST_CASE("without a usable GPU, Auto picks the CPU and Cuda is refused with the reason", "[snapshot][backend]")
{
    int error = -1;
    const int devices = cuda_device_count(&error);
    if (devices > 0) {
        WARN("a CUDA device is present: the no-GPU path is not what runs here");
        return;
    }
    CHECK(devices == 0);
    INFO("cudaGetDeviceCount error " << error);
    const auto sink = [](SnapshotBatch&&) {};
    auto stage = SnapshotStage::create(SnapshotConfig{}, Backend::automatic, sink);
    CHECK(stage->backend() == Backend::cpu);
    CHECK(stage->stats().backend == Backend::cpu);
    try {
        SnapshotStage::create(SnapshotConfig{}, Backend::cuda, sink);
        FAIL("Backend::cuda was created without a device");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("Backend::cuda unavailable") != std::string::npos);
    }
}

TEST_CASE("a ring torn down with a step in flight and a batch leased frees everything once", "[snapshot][ring][lifetime]")
{
    std::vector<SnapshotBatch> kept;
    detail::RingLayout layout;
    layout.slots = 3;
    layout.max_rows = 2;
    layout.max_first_gen_rows = 1;
    layout.first_gen_pool_bytes = 64;
    auto ring = detail::SlotRing::create(layout, detail::aligned_host_allocator(),
                                         [&](SnapshotBatch&& b) { kept.push_back(std::move(b)); });
    const int a = ring->try_acquire();
    ring->buffers(a).rows[0].sampled_id = 42;
    ring->commit(a, 1, 0, 0, 0);
    REQUIRE(ring->complete(a, false));  // delivered: the keeper holds its lease
    const int b = ring->try_acquire();
    ring->commit(b, 1, 0, 0, 0);        // in flight: its completion never comes
    std::weak_ptr<detail::SlotRing> alive = ring;
    ring.reset();                       // the stage lets go of its ring
    REQUIRE_FALSE(alive.expired());     // the lease keeps the memory
    CHECK(kept[0].rows[0].sampled_id == 42);
    kept.clear();                       // the last lease: the ring and its memory go
    CHECK(alive.expired());             // (LeakSanitizer checks the memory in CI)
}
