// RawJsonWriter: records are JSON texts, validated in full with simdjson and minified to one
// line; anything else is malformed and dropped alone.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw_test;
using jsonlw::LogLevel;
using jsonlw::RawJsonOptions;
using jsonlw::RawJsonWriter;
using jsonlw::RawJsonWriterOptions;
using jsonlw::SubmitResult;

namespace {

// Submits every text before the drain runs (one batch), flushes, returns the file's lines.
std::vector<std::string> write_all(RawJsonWriter& w, IoRunner& loop, const std::vector<std::string>& texts)
{
    w.start();
    for (const auto& t : texts) REQUIRE(w.submit(t) == SubmitResult::accepted);
    loop.start();
    flush(w);
    return read_lines(w.file_path());
}

}  // namespace

TEST_CASE("a JSON object is accepted and minified to one line", "[integration][raw_json]")
{
    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    const auto lines = write_all(w, h.loop, {
        "{ \"a\" : 1 , \"b\" : [ 1 , 2 , { \"c\" : null } ] }",
        "{\n  \"multi\": \"line\",\n  \"n\": -1.5e3\n}\n",
        "\t{\"s\":\"with \\n escape and \\\"quote\\\"\",\"u\":\"\xC3\xA9\\u00e9\"}  ",
        "{}",
    });
    CHECK(lines == std::vector<std::string>{
                       R"({"a":1,"b":[1,2,{"c":null}]})",
                       R"({"multi":"line","n":-1.5e3})",
                       "{\"s\":\"with \\n escape and \\\"quote\\\"\",\"u\":\"\xC3\xA9\\u00e9\"}",
                       "{}",
                   });
    for (const auto& l : lines) CHECK(is_valid_json(l));
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 4);
    CHECK(s.dropped.total() == 0);
    CHECK(invariant_holds(s));
}

TEST_CASE("a non-object JSON value is malformed by default and accepted with allow_any_value", "[integration][raw_json]")
{
    Harness h;
    const std::vector<std::string> texts = {"[1, 2]", "{\"ok\":true}", "42", "\"str\"", "null", "true"};

    SECTION("default: only objects")
    {
        RawJsonWriter w(h.executor(), h.options());
        const auto lines = write_all(w, h.loop, texts);
        CHECK(lines == std::vector<std::string>{R"({"ok":true})"});
        const auto s = w.stats();
        INFO("stats: " << s);
        CHECK(s.written == 1);
        CHECK(s.dropped.malformed == 5);
        CHECK(invariant_holds(s));
        INFO(h.logs.dump());
        CHECK(h.logs.count(LogLevel::warning, "Dropped malformed test record") == 1);
    }
    const auto any_value_kept = [&](RawJsonWriter& w) {
        const auto lines = write_all(w, h.loop, texts);
        CHECK(lines == std::vector<std::string>{"[1,2]", R"({"ok":true})", "42", "\"str\"", "null", "true"});
        CHECK(w.stats().written == 6);
        CHECK(w.stats().dropped.malformed == 0);
    };
    SECTION("RawJsonWriterOptions::raw.allow_any_value")
    {
        RawJsonWriterOptions o{h.options()};
        o.raw.allow_any_value = true;
        RawJsonWriter w(h.executor(), o);
        any_value_kept(w);
    }
    SECTION("the engine's options and RawJsonOptions{.allow_any_value = true} apart")
    {
        RawJsonWriter w(h.executor(), h.options(), RawJsonOptions{.allow_any_value = true});
        any_value_kept(w);
    }
}

TEST_CASE("invalid JSON, trailing garbage, several documents and invalid UTF-8 are malformed and dropped alone", "[integration][raw_json][malformed]")
{
    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    const std::vector<std::string> texts = {
        R"({"id":0})",
        R"({"a":})",             // missing value
        R"({"id":1})",
        R"({"a":1} x)",          // trailing garbage
        R"({"a":1}{"b":2})",     // two documents
        "{\"a\":\"\xFF\"}",      // invalid UTF-8
        R"({"a":1)",             // unterminated
        "",                      // empty
        "   ",                   // whitespace only
        R"({'a':1})",            // not JSON quotes
        R"({"a":NaN})",          // not a JSON number
        R"({"id":2})",
    };
    const auto lines = write_all(w, h.loop, texts);
    CHECK(lines == std::vector<std::string>{R"({"id":0})", R"({"id":1})", R"({"id":2})"});
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 3);
    CHECK(s.dropped.malformed == 9);
    CHECK(s.sanitized == 0);
    CHECK(s.dropped.unexpected == 0);
    CHECK(invariant_holds(s));
    INFO(h.logs.dump());
    const auto warnings = h.logs.matching(LogLevel::warning, "Dropped malformed test record");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].rfind("Dropped malformed test record: ", 0) == 0);
    CHECK(h.logs.count(LogLevel::error) == 0);
}

TEST_CASE("a large record with deep nesting is minified whole", "[integration][raw_json]")
{
    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    std::string big = "{ \"blob\" : \"" + std::string(200'000, 'x') + "\", \"deep\": ";
    std::string minified = "{\"blob\":\"" + std::string(200'000, 'x') + "\",\"deep\":";
    for (int i = 0; i < 100; ++i) {
        big += "[ ";
        minified += "[";
    }
    for (int i = 0; i < 100; ++i) {
        big += " ]";
        minified += "]";
    }
    big += " }";
    minified += "}";
    const auto lines = write_all(w, h.loop, {big, "{\"after\":1}"});
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == minified);
    CHECK(lines[1] == R"({"after":1})");
}

TEST_CASE("batch_bytes caps a batch by the records' sizes", "[integration][raw_json][batching]")
{
    Harness h(with_seam);
    auto o = h.options();
    o.batch_bytes = 100;
    RawJsonWriter w(h.executor(), o);
    std::vector<std::string> texts;
    for (int i = 0; i < 10; ++i) {
        std::string t = "{\"id\":" + std::to_string(i) + ",\"pad\":\"";
        t += std::string(40 - t.size() - 2, 'p') + "\"}";
        REQUIRE(t.size() == 40);
        texts.push_back(t);
    }
    // 40-byte records, 100-byte cap: a batch stops growing once it reaches 100 bytes (3 records).
    const auto lines = write_all(w, h.loop, texts);
    CHECK(lines == texts);
    CHECK(h.seam->successful_write_lines() == std::vector<std::size_t>{3, 3, 3, 1});
    CHECK(w.stats().batches == 4);
}

TEST_CASE("submitting from many threads keeps every accepted JSON text whole", "[integration][raw_json][concurrency]")
{
    Harness h;
    auto o = h.options();
    o.queue_capacity = 1 << 14;
    RawJsonWriter w(h.executor(), o);
    h.start(w);
    std::atomic<long> accepted{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < 3; ++p)
        threads.emplace_back([&, p] {
            for (int i = 0; i < 3000; ++i)
                accepted += w.submit("{ \"id\" : " + std::to_string(p * 1'000'000 + i) + " }") == SubmitResult::accepted;
        });
    for (auto& t : threads) t.join();
    const auto report = close(w);
    CHECK(report.drained);
    CHECK(report.stats.written == static_cast<std::uint64_t>(accepted.load()));
    const auto lines = read_lines(w.file_path());
    CHECK(lines.size() == report.stats.written);
    std::size_t bad = 0;
    for (const auto& l : lines) bad += !json_id(l).has_value() || l.find(' ') != std::string::npos;
    CHECK(bad == 0);
}

// --- Validation modes, the batch pass and the no-minify path ---

namespace jsonlw {
// Counters the writer keeps for tests: which records the batch pass decided, how many
// records went through simdjson::minify.
struct RawJsonWriterProbe {
    static std::uint64_t batch_decided(const RawJsonWriter& w) { return w.encoder_->batch_decided(); }
    static std::uint64_t minify_passes(const RawJsonWriter& w) { return w.encoder_->minify_passes(); }
};
}  // namespace jsonlw

namespace {

using jsonlw::RawJsonValidation;
using jsonlw::RawJsonWriterProbe;

// What validating `text` alone gives: its minified line, or nothing when it is malformed.
std::optional<std::string> oracle(const std::string& text, bool any_value = false)
{
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(text).get(root)) return std::nullopt;
    if (!any_value && root.type() != simdjson::dom::element_type::OBJECT) return std::nullopt;
    std::string out(text.size(), '\0');
    std::size_t len = 0;
    if (simdjson::minify(text.data(), text.size(), out.data(), len)) return std::nullopt;
    out.resize(len);
    return out;
}

std::string joined_lines(const std::vector<std::string>& lines)
{
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
}

RawJsonWriterOptions trusted(const jsonlw::WriterOptions& engine, bool any_value = false)
{
    RawJsonWriterOptions o{engine};
    o.raw = {.allow_any_value = any_value, .validation = RawJsonValidation::trusted};
    return o;
}

}  // namespace

TEST_CASE("trusted input: a raw CR or LF becomes a space and the record is counted as sanitized", "[integration][raw_json][trusted]")
{
    Harness h;
    RawJsonWriter w(h.executor(), trusted(h.options()));
    write_all(w, h.loop, {
        R"({"a":1})",
        "{\"a\":\n1}\r\n",
        "{\r\"b\" : 2}",
        R"({ "kept" : "as given" })",
    });
    CHECK(read_file(w.file_path()) ==
          "{\"a\":1}\n{\"a\": 1}  \n{ \"b\" : 2}\n{ \"kept\" : \"as given\" }\n");
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 4);
    CHECK(s.sanitized == 2);
    CHECK(s.dropped.malformed == 0);
    CHECK(invariant_holds(s));
    CHECK(RawJsonWriterProbe::minify_passes(w) == 0);
}

TEST_CASE("trusted input: an empty or whitespace-only record is malformed, a non-object too unless allow_any_value", "[integration][raw_json][trusted]")
{
    Harness h;
    const std::vector<std::string> texts = {"", R"({"id":0})", " \t\r\n ", "[1,2]", " 42", R"({"id":1})"};

    SECTION("objects only (default)")
    {
        RawJsonWriter w(h.executor(), trusted(h.options()));
        write_all(w, h.loop, texts);
        CHECK(read_file(w.file_path()) == "{\"id\":0}\n{\"id\":1}\n");
        const auto s = w.stats();
        INFO("stats: " << s);
        CHECK(s.written == 2);
        CHECK(s.dropped.malformed == 4);
        CHECK(s.sanitized == 0);
        CHECK(invariant_holds(s));
    }
    SECTION("allow_any_value: only the empty and whitespace-only records are malformed")
    {
        RawJsonWriter w(h.executor(), trusted(h.options(), true));
        write_all(w, h.loop, texts);
        CHECK(read_file(w.file_path()) == "{\"id\":0}\n[1,2]\n 42\n{\"id\":1}\n");
        const auto s = w.stats();
        INFO("stats: " << s);
        CHECK(s.written == 4);
        CHECK(s.dropped.malformed == 2);
        CHECK(s.sanitized == 0);
    }
}

TEST_CASE("full validation stays the default: invalid JSON, two values, trailing garbage and non-objects are malformed", "[integration][raw_json][malformed]")
{
    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    REQUIRE(RawJsonOptions{}.validation == RawJsonValidation::full);
    write_all(w, h.loop, {
        R"({"id":0})", R"({"a":})", R"({"a":1}{"b":2})", R"({"a":1} {"b":2})", R"({"a":1} x)",
        R"({"a":1}])", "[1]", R"("s")", "7", "{\"a\":\"x\n\"}", "{\"a\" :\n 1}", R"({"id":2})",
    });
    CHECK(read_file(w.file_path()) == "{\"id\":0}\n{\"a\":1}\n{\"id\":2}\n");
    const auto s = w.stats();
    INFO("stats: " << s);
    CHECK(s.written == 3);
    CHECK(s.dropped.malformed == 9);
    CHECK(s.sanitized == 0);
    CHECK(invariant_holds(s));
}

TEST_CASE("a malformed record in the middle of a batch is dropped alone, the records around it written in order", "[integration][raw_json][batch]")
{
    // 41 records submitted before the drain runs: one batch (batch_records 64).
    // decided: how many records the batch pass decides (the 20 before the bad one; 0 where
    // simdjson's stage 1 rejects the whole batch; -1: at most 20).
    struct Kind {
        const char* what;
        std::vector<std::string> bad;
        int decided;
    };
    const std::vector<Kind> kinds = {
        {"a missing value", {R"({"bad":})"}, 20},
        {"two documents", {R"({"bad":1}{"bad":2})"}, 20},
        {"two documents apart", {"{\"bad\":1}\n{\"bad\":2}"}, -1},
        {"trailing garbage", {R"({"bad":1} x)"}, 20},
        {"a stray closing bracket", {R"({"bad":1}])"}, -1},
        {"a trailing quote", {R"({"bad":1}")"}, 0},
        {"a scalar", {"42"}, 20},
        {"an array", {"[1,2]"}, 41},
        {"empty", {""}, 20},
        {"whitespace only", {" \n "}, 20},
        {"invalid UTF-8", {"{\"bad\":\"\xFF\"}"}, 0},
        {"an unterminated string", {R"({"bad":"x)"}, 0},
        {"an unterminated object", {R"({"bad":1)"}, -1},
        {"a raw LF inside a string", {"{\"bad\":\"a\nb\"}"}, 0},
        {"a value split over two records", {R"({"bad":[1,)", R"(2]})"}, 20},
    };
    for (const auto& [what, bad, decided] : kinds) {
        DYNAMIC_SECTION("the malformed record: " << what)
        {
            Harness h;
            RawJsonWriter w(h.executor(), h.options());
            std::vector<std::string> texts, expected;
            for (int i = 0; i < 20; ++i) texts.push_back("{\"id\":" + std::to_string(i) + "}");
            texts.insert(texts.end(), bad.begin(), bad.end());
            for (int i = 20; i < 41 - static_cast<int>(bad.size()); ++i)
                texts.push_back("{ \"id\" : " + std::to_string(i) + " }");
            for (int i = 0; i < 41 - static_cast<int>(bad.size()); ++i)
                expected.push_back("{\"id\":" + std::to_string(i) + "}");
            REQUIRE(texts.size() == 41);
            write_all(w, h.loop, texts);
            CHECK(read_file(w.file_path()) == joined_lines(expected));
            const auto s = w.stats();
            INFO("stats: " << s);
            CHECK(s.written == expected.size());
            CHECK(s.dropped.malformed == bad.size());
            CHECK(s.batches == 1);
            CHECK(invariant_holds(s));
            // The records before the bad one were decided by the batch pass, the rest alone.
            if (decided >= 0) CHECK(RawJsonWriterProbe::batch_decided(w) == static_cast<std::uint64_t>(decided));
            else CHECK(RawJsonWriterProbe::batch_decided(w) <= 20);
        }
    }
}

TEST_CASE("a batch of valid records is validated as one stream and gives the bytes each record gives alone", "[integration][raw_json][batch]")
{
    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    const std::vector<std::string> texts = {
        R"({"a":1,"s":"no whitespace outside strings"})",
        R"({"t":"tab\tand \"quote\" and \\ and \u0020","n":[1,2.5e3,-0,true,false,null]})",
        R"( {"lead":1})",
        R"({"trail":1}  )",
        R"({"a" :1})",
        R"({"a": 1})",
        R"({"a":1 ,"b":2})",
        R"({"a":[1, 2]})",
        R"({"a":{"b" : "c d"} })",
        "{\"a\":\t\"b\"}",
        "{\r\n\"crlf\":1\r\n}\r\n",
        R"({"emoji":"\ud83d\ude00 é"})",
        R"({"deep":[[[[{"x":[]}]]]]})",
        R"({})",
    };
    std::vector<std::string> expected;
    for (const auto& t : texts) {
        const auto o = oracle(t);
        REQUIRE(o.has_value());
        expected.push_back(*o);
    }
    write_all(w, h.loop, texts);
    CHECK(read_lines(w.file_path()) == expected);
    CHECK(w.stats().written == texts.size());
    CHECK(RawJsonWriterProbe::batch_decided(w) == texts.size());
    // Only the 9 records with whitespace outside their strings go through minify.
    CHECK(RawJsonWriterProbe::minify_passes(w) == 9);
}

TEST_CASE("a record submitted alone is checked for whitespace outside strings and minified only then", "[integration][raw_json]")
{
    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    h.start(w);
    const std::vector<std::string> texts = {R"({"s":"a b c","n":[1,2]})", R"({"s":"a b c", "n":[1,2]})",
                                            R"({"s":"x"} )"};
    for (const auto& t : texts) {
        REQUIRE(w.submit(t) == SubmitResult::accepted);
        flush(w);  // one record per batch: the record-by-record path
    }
    CHECK(read_file(w.file_path()) ==
          "{\"s\":\"a b c\",\"n\":[1,2]}\n{\"s\":\"a b c\",\"n\":[1,2]}\n{\"s\":\"x\"}\n");
    CHECK(RawJsonWriterProbe::batch_decided(w) == 0);
    CHECK(RawJsonWriterProbe::minify_passes(w) == 2);
}

TEST_CASE("random batches of valid and malformed records give exactly what validating each record alone gives", "[integration][raw_json][batch]")
{
    const std::vector<std::string> parts = {
        R"({"a":1})", R"({ "a" : [1, 2] })", R"({"s":"x y"})", "{\"s\":\"\\\"}\"}", R"({"a":})",
        R"({"a":1}{)", "[1]", "1", R"("s")", R"({"a":"b)", "}", "{", " ", "", R"({"u":"\u0020"})",
        "{\"x\":\n2}", R"({"a":1} )", " {\"a\":1}", R"({"q":"]"})", R"({"k":"}{"})", "\"", "\\",
    };
    std::uint64_t seed = 12345;
    auto next = [&] {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<std::size_t>(seed >> 33);
    };
    for (int round = 0; round < 30; ++round) {
        Harness h;
        RawJsonWriter w(h.executor(), h.options());
        std::vector<std::string> texts, expected;
        for (int i = 0; i < 60; ++i) {
            std::string t = parts[next() % parts.size()];
            if (next() % 3 == 0) t += parts[next() % parts.size()];
            texts.push_back(t);
            if (auto o = oracle(t)) expected.push_back(*o);
        }
        write_all(w, h.loop, texts);
        INFO("round " << round);
        CHECK(read_lines(w.file_path()) == expected);
        CHECK(w.stats().written == expected.size());
        CHECK(w.stats().dropped.malformed == texts.size() - expected.size());
    }
}

TEST_CASE("an owned string of up to inline_capacity bytes is copied into its queue cell and its buffer stays with the caller; a longer one is taken", "[integration][raw_json][owned]")
{
    const std::size_t cap = jsonlw::RawJsonText::inline_capacity;
    const std::string fits = "{\"k\":\"" + std::string(cap - 8, 'a') + "\"}";  // cap bytes
    const std::string longer = "{\"k\":\"" + std::string(cap - 7, 'b') + "\"}";  // cap + 1
    REQUIRE(fits.size() == cap);
    REQUIRE(longer.size() == cap + 1);

    std::string a = fits;
    const char* a_buffer = a.data();
    const jsonlw::RawJsonText ta(std::move(a));
    CHECK(ta.is_inline());
    CHECK(ta == fits);
    // Not taken: the caller frees it, on its own thread.
    CHECK(a.data() == a_buffer);
    CHECK(a == fits);

    std::string b = longer;
    const char* b_buffer = b.data();
    const jsonlw::RawJsonText tb(std::move(b));
    CHECK_FALSE(tb.is_inline());
    CHECK(tb.data() == b_buffer);  // the buffer itself, no copy
    CHECK(tb == longer);

    Harness h;
    RawJsonWriter w(h.executor(), h.options());
    w.start();
    std::string c = fits, d = longer;
    REQUIRE(w.submit(std::move(c)) == SubmitResult::accepted);
    REQUIRE(w.submit(std::move(d)) == SubmitResult::accepted);
    CHECK(c == fits);  // copied into the cell
    h.loop.start();
    flush(w);
    CHECK(read_lines(w.file_path()) == std::vector<std::string>{fits, longer});
    const auto s = w.stats();
    CHECK(s.written == 2);
    CHECK(s.dropped.total() == 0);
}
