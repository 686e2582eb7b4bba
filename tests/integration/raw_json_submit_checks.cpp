// RawJsonWriter's texts checked on submit: while the I/O thread is behind, a short text is
// validated on the submitting thread (RawJsonEncoder::check_on_submit()) and the I/O thread
// uses that verdict — the bytes written and the counts must be exactly what validating it on
// the I/O thread gives, and the submit must not allocate.
#include <catch2/catch.hpp>

#include "alloc_count.hpp"
#include "common.hpp"

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/raw_json_encoder.hpp>
#include <jsonlw/raw_json_writer.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace jsonlw {
// The texts the encoder validated on submit.
struct RawJsonWriterProbe {
    static std::uint64_t checked_on_submit(const RawJsonWriter& w)
    {
        return w.encoder_->checked_on_submit();
    }
};
}  // namespace jsonlw

using namespace jsonlw_test;
using jsonlw::JsonlRecordWriter;
using jsonlw::LogLevel;
using jsonlw::RawJsonEncoder;
using jsonlw::RawJsonOptions;
using jsonlw::RawJsonText;
using jsonlw::RawJsonWriter;
using jsonlw::RawJsonWriterOptions;
using jsonlw::RawJsonWriterProbe;
using jsonlw::SubmitResult;

namespace {

// Valid and compact, valid with whitespace to minify, and each way a text is malformed.
const std::vector<std::string> texts = {
    R"({"id":0,"tokens":[1,2,3],"text":"a b"})",
    "{ \"id\" : 1 ,\n \"n\" : -1.5e3 }",
    "[1,2]",
    "42",
    R"({"id":2,"bad":})",
    "",
    " \t ",
    "{}{}",
    "{\"id\":3,\"s\":\"\xff\"}",
    "\t{\"id\":4,\"s\":\"line\\nbreak\"}  ",
};

enum class Mode { unchecked, checked, alternating };

struct Written {
    std::string bytes;
    jsonlw::WriterStats stats;
    std::vector<std::string> warnings;
};

// Writes `texts` as one batch through a JsonlRecordWriter<RawJsonText> over a RawJsonEncoder,
// each text checked on submit or not as `mode` says.
Written write_texts(Mode mode, RawJsonOptions raw = {})
{
    Harness h;
    const jsonlw::WriterOptions o = h.options();
    auto enc = std::make_shared<RawJsonEncoder>(raw, o);
    JsonlRecordWriter<RawJsonText> w(h.executor(), o, enc);
    w.start();
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const bool check = mode == Mode::checked || (mode == Mode::alternating && i % 2 == 0);
        const RawJsonText::Check c = check ? enc->check_on_submit(texts[i]) : RawJsonText::Check{};
        if (check) REQUIRE(c.verdict() != RawJsonText::Checked::unchecked);
        REQUIRE(w.submit(RawJsonText(RawJsonText::fits_inline_t{}, texts[i], c)) ==
                SubmitResult::accepted);
    }
    h.loop.start();
    flush(w);
    Written out{read_file(w.file_path()), w.stats(), h.logs.matching(LogLevel::warning)};
    close(w);
    return out;
}

}  // namespace

TEST_CASE("a text checked on submit is written, or dropped, exactly as the I/O thread's own check has it", "[integration][raw_json][submit_check]")
{
    const Written alone = write_texts(Mode::unchecked);
    // The oracle: what validation on the I/O thread made of them.
    CHECK(alone.bytes == "{\"id\":0,\"tokens\":[1,2,3],\"text\":\"a b\"}\n"
                         "{\"id\":1,\"n\":-1.5e3}\n"
                         "{\"id\":4,\"s\":\"line\\nbreak\"}\n");
    CHECK(alone.stats.written == 3);
    CHECK(alone.stats.dropped.malformed == 7);

    for (const Mode mode : {Mode::checked, Mode::alternating}) {
        INFO("mode " << (mode == Mode::checked ? "every text checked" : "every other text checked"));
        const Written w = write_texts(mode);
        CHECK(w.bytes == alone.bytes);
        CHECK(w.stats.written == 3);
        CHECK(w.stats.dropped.malformed == 7);
        CHECK(invariant_holds(w.stats));
        // The first malformed record's warning (the rest are counted, not logged) names the
        // same reason: "[1,2]" is not an object either way.
        CHECK(w.warnings == alone.warnings);
    }

    SECTION("allow_any_value: the array and the number are written, checked or not")
    {
        const Written any = write_texts(Mode::unchecked, RawJsonOptions{.allow_any_value = true});
        const Written checked = write_texts(Mode::checked, RawJsonOptions{.allow_any_value = true});
        CHECK(checked.bytes == any.bytes);
        CHECK(any.stats.written == 5);
        CHECK(checked.stats.written == 5);
        CHECK(checked.stats.dropped.malformed == 5);
    }
}

TEST_CASE("an invalid text checked on submit is dropped with simdjson's reason, as one checked on the I/O thread is", "[integration][raw_json][submit_check]")
{
    for (const std::string bad : {R"({"id":2,"bad":})", "{\"s\":\"\xff\"}", "{}{}"}) {
        INFO("text " << bad);
        std::vector<std::string> reasons;
        for (const bool check : {false, true}) {
            Harness h;
            const jsonlw::WriterOptions o = h.options();
            auto enc = std::make_shared<RawJsonEncoder>(RawJsonOptions{}, o);
            JsonlRecordWriter<RawJsonText> w(h.executor(), o, enc);
            h.start(w);
            const RawJsonText::Check c = check ? enc->check_on_submit(bad) : RawJsonText::Check{};
            CHECK(c.verdict() == (check ? RawJsonText::Checked::invalid : RawJsonText::Checked::unchecked));
            REQUIRE(w.submit(RawJsonText(RawJsonText::fits_inline_t{}, bad, c)) ==
                    SubmitResult::accepted);
            flush(w);
            CHECK(w.stats().dropped.malformed == 1);
            const auto warnings = h.logs.matching(LogLevel::warning, "invalid JSON: ");
            REQUIRE(warnings.size() == 1);
            reasons.push_back(warnings[0]);
        }
        CHECK(reasons[0] == reasons[1]);
    }
}

namespace {

// A writer that falls behind at once: batches of 4 in a queue of 64.
RawJsonWriterOptions behind_options(Harness& h, bool check_when_behind)
{
    RawJsonWriterOptions o{h.options()};
    o.batch_records = 4;
    o.queue_capacity = 64;
    o.raw.check_when_behind = check_when_behind;
    return o;
}

// Starts `w` with records {"id":0} to {"id":3} — a full batch queued before the drain's first
// look: its pop fills a batch, so the writer is behind while that batch's writev is held
// (until the seam is released).
void fall_behind(Harness& h, RawJsonWriter& w)
{
    w.start();
    for (int i = 0; i < 4; ++i)
        REQUIRE(w.submit(R"({"id":)" + std::to_string(i) + "}") == SubmitResult::accepted);
    h.seam->hold_writev();
    h.loop.start();
    REQUIRE(h.seam->wait_writev_held());
}

}  // namespace

TEST_CASE("a writer whose I/O thread is behind has short texts validated by their submitter, without an allocation", "[integration][raw_json][submit_check]")
{
    const bool on = GENERATE(true, false);
    INFO("check_when_behind " << on);
    Harness h(with_seam);
    RawJsonWriter w(h.executor(), behind_options(h, on));
    ReleaseOnExit release(h.seam);
    fall_behind(h, w);
    CHECK(RawJsonWriterProbe::checked_on_submit(w) == 0);

    const std::vector<std::string> more = {R"({"id":4})", "{ \"id\" : 5 }", "[6]",
                                           R"({"id":7,)", R"({"id":8})", R"({"id":9})"};
    const std::uint64_t before = allocations_on_this_thread();
    for (const std::string& t : more) REQUIRE(w.submit(std::string_view(t)) == SubmitResult::accepted);
    CHECK(allocations_on_this_thread() == before);
    CHECK(RawJsonWriterProbe::checked_on_submit(w) == (on ? 6u : 0u));

    h.seam->release();
    const auto report = close(w);
    CHECK(read_file(w.file_path()) == "{\"id\":0}\n{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n"
                                      "{\"id\":4}\n{\"id\":5}\n{\"id\":8}\n{\"id\":9}\n");
    CHECK(report.stats.written == 8);
    CHECK(report.stats.dropped.malformed == 2);
    CHECK(invariant_holds(report.stats));
}

TEST_CASE("twelve submitting threads in turn each have their text checked, the first eight in slots of their own and the rest in shared ones", "[integration][raw_json][submit_check]")
{
    Harness h(with_seam);
    RawJsonWriter w(h.executor(), behind_options(h, true));
    ReleaseOnExit release(h.seam);
    fall_behind(h, w);

    // Threads are numbered once per process, so however many earlier cases made, at least
    // four of these twelve share slots (RawJsonEncoder::SubmitChecks); one at a time, none
    // finds its slot busy.
    std::string expected = "{\"id\":0}\n{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n";
    for (int i = 4; i < 16; ++i) {
        const std::string text = i == 9 ? R"({"id":9,)" : "{ \"id\" : " + std::to_string(i) + " }";
        if (i != 9) expected += R"({"id":)" + std::to_string(i) + "}\n";
        SubmitResult r = SubmitResult::closed;
        std::thread t([&] { r = w.submit(std::string_view(text)); });
        t.join();
        REQUIRE(r == SubmitResult::accepted);
    }
    CHECK(RawJsonWriterProbe::checked_on_submit(w) == 12);

    h.seam->release();
    const auto report = close(w);
    CHECK(read_file(w.file_path()) == expected);
    CHECK(report.stats.written == 15);
    CHECK(report.stats.dropped.malformed == 1);
    CHECK(invariant_holds(report.stats));
}

TEST_CASE("a writer that is not behind validates on its I/O thread only", "[integration][raw_json][submit_check]")
{
    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    h.start(w);
    for (int i = 0; i < 3; ++i) {
        REQUIRE(w.submit(R"({"id":)" + std::to_string(i) + "}") == SubmitResult::accepted);
        flush(w);  // each pop takes one record: never a full batch
    }
    CHECK(RawJsonWriterProbe::checked_on_submit(w) == 0);
    CHECK(read_lines(w.file_path()).size() == 3);
}
