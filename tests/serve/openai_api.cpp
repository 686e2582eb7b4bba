// The OpenAI wire format as functions (tools/serve/openai_api.hpp): request bodies parsed and
// checked, and every response shape parsed back with simdjson and checked field by field.
#include "openai_api.hpp"

#include <catch2/catch.hpp>
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace jsonlw;
using namespace jsonlw::serve;

namespace {

const ApiLimits limits{};  // model "jsonlw-demo", top-k 5, max_tokens 4096, default 16

CompletionRequest parse_ok(Endpoint e, std::string_view body)
{
    INFO(body);
    auto r = parse_completion_request(e, body, limits);
    if (const auto* err = std::get_if<ApiError>(&r)) FAIL("rejected: " << err->message);
    return std::get<CompletionRequest>(r);
}

ApiError parse_error(Endpoint e, std::string_view body)
{
    INFO(body);
    auto r = parse_completion_request(e, body, limits);
    REQUIRE(std::holds_alternative<ApiError>(r));
    return std::get<ApiError>(r);
}

// A JSON text parsed back, read by JSON pointer.
struct Json {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    explicit Json(std::string_view text)
    {
        INFO(text);
        REQUIRE(parser.parse(text.data(), text.size()).get(doc) == simdjson::SUCCESS);
        REQUIRE(doc.is_object());
    }
    simdjson::dom::element at(std::string_view ptr) const
    {
        INFO(ptr);
        simdjson::dom::element e;
        REQUIRE(doc.at_pointer(ptr).get(e) == simdjson::SUCCESS);
        return e;
    }
    std::int64_t integer(std::string_view ptr) const
    {
        std::int64_t v = 0;
        REQUIRE(at(ptr).get_int64().get(v) == simdjson::SUCCESS);
        return v;
    }
    double num(std::string_view ptr) const
    {
        double v = 0;
        INFO(ptr);
        REQUIRE(at(ptr).type() == simdjson::dom::element_type::DOUBLE);
        REQUIRE(at(ptr).get_double().get(v) == simdjson::SUCCESS);
        return v;
    }
    std::string str(std::string_view ptr) const
    {
        std::string_view v;
        INFO(ptr);
        REQUIRE(at(ptr).get_string().get(v) == simdjson::SUCCESS);
        return std::string(v);
    }
    bool is_null(std::string_view ptr) const { return at(ptr).is_null(); }
    bool has(std::string_view ptr) const
    {
        simdjson::dom::element e;
        return doc.at_pointer(ptr).get(e) == simdjson::SUCCESS;
    }
    std::size_t size(std::string_view ptr) const
    {
        const auto e = at(ptr);
        if (e.is_array()) return e.get_array().value_unsafe().size();
        REQUIRE(e.is_object());
        return e.get_object().value_unsafe().size();
    }
    std::vector<std::int64_t> ints(std::string_view ptr) const
    {
        std::vector<std::int64_t> out;
        simdjson::dom::array arr;
        REQUIRE(at(ptr).get_array().get(arr) == simdjson::SUCCESS);
        for (auto e : arr) out.push_back(e.get_int64().value_unsafe());
        return out;
    }
};

// The JSON of one "data: {...}\n\n" event.
std::string_view event_json(std::string_view event)
{
    REQUIRE(event.substr(0, 6) == "data: ");
    REQUIRE(event.size() >= 8);
    REQUIRE(event.substr(event.size() - 2) == "\n\n");
    return event.substr(6, event.size() - 8);
}

std::vector<std::int64_t> bytes_of(std::string_view s)
{
    std::vector<std::int64_t> out;
    for (const char c : s) out.push_back(static_cast<unsigned char>(c));
    return out;
}

constexpr ResponseMeta cmpl_meta{"cmpl-7", 1700000000, "jsonlw-demo"};
constexpr ResponseMeta chat_meta{"chatcmpl-7", 1700000001, "jsonlw-demo"};

CompletionRequest completions_request(bool logprobs, int top)
{
    CompletionRequest r;
    r.endpoint = Endpoint::completions;
    r.model = "jsonlw-demo";
    r.logprobs = logprobs;
    r.top_logprobs = top;
    return r;
}
CompletionRequest chat_request(bool logprobs, int top)
{
    CompletionRequest r = completions_request(logprobs, top);
    r.endpoint = Endpoint::chat_completions;
    return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------

TEST_CASE("A completions request with every field parses into what it asks for", "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::completions,
                            R"({"model":"jsonlw-demo","prompt":"  the quick\tbrown\nfox ",
                                "max_tokens":100,"logprobs":3,"echo":false,"best_of":1,"n":1,
                                "stream":true,"stream_options":{"include_usage":true},
                                "seed":42,"user":"alice","temperature":0.7,"top_p":1})");
    CHECK(r.endpoint == Endpoint::completions);
    CHECK(r.model == "jsonlw-demo");
    CHECK(r.max_tokens == 100);
    CHECK(r.stream);
    CHECK(r.include_usage);
    CHECK(r.logprobs);
    CHECK(r.top_logprobs == 3);
    CHECK(r.prompt_tokens == 4);
    REQUIRE(r.seed);
    CHECK(*r.seed == 42);
    CHECK(r.user == "alice");
}

TEST_CASE("A completions prompt given as an array of strings counts the words of all of them",
          "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::completions,
                            R"({"model":"jsonlw-demo","prompt":["one two","three",""]})");
    CHECK(r.prompt_tokens == 3);
    CHECK(parse_ok(Endpoint::completions, R"({"model":"jsonlw-demo","prompt":""})")
              .prompt_tokens == 1);
}

TEST_CASE("A completions request with logprobs 0 asks for logprobs without alternatives",
          "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::completions,
                            R"({"model":"jsonlw-demo","prompt":"x","logprobs":0})");
    CHECK(r.logprobs);
    CHECK(r.top_logprobs == 0);
}

TEST_CASE("A chat request with every field parses, max_completion_tokens winning over max_tokens",
          "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::chat_completions, R"({
        "model":"jsonlw-demo",
        "messages":[{"role":"system","content":"be brief"},
                    {"role":"user","content":[{"type":"text","text":"hello there"},
                                              {"type":"text","text":"again"}]},
                    {"role":"assistant","content":null},
                    {"role":"user","content":"one more"}],
        "max_completion_tokens":7,"max_tokens":3000,"logprobs":true,"top_logprobs":2,
        "n":1,"stream":true,"stream_options":{"include_usage":false},"seed":18446744073709551615,
        "user":"bob","temperature":1,"top_p":0.5})");
    CHECK(r.endpoint == Endpoint::chat_completions);
    CHECK(r.model == "jsonlw-demo");
    CHECK(r.max_tokens == 7);
    CHECK(r.stream);
    CHECK_FALSE(r.include_usage);
    CHECK(r.logprobs);
    CHECK(r.top_logprobs == 2);
    CHECK(r.prompt_tokens == 7);  // be brief / hello there / again / one more
    REQUIRE(r.seed);
    CHECK(*r.seed == std::numeric_limits<std::uint64_t>::max());
    CHECK(r.user == "bob");
}

TEST_CASE("A chat request's max_tokens is used when max_completion_tokens is not given",
          "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::chat_completions,
                            R"({"model":"jsonlw-demo","messages":[{"role":"user","content":"hi"}],
                                "max_tokens":9,"max_completion_tokens":null})");
    CHECK(r.max_tokens == 9);
}

TEST_CASE("Optional fields absent or null take their defaults", "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::completions,
                            R"({"model":"jsonlw-demo","prompt":"hi","max_tokens":null,
                                "logprobs":null,"stream":null,"stream_options":null,"seed":null,
                                "user":null,"n":null,"echo":null,"best_of":null,
                                "temperature":null,"top_p":null})");
    CHECK(r.max_tokens == limits.default_max_tokens);
    CHECK_FALSE(r.stream);
    CHECK_FALSE(r.include_usage);
    CHECK_FALSE(r.logprobs);
    CHECK(r.top_logprobs == 0);
    CHECK_FALSE(r.seed);
    CHECK(r.user.empty());

    const auto c = parse_ok(Endpoint::chat_completions,
                            R"({"model":"jsonlw-demo","messages":[{"role":"user","content":"hi"}],
                                "logprobs":false})");
    CHECK(c.max_tokens == limits.default_max_tokens);
    CHECK_FALSE(c.logprobs);
}

TEST_CASE("Unknown fields are ignored, whatever their type", "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::completions,
                            R"({"model":"jsonlw-demo","prompt":"a b","frobnicate":[1,{"x":null}],
                                "suffix":"s","top_logprobs":"ignored here","stop":["\n"],
                                "stream_options_extra":1,"presence_penalty":0})");
    CHECK(r.prompt_tokens == 2);
    CHECK_FALSE(r.logprobs);
}

TEST_CASE("A negative seed keeps its two's-complement bits", "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::completions,
                            R"({"model":"jsonlw-demo","prompt":"x","seed":-1})");
    REQUIRE(r.seed);
    CHECK(*r.seed == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("A request naming another model gets 404 model_not_found", "[serve][unit]")
{
    const auto e = parse_error(Endpoint::chat_completions,
                               R"({"model":"gpt-4o","messages":[{"role":"user","content":"x"}]})");
    CHECK(e.status == 404);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.code == std::optional<std::string>("model_not_found"));
    CHECK(e.param == std::optional<std::string>("model"));
    CHECK(e.message == "The model `gpt-4o` does not exist.");
}

TEST_CASE("A body that is not JSON gets 400 naming the parse error, with no param",
          "[serve][unit]")
{
    for (std::string_view body : {std::string_view("{\"model\":"), std::string_view("nope"),
                                  std::string_view("")}) {
        const auto e = parse_error(Endpoint::completions, body);
        CHECK(e.status == 400);
        CHECK(e.type == "invalid_request_error");
        CHECK_FALSE(e.param);
        CHECK_FALSE(e.code);
        CHECK(e.message.rfind("Invalid JSON in the request body: ", 0) == 0);
        CHECK(e.message.size() > std::string_view("Invalid JSON in the request body: ").size());
    }
}

TEST_CASE("A body that is JSON but not an object gets 400 with no param", "[serve][unit]")
{
    for (std::string_view body : {"[1,2]", "\"prompt\"", "null", "17"}) {
        const auto e = parse_error(Endpoint::chat_completions, body);
        CHECK(e.status == 400);
        CHECK_FALSE(e.param);
        CHECK(e.message == "The request body must be a JSON object");
    }
}

TEST_CASE("Each invalid field gets 400 naming the field", "[serve][unit]")
{
    struct Case {
        Endpoint endpoint;
        std::string fields;  // appended to a valid body
        std::string param;
        std::string message;
    };
    const auto C = Endpoint::completions;
    const auto H = Endpoint::chat_completions;
    const std::vector<Case> cases = {
        {C, R"("model":7)", "model", "'model' must be a string"},
        {C, R"("max_tokens":"10")", "max_tokens", "'max_tokens' must be an integer"},
        {C, R"("max_tokens":1.5)", "max_tokens", "'max_tokens' must be an integer"},
        {C, R"("max_tokens":0)", "max_tokens", "'max_tokens' must be at least 1, got 0"},
        {C, R"("max_tokens":-3)", "max_tokens", "'max_tokens' must be at least 1, got -3"},
        {C, R"("max_tokens":4097)", "max_tokens", "'max_tokens' must be at most 4096, got 4097"},
        {H, R"("max_tokens":4097)", "max_tokens", "'max_tokens' must be at most 4096, got 4097"},
        {H, R"("max_completion_tokens":0)", "max_completion_tokens",
         "'max_completion_tokens' must be at least 1, got 0"},
        {H, R"("max_completion_tokens":true)", "max_completion_tokens",
         "'max_completion_tokens' must be an integer"},
        {H, R"("max_tokens":"x","max_completion_tokens":5)", "max_tokens",
         "'max_tokens' must be an integer"},
        {C, R"("n":2)", "n", "'n' must be 1, got 2"},
        {H, R"("n":0)", "n", "'n' must be 1, got 0"},
        {C, R"("n":"1")", "n", "'n' must be an integer"},
        {C, R"("best_of":2)", "best_of", "'best_of' > 1 is not supported, got 2"},
        {C, R"("best_of":1.0)", "best_of", "'best_of' must be an integer"},
        {C, R"("echo":true)", "echo", "'echo' is not supported"},
        {C, R"("echo":1)", "echo", "'echo' must be a boolean"},
        {C, R"("logprobs":6)", "logprobs", "'logprobs' must be between 0 and 5, got 6"},
        {C, R"("logprobs":-1)", "logprobs", "'logprobs' must be between 0 and 5, got -1"},
        {C, R"("logprobs":true)", "logprobs", "'logprobs' must be an integer"},
        {H, R"("logprobs":1)", "logprobs", "'logprobs' must be a boolean"},
        {H, R"("logprobs":true,"top_logprobs":6)", "top_logprobs",
         "'top_logprobs' must be between 0 and 5, got 6"},
        {H, R"("logprobs":true,"top_logprobs":-1)", "top_logprobs",
         "'top_logprobs' must be between 0 and 5, got -1"},
        {H, R"("top_logprobs":2)", "top_logprobs", "'top_logprobs' requires 'logprobs' to be true"},
        {H, R"("logprobs":false,"top_logprobs":0)", "top_logprobs",
         "'top_logprobs' requires 'logprobs' to be true"},
        {H, R"("logprobs":true,"top_logprobs":"2")", "top_logprobs",
         "'top_logprobs' must be an integer"},
        {C, R"("stream":"yes")", "stream", "'stream' must be a boolean"},
        {C, R"("stream_options":{"include_usage":true})", "stream_options",
         "The 'stream_options' parameter is only allowed when 'stream' is enabled."},
        {H, R"("stream":false,"stream_options":{})", "stream_options",
         "The 'stream_options' parameter is only allowed when 'stream' is enabled."},
        {C, R"("stream":true,"stream_options":true)", "stream_options",
         "'stream_options' must be an object"},
        {H, R"("stream":true,"stream_options":{"include_usage":"yes"})", "stream_options",
         "'stream_options.include_usage' must be a boolean"},
        {C, R"("seed":1.5)", "seed", "'seed' must be an integer"},
        {C, R"("seed":"1")", "seed", "'seed' must be an integer"},
        {C, R"("user":5)", "user", "'user' must be a string"},
        {H, R"("temperature":"hot")", "temperature", "'temperature' must be a number"},
        {H, R"("top_p":[1])", "top_p", "'top_p' must be a number"},
    };
    for (const Case& c : cases) {
        const std::string body =
            c.endpoint == Endpoint::completions
                ? R"({"model":"jsonlw-demo","prompt":"hi",)" + c.fields + "}"
                : R"({"model":"jsonlw-demo","messages":[{"role":"user","content":"hi"}],)" +
                      c.fields + "}";
        // A duplicate "model" key: simdjson's DOM answers the first one, so put it first.
        const std::string text = c.param == "model" ? "{" + c.fields + "," + body.substr(1)
                                                    : body;
        const auto e = parse_error(c.endpoint, text);
        INFO(text);
        CHECK(e.status == 400);
        CHECK(e.type == "invalid_request_error");
        CHECK(e.param == std::optional<std::string>(c.param));
        CHECK(e.message == c.message);
        CHECK_FALSE(e.code);
    }
}

TEST_CASE("A missing or malformed prompt or messages gets 400 naming it", "[serve][unit]")
{
    struct Case {
        Endpoint endpoint;
        std::string body;
        std::string param;
        std::string message;
    };
    const auto C = Endpoint::completions;
    const auto H = Endpoint::chat_completions;
    const std::vector<Case> cases = {
        {C, R"({"prompt":"hi"})", "model", "you must provide a model parameter"},
        {H, R"({"model":null,"messages":[{"role":"user","content":"x"}]})", "model",
         "you must provide a model parameter"},
        {C, R"({"model":"jsonlw-demo"})", "prompt", "'prompt' is required"},
        {C, R"({"model":"jsonlw-demo","prompt":null})", "prompt", "'prompt' is required"},
        {C, R"({"model":"jsonlw-demo","prompt":5})", "prompt",
         "'prompt' must be a string or a non-empty array of strings"},
        {C, R"({"model":"jsonlw-demo","prompt":[]})", "prompt",
         "'prompt' must be a string or a non-empty array of strings"},
        {C, R"({"model":"jsonlw-demo","prompt":["a",1]})", "prompt",
         "'prompt' must be a string or a non-empty array of strings"},
        {C, R"({"model":"jsonlw-demo","prompt":[1,2,3]})", "prompt",
         "'prompt' must be a string or a non-empty array of strings"},
        {H, R"({"model":"jsonlw-demo"})", "messages", "'messages' is required"},
        {H, R"({"model":"jsonlw-demo","messages":[]})", "messages",
         "'messages' must be a non-empty array of messages"},
        {H, R"({"model":"jsonlw-demo","messages":{"role":"user"}})", "messages",
         "'messages' must be a non-empty array of messages"},
        {H, R"({"model":"jsonlw-demo","messages":["hi"]})", "messages",
         "'messages[0]' must be an object"},
        {H, R"({"model":"jsonlw-demo","messages":[{"content":"hi"}]})", "messages",
         "'messages[0].role' must be a string"},
        {H, R"({"model":"jsonlw-demo","messages":[{"role":"user","content":"a"},)"
            R"({"role":1,"content":"b"}]})",
         "messages", "'messages[1].role' must be a string"},
        {H, R"({"model":"jsonlw-demo","messages":[{"role":"user"}]})", "messages",
         "'messages[0].content' is required"},
        {H, R"({"model":"jsonlw-demo","messages":[{"role":"user","content":null}]})", "messages",
         "'messages[0].content' is required"},
        {H, R"({"model":"jsonlw-demo","messages":[{"role":"user","content":5}]})", "messages",
         "'messages[0].content' must be a string or an array of text parts"},
        {H, R"({"model":"jsonlw-demo","messages":[{"role":"user","content":)"
            R"([{"type":"image_url","image_url":{"url":"x"}}]}]})",
         "messages",
         R"('messages[0].content[0]' must be a text part: {"type": "text", "text": string})"},
        {H, R"({"model":"jsonlw-demo","messages":[{"role":"user","content":)"
            R"([{"type":"text","text":"a"},{"type":"text"}]}]})",
         "messages",
         R"('messages[0].content[1]' must be a text part: {"type": "text", "text": string})"},
    };
    for (const Case& c : cases) {
        const auto e = parse_error(c.endpoint, c.body);
        INFO(c.body);
        CHECK(e.status == 400);
        CHECK(e.param == std::optional<std::string>(c.param));
        CHECK(e.message == c.message);
    }
}

TEST_CASE("An assistant message may have no content", "[serve][unit]")
{
    const auto r = parse_ok(Endpoint::chat_completions,
                            R"({"model":"jsonlw-demo","messages":[{"role":"user","content":"a b c"},
                                {"role":"assistant","tool_calls":[]}]})");
    CHECK(r.prompt_tokens == 3);
}

// ---------------------------------------------------------------------------------------
// The tokenizer
// ---------------------------------------------------------------------------------------

TEST_CASE("Token texts are the 64 words after a space, wrapping around", "[serve][unit]")
{
    CHECK(token_text(0) == " the");
    CHECK(token_text(1) == " model");
    CHECK(token_text(13) == " JSON");
    CHECK(token_text(19) == " GPU");
    CHECK(token_text(48) == " .");
    CHECK(token_text(51) == " ?");
    CHECK(token_text(63) == " ok");
    CHECK(token_text(64) == " the");
    CHECK(token_text(64 * 1000 + 5) == " blocking");
    CHECK(token_text(std::numeric_limits<std::int32_t>::max()) == " ok");  // 2^31-1 = 63 mod 64
    CHECK(token_text(-1).empty());
    CHECK(token_text(std::numeric_limits<std::int32_t>::min()).empty());
    // Static storage: the same view each time.
    CHECK(token_text(3).data() == token_text(67).data());
}

TEST_CASE("A prompt's length is its whitespace-separated words, at least 1", "[serve][unit]")
{
    CHECK(count_prompt_tokens("") == 1);
    CHECK(count_prompt_tokens(" \t\n ") == 1);
    CHECK(count_prompt_tokens("one") == 1);
    CHECK(count_prompt_tokens("  one  two\tthree\nfour\r\nfive ") == 5);
}

// ---------------------------------------------------------------------------------------
// Whole bodies
// ---------------------------------------------------------------------------------------

TEST_CASE("A completions body without logprobs has exactly OpenAI's shape", "[serve][unit]")
{
    const std::vector<GeneratedToken> tokens = {{0, nullptr}, {1, nullptr}, {66, nullptr}};
    const std::string body = completion_body(completions_request(false, 0), cmpl_meta, tokens,
                                             "length", Usage{5, 3});
    CHECK(body ==
          R"({"id":"cmpl-7","object":"text_completion","created":1700000000,"model":"jsonlw-demo",)"
          R"("choices":[{"index":0,"text":" the model writes","logprobs":null,)"
          R"("finish_reason":"length"}],)"
          R"("usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}})");
}

TEST_CASE("A completions body's logprobs round-trip exactly, with nulls for dropped steps",
          "[serve][unit]")
{
    TokenLogprob a;
    a.token_id = 0;
    a.logprob = -0.123456789012345;
    a.top = {{0, -0.123456789012345}, {64, -0.5}, {1, -2.25}, {2, -3.0}};  // 64 is " the" again
    TokenLogprob b;
    b.token_id = 5;
    b.logprob = -1e-300;
    b.top = {{5, -1e-300}, {6, -std::numeric_limits<double>::infinity()}};
    TokenLogprob unknown;
    unknown.known = false;
    const std::vector<GeneratedToken> tokens = {{0, &a}, {5, nullptr}, {5, &b}, {7, &unknown}};
    const auto req = completions_request(true, 3);
    const std::string body = completion_body(req, cmpl_meta, tokens, "stop", Usage{2, 4});
    const Json j(body);
    CHECK(j.str("/id") == "cmpl-7");
    CHECK(j.str("/object") == "text_completion");
    CHECK(j.integer("/created") == 1700000000);
    CHECK(j.str("/model") == "jsonlw-demo");
    CHECK(j.size("/choices") == 1);
    CHECK(j.integer("/choices/0/index") == 0);
    CHECK(j.str("/choices/0/text") == " the blocking blocking loop");
    CHECK(j.str("/choices/0/finish_reason") == "stop");

    const std::string lp = "/choices/0/logprobs";
    CHECK(j.size(lp) == 4);
    CHECK(j.size(lp + "/tokens") == 4);
    CHECK(j.str(lp + "/tokens/0") == " the");
    CHECK(j.str(lp + "/tokens/1") == " blocking");
    CHECK(j.str(lp + "/tokens/2") == " blocking");
    CHECK(j.str(lp + "/tokens/3") == " loop");
    CHECK(j.num(lp + "/token_logprobs/0") == -0.123456789012345);
    CHECK(j.is_null(lp + "/token_logprobs/1"));
    CHECK(j.num(lp + "/token_logprobs/2") == -1e-300);
    CHECK(j.is_null(lp + "/token_logprobs/3"));
    // The first 3 alternatives; " the" twice keeps the first, the likelier.
    CHECK(j.size(lp + "/top_logprobs/0") == 2);
    CHECK(j.num(lp + "/top_logprobs/0/ the") == -0.123456789012345);
    CHECK(j.num(lp + "/top_logprobs/0/ model") == -2.25);
    CHECK_FALSE(j.has(lp + "/top_logprobs/0/ writes"));
    CHECK(j.is_null(lp + "/top_logprobs/1"));
    CHECK(j.size(lp + "/top_logprobs/2") == 2);
    CHECK(j.num(lp + "/top_logprobs/2/ blocking") == -1e-300);
    CHECK(j.is_null(lp + "/top_logprobs/2/ its"));  // -inf
    CHECK(j.is_null(lp + "/top_logprobs/3"));
    CHECK(j.ints(lp + "/text_offset") == std::vector<std::int64_t>{0, 4, 13, 22});

    CHECK(j.integer("/usage/prompt_tokens") == 2);
    CHECK(j.integer("/usage/completion_tokens") == 4);
    CHECK(j.integer("/usage/total_tokens") == 6);
}

TEST_CASE("Logprobs are spelled as JsonLine spells doubles", "[serve][unit]")
{
    TokenLogprob a;
    a.logprob = -1.0;
    a.top = {{0, -1.0}};
    TokenLogprob nan;
    nan.logprob = std::numeric_limits<double>::quiet_NaN();
    const std::vector<GeneratedToken> tokens = {{0, &a}, {1, &nan}};
    const std::string body =
        completion_body(completions_request(true, 1), cmpl_meta, tokens, "stop", Usage{1, 2});
    CHECK(body.find(R"("token_logprobs":[-1.0,null])") != std::string::npos);
    CHECK(body.find(R"("top_logprobs":[{" the":-1.0},{}])") != std::string::npos);
}

TEST_CASE("A completions body with logprobs 0 has empty alternatives", "[serve][unit]")
{
    TokenLogprob a;
    a.logprob = -0.25;
    a.top = {{0, -0.25}, {1, -3.5}};
    const std::vector<GeneratedToken> tokens = {{0, &a}};
    const Json j(completion_body(completions_request(true, 0), cmpl_meta, tokens, "stop", {}));
    CHECK(j.num("/choices/0/logprobs/token_logprobs/0") == -0.25);
    CHECK(j.size("/choices/0/logprobs/top_logprobs/0") == 0);
}

TEST_CASE("A chat body has the message, and logprobs with bytes, nulls and truncated "
          "alternatives",
          "[serve][unit]")
{
    TokenLogprob a;
    a.token_id = 13;
    a.logprob = -0.123456789012345;
    a.top = {{13, -0.123456789012345}, {19, -1.5}, {48, -2.0}};
    const std::vector<GeneratedToken> tokens = {{13, &a}, {2, nullptr}};
    const std::string body =
        completion_body(chat_request(true, 2), chat_meta, tokens, "length", Usage{10, 2});
    const Json j(body);
    CHECK(j.str("/id") == "chatcmpl-7");
    CHECK(j.str("/object") == "chat.completion");
    CHECK(j.integer("/created") == 1700000001);
    CHECK(j.str("/model") == "jsonlw-demo");
    CHECK(j.size("/choices") == 1);
    CHECK(j.size("/choices/0") == 4);
    CHECK(j.integer("/choices/0/index") == 0);
    CHECK(j.size("/choices/0/message") == 2);
    CHECK(j.str("/choices/0/message/role") == "assistant");
    CHECK(j.str("/choices/0/message/content") == " JSON writes");
    CHECK(j.str("/choices/0/finish_reason") == "length");

    const std::string c = "/choices/0/logprobs/content";
    CHECK(j.size("/choices/0/logprobs") == 1);
    CHECK(j.size(c) == 2);
    CHECK(j.str(c + "/0/token") == " JSON");
    CHECK(j.num(c + "/0/logprob") == -0.123456789012345);
    CHECK(j.ints(c + "/0/bytes") == std::vector<std::int64_t>{32, 74, 83, 79, 78});
    CHECK(j.size(c + "/0/top_logprobs") == 2);
    CHECK(j.str(c + "/0/top_logprobs/0/token") == " JSON");
    CHECK(j.num(c + "/0/top_logprobs/0/logprob") == -0.123456789012345);
    CHECK(j.ints(c + "/0/top_logprobs/0/bytes") == bytes_of(" JSON"));
    CHECK(j.str(c + "/0/top_logprobs/1/token") == " GPU");
    CHECK(j.num(c + "/0/top_logprobs/1/logprob") == -1.5);
    CHECK(j.ints(c + "/0/top_logprobs/1/bytes") == bytes_of(" GPU"));
    // The dropped step.
    CHECK(j.str(c + "/1/token") == " writes");
    CHECK(j.is_null(c + "/1/logprob"));
    CHECK(j.ints(c + "/1/bytes") == bytes_of(" writes"));
    CHECK(j.size(c + "/1/top_logprobs") == 0);

    CHECK(j.integer("/usage/prompt_tokens") == 10);
    CHECK(j.integer("/usage/completion_tokens") == 2);
    CHECK(j.integer("/usage/total_tokens") == 12);
}

TEST_CASE("A body without logprobs asked for has \"logprobs\": null even when data exists",
          "[serve][unit]")
{
    TokenLogprob a;
    a.logprob = -0.5;
    const std::vector<GeneratedToken> tokens = {{0, &a}};
    const Json j(completion_body(chat_request(false, 0), chat_meta, tokens, "stop", {}));
    CHECK(j.is_null("/choices/0/logprobs"));
    CHECK(j.str("/choices/0/message/content") == " the");
}

// ---------------------------------------------------------------------------------------
// Streamed events
// ---------------------------------------------------------------------------------------

TEST_CASE("A completions chunk carries its tokens' text and logprobs from its text offset",
          "[serve][unit]")
{
    TokenLogprob a;
    a.logprob = -0.75;
    a.top = {{3, -0.75}, {4, -1.25}};
    const std::vector<GeneratedToken> tokens = {{3, &a}, {4, nullptr}};
    auto req = completions_request(true, 5);
    req.stream = true;
    std::string out = "earlier";
    append_chunk_event(out, req, cmpl_meta, tokens, 17, true, std::nullopt);
    REQUIRE(out.rfind("earlier", 0) == 0);
    const Json j(event_json(std::string_view(out).substr(7)));
    CHECK(j.str("/id") == "cmpl-7");
    CHECK(j.str("/object") == "text_completion");
    CHECK(j.integer("/created") == 1700000000);
    CHECK(j.str("/model") == "jsonlw-demo");
    CHECK(j.size("/choices") == 1);
    CHECK(j.integer("/choices/0/index") == 0);
    CHECK(j.str("/choices/0/text") == " records without");
    CHECK(j.is_null("/choices/0/finish_reason"));
    CHECK(j.num("/choices/0/logprobs/token_logprobs/0") == -0.75);
    CHECK(j.is_null("/choices/0/logprobs/token_logprobs/1"));
    CHECK(j.size("/choices/0/logprobs/top_logprobs/0") == 2);
    CHECK(j.num("/choices/0/logprobs/top_logprobs/0/ without") == -1.25);
    CHECK(j.is_null("/choices/0/logprobs/top_logprobs/1"));
    CHECK(j.ints("/choices/0/logprobs/text_offset") == std::vector<std::int64_t>{17, 25});
    CHECK_FALSE(j.has("/usage"));
}

TEST_CASE("A completions chunk without logprobs asked for is exactly OpenAI's shape",
          "[serve][unit]")
{
    const std::vector<GeneratedToken> tokens = {{9, nullptr}};
    std::string out;
    append_chunk_event(out, completions_request(false, 0), cmpl_meta, tokens, 0, false, "stop");
    CHECK(out ==
          "data: "
          R"({"id":"cmpl-7","object":"text_completion","created":1700000000,"model":"jsonlw-demo",)"
          R"("choices":[{"index":0,"text":" every","logprobs":null,"finish_reason":"stop"}]})"
          "\n\n");
}

TEST_CASE("Chat chunks: the role on the first, content deltas, an empty delta to close",
          "[serve][unit]")
{
    auto req = chat_request(true, 1);
    req.stream = true;
    req.include_usage = true;
    TokenLogprob a;
    a.logprob = -0.125;
    a.top = {{10, -0.125}, {11, -4.0}};

    std::string out;
    append_chunk_event(out, req, chat_meta, {}, 0, true, std::nullopt);
    {
        const Json j(event_json(out));
        CHECK(j.str("/object") == "chat.completion.chunk");
        CHECK(j.str("/id") == "chatcmpl-7");
        CHECK(j.integer("/created") == 1700000001);
        CHECK(j.size("/choices/0/delta") == 2);
        CHECK(j.str("/choices/0/delta/role") == "assistant");
        CHECK(j.str("/choices/0/delta/content") == "");
        CHECK(j.is_null("/choices/0/logprobs"));
        CHECK(j.is_null("/choices/0/finish_reason"));
        CHECK(j.is_null("/usage"));
    }

    out.clear();
    const std::vector<GeneratedToken> tokens = {{10, &a}};
    append_chunk_event(out, req, chat_meta, tokens, 0, false, std::nullopt);
    {
        const Json j(event_json(out));
        CHECK(j.size("/choices/0/delta") == 1);
        CHECK(j.str("/choices/0/delta/content") == " line");
        CHECK(j.size("/choices/0/logprobs/content") == 1);
        CHECK(j.str("/choices/0/logprobs/content/0/token") == " line");
        CHECK(j.num("/choices/0/logprobs/content/0/logprob") == -0.125);
        CHECK(j.ints("/choices/0/logprobs/content/0/bytes") == bytes_of(" line"));
        CHECK(j.size("/choices/0/logprobs/content/0/top_logprobs") == 1);
        CHECK(j.str("/choices/0/logprobs/content/0/top_logprobs/0/token") == " line");
        CHECK(j.is_null("/choices/0/finish_reason"));
    }

    out.clear();
    append_chunk_event(out, req, chat_meta, {}, 0, false, "stop");
    {
        const Json j(event_json(out));
        CHECK(j.size("/choices/0/delta") == 0);
        CHECK(j.is_null("/choices/0/logprobs"));
        CHECK(j.str("/choices/0/finish_reason") == "stop");
        CHECK(j.is_null("/usage"));
    }
}

TEST_CASE("A first chat chunk with tokens carries the role and the content together",
          "[serve][unit]")
{
    std::string out;
    const std::vector<GeneratedToken> tokens = {{0, nullptr}, {1, nullptr}};
    append_chunk_event(out, chat_request(false, 0), chat_meta, tokens, 0, true, std::nullopt);
    CHECK(out ==
          "data: "
          R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000001,)"
          R"("model":"jsonlw-demo","choices":[{"index":0,"delta":{"role":"assistant",)"
          R"("content":" the model"},"logprobs":null,"finish_reason":null}]})"
          "\n\n");
}

TEST_CASE("The usage event has no choices and the usage; the stream ends with [DONE]",
          "[serve][unit]")
{
    auto req = chat_request(false, 0);
    req.stream = true;
    req.include_usage = true;
    std::string out;
    append_usage_event(out, req, chat_meta, Usage{11, 4});
    out += done_event;
    const auto end = out.find("\n\n") + 2;
    const Json j(event_json(std::string_view(out).substr(0, end)));
    CHECK(j.str("/id") == "chatcmpl-7");
    CHECK(j.str("/object") == "chat.completion.chunk");
    CHECK(j.integer("/created") == 1700000001);
    CHECK(j.str("/model") == "jsonlw-demo");
    CHECK(j.size("/choices") == 0);
    CHECK(j.integer("/usage/prompt_tokens") == 11);
    CHECK(j.integer("/usage/completion_tokens") == 4);
    CHECK(j.integer("/usage/total_tokens") == 15);
    CHECK(std::string_view(out).substr(end) == "data: [DONE]\n\n");

    std::string cmpl;
    append_usage_event(cmpl, completions_request(false, 0), cmpl_meta, Usage{1, 1});
    const Json c(event_json(cmpl));
    CHECK(c.str("/object") == "text_completion");
    CHECK(c.integer("/usage/total_tokens") == 2);
}

// ---------------------------------------------------------------------------------------
// Errors and models
// ---------------------------------------------------------------------------------------

TEST_CASE("An error body with quotes, backslashes and newlines in its message is valid JSON",
          "[serve][unit]")
{
    ApiError e;
    e.status = 404;
    e.message = "The model `a\"b\\c\nd\x01` does not exist.";
    e.param = "model";
    e.code = "model_not_found";
    const std::string body = error_body(e);
    const Json j(body);
    CHECK(j.size("") == 1);
    CHECK(j.size("/error") == 4);
    CHECK(j.str("/error/message") == e.message);
    CHECK(j.str("/error/type") == "invalid_request_error");
    CHECK(j.str("/error/param") == "model");
    CHECK(j.str("/error/code") == "model_not_found");
}

TEST_CASE("An error body writes absent param and code as null", "[serve][unit]")
{
    const auto e = parse_error(Endpoint::completions, "{oops");
    CHECK(error_body(ApiError{400, "bad", "invalid_request_error", std::nullopt, std::nullopt}) ==
          R"({"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}})");
    const Json j(error_body(e));
    CHECK(j.str("/error/message") == e.message);
    CHECK(j.is_null("/error/param"));
    CHECK(j.is_null("/error/code"));
}

TEST_CASE("The models body lists the one model", "[serve][unit]")
{
    CHECK(models_body("jsonlw-demo", 1700000000) ==
          R"({"object":"list","data":[{"id":"jsonlw-demo","object":"model",)"
          R"("created":1700000000,"owned_by":"jsonlw"}]})");
    const Json j(models_body("odd \"name\"", 5));
    CHECK(j.str("/data/0/id") == "odd \"name\"");
}
