// detail::check_json_grammar: the grammar walk over simdjson's stage 1 that lets RawJsonEncoder
// skip stage 2. It may leave any text to simdjson (`unsure`), but a text it decides must be
// one simdjson's DOM parse accepts, with the same root type — held here over a few hundred
// thousand mutated records, and over the records a serving process writes, which it must
// decide itself (a walk that answered `unsure` to everything would be safe and useless).
#include <catch2/catch.hpp>

#include <jsonlw/detail/json_grammar_check.hpp>

#include <simdjson.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using jsonlw::detail::check_json_grammar;
using jsonlw::detail::GrammarVerdict;

namespace {

// The walk over `text` alone (stage 1, then the grammar), as RawJsonEncoder runs it.
GrammarVerdict walk(const std::string& text)
{
    static simdjson::dom::parser parser;
    std::string padded = text + std::string(simdjson::SIMDJSON_PADDING, ' ');
    if (text.empty()) return GrammarVerdict::unsure;
    if (parser.capacity() < text.size()) REQUIRE(!parser.allocate(text.size()));
    auto& impl = *parser.implementation;
    if (impl.stage1(reinterpret_cast<const std::uint8_t*>(padded.data()), text.size(),
                    simdjson::stage1_mode::regular))
        return GrammarVerdict::unsure;
    const auto w = check_json_grammar(padded.data(), impl.structural_indexes.get(), 0,
                                      impl.n_structural_indexes, text.size());
    if (w.next != impl.n_structural_indexes) return GrammarVerdict::unsure;
    return w.verdict;
}

// simdjson's own verdict: object, array, or unsure standing for "not valid" (and for a
// valid scalar, which the walk never decides).
GrammarVerdict simdjson_verdict(const std::string& text)
{
    static simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(text).get(root)) return GrammarVerdict::unsure;
    if (root.is_object()) return GrammarVerdict::object;
    if (root.is_array()) return GrammarVerdict::array;
    return GrammarVerdict::unsure;
}

const std::vector<std::string> decided_texts = {
    R"({"request_id":100000,"ts":1700000000.000,"kind":"bench","ok":true,"tokens":[0,104729,57522,10315,115044],"text":"the quick brown fox "})",
    R"({"a":1,"s":"no whitespace outside strings"})",
    R"({"t":"tab\tand \"quote\" and \\ and \u0020","n":[1,2.5e3,-0,true,false,null]})",
    R"( {"lead":1})",
    R"({"trail":1}  )",
    "{\r\n\"crlf\":1\r\n}\r\n",
    R"({"emoji":"\ud83d\ude00 é","cjk":"\u4e2d\u6587","nul":"\u0000"})",
    R"({"deep":[[[[{"x":[]}]]]]})",
    R"({})",
    R"([])",
    R"([1,-2.5,3E-7,4e+2,0.000001,-0.0,123456789012345678])",
    R"({"escapes":"\/\b\f\n\r\t\"\\","k":{"":""}})",
    R"({"logprobs":[-0.0012,-1.5e-05,-12.25],"finish_reason":"stop"})",
};

// Valid JSON the walk does not check itself: simdjson decides these.
const std::vector<std::string> left_to_simdjson = {
    R"({"lone":"\udc00"})",              // a lone low surrogate
    R"({"high":"\ud83d x"})",             // a high surrogate with no low one after it
    R"({"big":12345678901234567890})",    // past 18 digits
    R"({"long":0.1234567890123456789})",  // past 18 digits
    R"({"exp":1e300})",                   // an exponent that could reach 10^308
    R"({"exp":1e0001})",                  // a four-digit exponent
    R"("a string")", R"(42)", R"(true)",  // a scalar document
    std::string(300, '[') + std::string(300, ']'),  // deeper than max_grammar_depth
};

// Not JSON: never decided.
const std::vector<std::string> invalid_texts = {
    R"({"a":1,})", R"([1,])", R"({"a" 1})", R"({"a":01})", R"([1.])", R"([.5])", R"([-])",
    R"([tru])", R"([truex])", R"({"a":"b"c"})", R"({"a":"\x"})", R"({"a":"\u12"})",
    R"({"a":"\uZZZZ"})", R"({a:1})", R"({"a":1}})", R"({"a":1} {"b":2})", R"([1 2])",
    R"({"a":[1}})", R"({"a":1e})", R"({"a":1e+})", R"({"a":1e400})", R"({"a":-1e400})",
    R"({"a":1"b"})", R"({"a":nul})", R"({"a":"tab	inside"})", "{\"a\":\"\xff\"}", R"({"a":1)",
    R"({"a":"unclosed})", R"({"a"})", R"({:1})", R"([,1])", R"({"a":[1,2]]})", R"()", "   ",
};

// One random edit of `text`: a byte replaced, inserted or removed, from JSON's own alphabet
// mostly, so the mutants sit near the grammar's edges.
std::string mutate(std::string text, std::mt19937_64& rng)
{
    static constexpr std::string_view alphabet = "{}[]:,\"\\ueE.+-0123456789tfnrl \n\t/abdx\x01\xc3\xa9";
    const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const char c = alphabet[pick(alphabet.size())];
    switch (pick(3)) {
    case 0: if (!text.empty()) text[pick(text.size())] = c; break;
    case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(pick(text.size() + 1)), c); break;
    default: if (!text.empty()) text.erase(pick(text.size()), 1); break;
    }
    return text;
}

}  // namespace

TEST_CASE("the grammar walk decides the records a serving process writes, as simdjson does", "[unit][raw_json]")
{
    for (const auto& t : decided_texts) {
        INFO(t);
        CHECK(walk(t) != GrammarVerdict::unsure);
        CHECK(walk(t) == simdjson_verdict(t));
    }
    CHECK(walk(R"([{"a":1}])") == GrammarVerdict::array);
    CHECK(walk(R"({"a":[1]})") == GrammarVerdict::object);
}

TEST_CASE("valid JSON the grammar walk does not check itself is left to simdjson", "[unit][raw_json]")
{
    for (const auto& t : left_to_simdjson) {
        INFO(t);
        CHECK(walk(t) == GrammarVerdict::unsure);
    }
}

TEST_CASE("the grammar walk never decides a text that is not JSON", "[unit][raw_json]")
{
    for (const auto& t : invalid_texts) {
        INFO(t);
        REQUIRE(simdjson_verdict(t) == GrammarVerdict::unsure);
        CHECK(walk(t) == GrammarVerdict::unsure);
    }
}

TEST_CASE("a mutated record the grammar walk decides is one simdjson parses, with the same root type", "[unit][raw_json]")
{
    std::mt19937_64 rng(20261205);
    std::vector<std::string> seeds = decided_texts;
    seeds.insert(seeds.end(), left_to_simdjson.begin(), left_to_simdjson.end() - 1);
    std::size_t decided = 0, valid = 0, total = 0;
    for (const auto& seed : seeds) {
        for (int n = 0; n < 20000; ++n) {
            std::string t = seed;
            for (auto edits = 1 + rng() % 3; edits > 0; --edits) t = mutate(std::move(t), rng);
            const GrammarVerdict got = walk(t);
            const GrammarVerdict want = simdjson_verdict(t);
            ++total;
            valid += want != GrammarVerdict::unsure;
            if (got == GrammarVerdict::unsure) continue;
            ++decided;
            if (got != want) FAIL_CHECK("decided unlike simdjson: " << t);
        }
    }
    // The mutants are not all left to simdjson: the walk decides a large share of the valid ones.
    INFO(decided << " decided, " << valid << " valid, of " << total);
    CHECK(decided * 2 > valid);
}

TEST_CASE("in a batch the grammar walk keeps each document to its own record", "[unit][raw_json]")
{
    // Two records joined as RawJsonEncoder joins a batch: '\n' after each.
    const std::string first = R"({"a":"x"})", second = R"({"b":[1,2]})";
    const std::string unclosed = R"({"a":"x)";
    for (const auto& [one, decided] : {std::pair{first, true}, std::pair{unclosed, false}}) {
        const std::string joined = one + "\n" + second + "\n" + std::string(64, ' ');
        const std::size_t total = one.size() + 1 + second.size() + 1;
        simdjson::dom::parser parser;
        REQUIRE(!parser.allocate(total));
        auto& impl = *parser.implementation;
        const auto err = impl.stage1(reinterpret_cast<const std::uint8_t*>(joined.data()), total,
                                     simdjson::stage1_mode::regular);
        const auto* idx = impl.structural_indexes.get();
        const auto count = impl.n_structural_indexes;
        if (!decided) {
            // The first record's string runs on into the second: stage 1 fails or the walk
            // does not end within the first record.
            if (err) continue;
            CHECK(check_json_grammar(joined.data(), idx, 0, count, one.size()).verdict ==
                  GrammarVerdict::unsure);
            continue;
        }
        REQUIRE(!err);
        const auto w1 = check_json_grammar(joined.data(), idx, 0, count, one.size());
        REQUIRE(w1.verdict == GrammarVerdict::object);
        CHECK(idx[w1.next] == one.size() + 1);  // the second record's opening brace
        const auto w2 = check_json_grammar(joined.data(), idx, w1.next, count, total - 1);
        CHECK(w2.verdict == GrammarVerdict::object);
        CHECK(w2.next == count);
        // The second document is not the first record's: bounded by the first record's end,
        // the walk from it does not decide.
        CHECK(check_json_grammar(joined.data(), idx, w1.next, count, one.size()).verdict ==
              GrammarVerdict::unsure);
    }
}
