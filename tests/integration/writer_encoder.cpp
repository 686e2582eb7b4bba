// A writer built from an encoder object (record_encoder.hpp): the engine owns the encoder, so
// a class that wraps such a writer needs no shutdown() in its destructor — destroyed while
// its encoder is mid-batch, the batch still ends and its record is written.
#include <catch2/catch.hpp>

#include "common.hpp"

#include <jsonlw/raw_json_encoder.hpp>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <span>
#include <thread>
#include <vector>

using namespace jsonlw_test;

namespace {

// {"id":N,"tag":"<tag>"}; an odd id is malformed. With `hold` set, serialize() waits for the
// test's release before the first record, after saying it has entered.
class TagEncoder final : public jsonlw::RecordEncoder<Rec> {
public:
    explicit TagEncoder(std::string tag, std::shared_ptr<std::atomic<int>> alive)
        : tag_(std::move(tag)), alive_(std::move(alive))
    {
        alive_->fetch_add(1);
    }
    ~TagEncoder() override { alive_->fetch_sub(1); }

    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        if (hold.load()) {
            entered.store(true);
            while (hold.load()) std::this_thread::yield();
        }
        if (r.id % 2 != 0) throw jsonlw::MalformedRecord("odd id");
        line.begin_object().field("id", r.id).field("tag", tag_).end_object();
    }
    std::size_t record_bytes(const Rec&) const noexcept override { return 32; }

    std::atomic<bool> hold{false}, entered{false};

private:
    const std::string tag_;  // read by serialize(): freed only with the encoder
    std::shared_ptr<std::atomic<int>> alive_;
};

// A preset as the shipped writers are: a class around an encoder writer, with members of its
// own and no shutdown() in its destructor.
class TaggedWriter final : public jsonlw::JsonlRecordWriter<Rec> {
public:
    TaggedWriter(boost::asio::any_io_executor ex, jsonlw::WriterOptions opts,
                 std::shared_ptr<TagEncoder> enc, std::atomic<bool>& destroyed)
        : JsonlRecordWriter(std::move(ex), std::move(opts), std::move(enc)),
          label_(std::string(200, 'x')), destroyed_(destroyed)
    {
    }
    ~TaggedWriter() override { destroyed_.store(true); }  // the derived part is gone after this

private:
    std::string label_;
    std::atomic<bool>& destroyed_;
};

}  // namespace

TEST_CASE("a writer given an encoder object writes its lines and counts its drops exactly", "[integration][encoder]")
{
    Harness h;
    auto alive = std::make_shared<std::atomic<int>>(0);
    {
        jsonlw::JsonlRecordWriter<Rec> w(h.executor(), h.options(),
                                         std::make_shared<TagEncoder>("a", alive));
        h.start(w);
        for (int i = 0; i < 10; ++i) CHECK(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
        const jsonlw::CloseReport r = close(w);
        CHECK(r.drained);
        CHECK(r.stats.written == 5);
        CHECK(r.stats.dropped.malformed == 5);
        CHECK(read_lines(w.file_path()) ==
              std::vector<std::string>{R"({"id":0,"tag":"a"})", R"({"id":2,"tag":"a"})",
                                       R"({"id":4,"tag":"a"})", R"({"id":6,"tag":"a"})",
                                       R"({"id":8,"tag":"a"})"});
        CHECK(alive->load() == 1);
    }
    CHECK(alive->load() == 0);  // destroyed with the writer
}

TEST_CASE("a writer without an encoder is refused at construction", "[integration][encoder]")
{
    Harness h;
    CHECK_THROWS_AS(jsonlw::JsonlRecordWriter<Rec>(h.executor(), h.options(), nullptr),
                    std::invalid_argument);
}

TEST_CASE("a preset destroyed while its encoder is mid-batch, with no shutdown() of its own, still writes that batch", "[integration][encoder]")
{
    Harness h;
    auto alive = std::make_shared<std::atomic<int>>(0);
    auto enc = std::make_shared<TagEncoder>("held", alive);
    enc->hold.store(true);
    std::atomic<bool> destroyed{false};
    auto w = std::make_unique<TaggedWriter>(h.executor(), h.options(), enc, destroyed);
    h.start(*w);
    const auto path = w->file_path();
    REQUIRE(w->submit(rec(2)) == jsonlw::SubmitResult::accepted);
    REQUIRE(wait_until([&] { return enc->entered.load(); }));  // the I/O thread is inside it
    std::thread destroyer([&] { w.reset(); });
    // The derived class's destructor has run (its members are gone); the engine, still
    // waiting for the batch, must not have released the encoder.
    REQUIRE(wait_until([&] { return destroyed.load(); }));
    CHECK(alive->load() == 1);
    enc->hold.store(false);
    destroyer.join();
    CHECK(read_lines(path) == std::vector<std::string>{R"({"id":2,"tag":"held"})"});
    enc.reset();
    CHECK(alive->load() == 0);
}

namespace {

// Records the runs begin_chunk() announces, and checks that each record serialize() is given
// was announced by the last one on its thread.
class ChunkEncoder final : public jsonlw::RecordEncoder<Rec> {
public:
    void begin_chunk(std::span<const Rec> chunk) noexcept override
    {
        announced_ = chunk;
        runs.push_back(chunk.size());
        thread = std::this_thread::get_id();
    }
    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        if (&r < announced_.data() || &r >= announced_.data() + announced_.size()) ++unannounced;
        line.begin_object().field("id", r.id).end_object();
    }

    std::vector<std::size_t> runs;
    std::thread::id thread;
    int unannounced = 0;

private:
    std::span<const Rec> announced_;
};

}  // namespace

TEST_CASE("begin_chunk() announces each batch on the I/O thread before its records are serialized", "[integration][encoder]")
{
    Harness h;
    jsonlw::WriterOptions o = h.options();
    o.batch_records = 4;
    o.queue_capacity = 16;
    auto enc = std::make_shared<ChunkEncoder>();
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(), o, enc);
    for (int i = 0; i < 10; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.start(w);
    const jsonlw::CloseReport r = close(w);
    CHECK(r.stats.written == 10);
    CHECK(enc->runs == std::vector<std::size_t>{4, 4, 2});  // one per batch, the whole batch
    CHECK(enc->unannounced == 0);
    CHECK(enc->thread != std::this_thread::get_id());
    // RawJsonWriter's encoder prepares its batches there, so it needs no write_batch().
    static_assert(!jsonlw::detail::encoder_shape<jsonlw::RawJsonEncoder, jsonlw::RawJsonText>().own_write_batch);
    static_assert(!jsonlw::detail::encoder_shape<jsonlw::RawJsonEncoder, jsonlw::RawJsonText>().keyed);
}
