// Layouts by key (record_encoder.hpp, RecordEncoder::key): an encoder names each record's key,
// the engine groups a batch by key once — in order of first appearance, submission order kept
// within a key — and hands each group to the sink under its key.
#include <catch2/catch.hpp>

#include "common.hpp"

#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

using namespace jsonlw_test;

namespace {

// {"id":N}; keyed "k<id % keys>.jsonl" (or Rec::key when set); an id of 13 is malformed.
class KeyedEncoder final : public jsonlw::RecordEncoder<Rec> {
public:
    explicit KeyedEncoder(int keys) : keys_(keys) {}

    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        if (r.id == 13) throw jsonlw::MalformedRecord("13 is unlucky");
        line.begin_object().field("id", r.id).end_object();
    }
    void key(const Rec& r, std::string& key) override
    {
        ++key_calls;
        if (!r.key.empty()) {
            key += r.key;
            return;
        }
        key += "k" + std::to_string(r.id % keys_) + ".jsonl";
    }

    std::atomic<int> key_calls{0};

private:
    const int keys_;
};

// The writer's options with `sink`, and one batch for the whole test: every record is queued
// before the drain first runs.
jsonlw::WriterOptions keyed_options(const Harness& h, std::shared_ptr<jsonlw::LineSink> sink)
{
    jsonlw::WriterOptions o = h.options();
    o.sink = std::move(sink);
    o.batch_records = 64;
    o.queue_capacity = 64;
    return o;
}

std::vector<std::string> texts_under(const jsonlw::MemorySink& s, const std::string& key)
{
    std::vector<std::string> out;
    for (const auto& l : s.lines())
        if (l.key == key) out.push_back(l.text);
    return out;
}

}  // namespace

TEST_CASE("a batch under three keys goes to the sink as three groups, each in submission order", "[integration][keys]")
{
    Harness h;
    auto sink = std::make_shared<jsonlw::MemorySink>();
    auto enc = std::make_shared<KeyedEncoder>(3);
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(), keyed_options(h, sink), enc);
    for (int i = 0; i < 10; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.start(w);
    const jsonlw::CloseReport r = close(w);
    CHECK(r.drained);
    CHECK(r.stats.written == 10);
    CHECK(enc->key_calls.load() == 10);  // once per record
    CHECK(sink->appends() == 3);         // once per key
    // Groups in order of first appearance: k0, k1, k2.
    const auto lines = sink->lines();
    REQUIRE(lines.size() == 10);
    CHECK(lines[0].key == "k0.jsonl");
    CHECK(lines[4].key == "k1.jsonl");
    CHECK(lines[7].key == "k2.jsonl");
    CHECK(texts_under(*sink, "k0.jsonl") ==
          std::vector<std::string>{R"({"id":0})", R"({"id":3})", R"({"id":6})", R"({"id":9})"});
    CHECK(texts_under(*sink, "k1.jsonl") ==
          std::vector<std::string>{R"({"id":1})", R"({"id":4})", R"({"id":7})"});
    CHECK(texts_under(*sink, "k2.jsonl") ==
          std::vector<std::string>{R"({"id":2})", R"({"id":5})", R"({"id":8})"});
}

TEST_CASE("a batch under one key is one append, and an encoder without key() writes to the sink's one destination", "[integration][keys]")
{
    Harness h;
    {
        auto sink = std::make_shared<jsonlw::MemorySink>();
        jsonlw::JsonlRecordWriter<Rec> w(h.executor(), keyed_options(h, sink),
                                         std::make_shared<KeyedEncoder>(1));
        for (int i = 0; i < 12; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
        h.start(w);
        CHECK(close(w).stats.written == 12);
        CHECK(sink->appends() == 1);
        CHECK(texts_under(*sink, "k0.jsonl").size() == 12);
    }
    struct Plain final : jsonlw::RecordEncoder<Rec> {
        void serialize(const Rec& r, jsonlw::JsonLine& line) override
        {
            line.begin_object().field("id", r.id).end_object();
        }
    };
    auto sink = std::make_shared<jsonlw::MemorySink>();
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(), keyed_options(h, sink), std::make_shared<Plain>());
    for (int i = 0; i < 5; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    w.start();
    CHECK(close(w).stats.written == 5);
    CHECK(sink->appends() == 1);
    CHECK(texts_under(*sink, "").size() == 5);
}

TEST_CASE("a malformed record under one key is dropped alone; its group and the other keys' lines land", "[integration][keys]")
{
    Harness h;
    auto sink = std::make_shared<jsonlw::MemorySink>();
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(), keyed_options(h, sink),
                                     std::make_shared<KeyedEncoder>(2));
    for (int i = 10; i < 16; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.start(w);
    const jsonlw::CloseReport r = close(w);
    CHECK(r.stats.written == 5);
    CHECK(r.stats.dropped.malformed == 1);
    CHECK(texts_under(*sink, "k0.jsonl") ==
          std::vector<std::string>{R"({"id":10})", R"({"id":12})", R"({"id":14})"});
    CHECK(texts_under(*sink, "k1.jsonl") ==
          std::vector<std::string>{R"({"id":11})", R"({"id":15})"});
}

TEST_CASE("keys name files and folders under the directory through a PartitionedFileSink, and a failing key fails only its group", "[integration][keys]")
{
    Harness h;
    auto enc = std::make_shared<KeyedEncoder>(2);
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(),
                                     keyed_options(h, std::make_shared<jsonlw::PartitionedFileSink>()),
                                     enc);
    std::vector<Rec> recs;
    for (int i = 0; i < 4; ++i) {
        Rec r = rec(i);
        r.key = (i % 2 == 0 ? "2026-12-04T01/a.jsonl" : "2026-12-04T02/b.jsonl");
        recs.push_back(r);
    }
    // A key whose folder is a regular file cannot be created: its group alone fails.
    write_file(h.dir.path() / "blocked", "x");
    Rec bad = rec(7);
    bad.key = "blocked/c.jsonl";
    recs.push_back(bad);
    for (Rec& r : recs) REQUIRE(w.submit(std::move(r)) == jsonlw::SubmitResult::accepted);
    h.start(w);
    const jsonlw::CloseReport r = close(w);
    CHECK(r.stats.written == 4);
    CHECK(r.stats.dropped.write_error == 1);
    CHECK(read_lines(h.dir.path() / "2026-12-04T01" / "a.jsonl") ==
          std::vector<std::string>{R"({"id":0})", R"({"id":2})"});
    CHECK(read_lines(h.dir.path() / "2026-12-04T02" / "b.jsonl") ==
          std::vector<std::string>{R"({"id":1})", R"({"id":3})"});
}

TEST_CASE("keys are grouped the same when records were serialized ahead on helper threads", "[integration][keys]")
{
    Harness h;
    struct Concurrent final : jsonlw::RecordEncoder<Rec> {
        void serialize(const Rec& r, jsonlw::JsonLine& line) override
        {
            line.begin_object().field("id", r.id).end_object();
        }
        bool concurrent_serialize() const noexcept override { return true; }
        void key(const Rec& r, std::string& key) override { key += r.id % 2 ? "odd" : "even"; }
    };
    auto sink = std::make_shared<jsonlw::MemorySink>();
    jsonlw::WriterOptions o = keyed_options(h, sink);
    o.serializer_threads = 2;
    o.queue_capacity = 1024;
    o.batch_records = 256;
    jsonlw::JsonlRecordWriter<Rec> w(h.executor(), o, std::make_shared<Concurrent>());
    for (int i = 0; i < 1000; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
    h.start(w);
    CHECK(close(w).stats.written == 1000);
    std::vector<std::string> even, odd;
    for (int i = 0; i < 1000; ++i)
        (i % 2 ? odd : even).push_back(R"({"id":)" + std::to_string(i) + "}");
    CHECK(texts_under(*sink, "even") == even);
    CHECK(texts_under(*sink, "odd") == odd);
}

namespace {

// A key() that an intermediate base overrides and the leaf inherits, and a write_batch()
// override: the engine must still call both (detail::encoder_shape reads the leaf's type).
class EvenOddBase : public jsonlw::RecordEncoder<Rec> {
public:
    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("id", r.id).end_object();
    }
    void key(const Rec& r, std::string& key) override { key += r.id % 2 ? "odd" : "even"; }
};
class InheritedKey final : public EvenOddBase {};
class OwnBatch final : public EvenOddBase {
public:
    void write_batch(std::span<const Rec> batch, jsonlw::BatchOutput<Rec>& out) override
    {
        ++batches;
        out.write_lines("all", out.serialize_batch(batch));
    }
    int batches = 0;
};
class NoLayout final : public jsonlw::RecordEncoder<Rec> {
public:
    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("id", r.id).end_object();
    }
};

using jsonlw::detail::encoder_shape;
static_assert(!encoder_shape<NoLayout, Rec>().keyed && !encoder_shape<NoLayout, Rec>().own_write_batch);
static_assert(encoder_shape<InheritedKey, Rec>().keyed && !encoder_shape<InheritedKey, Rec>().own_write_batch);
static_assert(encoder_shape<OwnBatch, Rec>().keyed && encoder_shape<OwnBatch, Rec>().own_write_batch);
// Known only by its base: both are called, which is always correct.
static_assert(encoder_shape<jsonlw::RecordEncoder<Rec>, Rec>().keyed &&
              encoder_shape<jsonlw::RecordEncoder<Rec>, Rec>().own_write_batch);

std::vector<std::string> ids(int from, int to, int step)
{
    std::vector<std::string> out;
    for (int i = from; i < to; i += step) out.push_back(R"({"id":)" + std::to_string(i) + "}");
    return out;
}

}  // namespace

TEST_CASE("the engine reads from the encoder's type which layout functions it overrides, inherited or type-erased alike", "[integration][keys]")
{
    Harness h;
    SECTION("a key() inherited from an intermediate base still names the groups")
    {
        auto sink = std::make_shared<jsonlw::MemorySink>();
        jsonlw::JsonlRecordWriter<Rec> w(h.executor(), keyed_options(h, sink),
                                         std::make_shared<InheritedKey>());
        for (int i = 0; i < 6; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
        h.start(w);
        CHECK(close(w).stats.written == 6);
        CHECK(sink->appends() == 2);
        CHECK(texts_under(*sink, "even") == ids(0, 6, 2));
        CHECK(texts_under(*sink, "odd") == ids(1, 6, 2));
    }
    SECTION("an encoder handed over as RecordEncoder<Rec> keeps its key()")
    {
        auto sink = std::make_shared<jsonlw::MemorySink>();
        std::shared_ptr<jsonlw::RecordEncoder<Rec>> erased = std::make_shared<InheritedKey>();
        jsonlw::JsonlRecordWriter<Rec> w(h.executor(), keyed_options(h, sink), erased);
        for (int i = 0; i < 6; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
        h.start(w);
        CHECK(close(w).stats.written == 6);
        CHECK(sink->appends() == 2);
        CHECK(texts_under(*sink, "odd") == ids(1, 6, 2));
    }
    SECTION("a write_batch() override is called once per batch, its key() unused")
    {
        auto sink = std::make_shared<jsonlw::MemorySink>();
        auto enc = std::make_shared<OwnBatch>();
        jsonlw::JsonlRecordWriter<Rec> w(h.executor(), keyed_options(h, sink), enc);
        for (int i = 0; i < 6; ++i) REQUIRE(w.submit(rec(i)) == jsonlw::SubmitResult::accepted);
        h.start(w);
        CHECK(close(w).stats.written == 6);
        CHECK(enc->batches == 1);
        CHECK(sink->appends() == 1);
        CHECK(texts_under(*sink, "all") == ids(0, 6, 1));
    }
}
