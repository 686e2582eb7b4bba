// Reading an OpenAI request body (openai_api.hpp): simdjson's DOM, each field checked for
// its type and range in the order OpenAI's and vLLM's servers check them, the first problem
// returned as an ApiError that names the field.
#include "openai_api.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <utility>

namespace jsonlw::serve {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

ApiError invalid(std::string message, std::optional<std::string> param)
{
    ApiError e;
    e.message = std::move(message);
    e.param = std::move(param);
    return e;
}

bool is_integer(const element& v) noexcept
{
    const element_type t = v.type();
    return t == element_type::INT64 || t == element_type::UINT64;
}

// An integer member's value; one past int64's range reads as int64's max, which every range
// check below rejects.
std::int64_t integer_of(const element& v) noexcept
{
    if (v.type() == element_type::UINT64) return std::numeric_limits<std::int64_t>::max();
    return v.get_int64().value_unsafe();
}

std::uint64_t count_words(std::string_view text) noexcept
{
    std::uint64_t words = 0;
    bool in_word = false;
    for (const char c : text) {
        const bool space =
            c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (!space && !in_word) ++words;
        in_word = !space;
    }
    return words;
}

// The members of one request object, read by type. A member that is absent or null counts as
// not given (the SDKs send null for "not set"); one of the wrong type keeps the first error.
class Members {
public:
    explicit Members(simdjson::dom::object obj) noexcept : obj_(obj) {}

    std::optional<element> get(std::string_view name) const
    {
        element v;
        if (obj_[name].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
        return v;
    }
    std::optional<std::int64_t> integer(std::string_view name)
    {
        const auto v = checked(name, &is_integer, "an integer");
        if (!v) return std::nullopt;
        return integer_of(*v);
    }
    std::optional<bool> boolean(std::string_view name)
    {
        const auto v = checked(name, [](const element& e) { return e.is_bool(); }, "a boolean");
        if (!v) return std::nullopt;
        return bool(v->get_bool().value_unsafe());
    }
    std::optional<std::string_view> string(std::string_view name)
    {
        const auto v = checked(name, [](const element& e) { return e.is_string(); }, "a string");
        if (!v) return std::nullopt;
        return v->get_string().value_unsafe();
    }
    void number(std::string_view name)
    {
        (void)checked(name, [](const element& e) { return e.is_number(); }, "a number");
    }
    std::optional<simdjson::dom::object> object(std::string_view name)
    {
        const auto v = checked(name, [](const element& e) { return e.is_object(); }, "an object");
        if (!v) return std::nullopt;
        return v->get_object().value_unsafe();
    }

    void fail(std::string message, std::string_view param)
    {
        if (!error) error = invalid(std::move(message), std::string(param));
    }

    std::optional<ApiError> error{};

private:
    template <class Pred>
    std::optional<element> checked(std::string_view name, Pred ok, std::string_view what)
    {
        if (error) return std::nullopt;
        auto v = get(name);
        if (v && !ok(*v)) {
            fail(fmt::format("'{}' must be {}", name, what), name);
            return std::nullopt;
        }
        return v;
    }

    simdjson::dom::object obj_;
};

// A completions "prompt": a string, or a non-empty array of strings (their words summed).
std::optional<ApiError> read_prompt(Members& m, CompletionRequest& req)
{
    const auto v = m.get("prompt");
    if (!v) return invalid("'prompt' is required", "prompt");
    std::uint64_t words = 0;
    if (v->is_string()) {
        words = count_words(v->get_string().value_unsafe());
    } else {
        simdjson::dom::array arr;
        bool ok = v->get_array().get(arr) == simdjson::SUCCESS && arr.size() > 0;
        for (std::size_t i = 0; ok && i < arr.size(); ++i) {
            std::string_view s;
            ok = arr.at(i).get_string().get(s) == simdjson::SUCCESS;
            words += count_words(s);
        }
        if (!ok)
            return invalid("'prompt' must be a string or a non-empty array of strings", "prompt");
    }
    req.prompt_tokens = std::uint32_t(std::clamp<std::uint64_t>(words, 1, UINT32_MAX));
    return std::nullopt;
}

// The words of one message's "content": a string, an array of text parts, or (an assistant's,
// which may carry only tool calls) null or absent.
std::optional<ApiError> read_content(simdjson::dom::object msg, std::size_t index,
                                     std::string_view role, std::uint64_t& words)
{
    element content;
    const bool given = msg["content"].get(content) == simdjson::SUCCESS && !content.is_null();
    if (!given) {
        if (role == "assistant") return std::nullopt;
        return invalid(fmt::format("'messages[{}].content' is required", index), "messages");
    }
    if (content.is_string()) {
        words += count_words(content.get_string().value_unsafe());
        return std::nullopt;
    }
    simdjson::dom::array parts;
    if (content.get_array().get(parts) != simdjson::SUCCESS)
        return invalid(fmt::format("'messages[{}].content' must be a string or an array of "
                                   "text parts",
                                   index),
                       "messages");
    std::size_t p = 0;
    for (element part : parts) {
        std::string_view type, text;
        if (part["type"].get_string().get(type) != simdjson::SUCCESS || type != "text" ||
            part["text"].get_string().get(text) != simdjson::SUCCESS)
            return invalid(fmt::format("'messages[{}].content[{}]' must be a text part: "
                                       "{{\"type\": \"text\", \"text\": string}}",
                                       index, p),
                           "messages");
        words += count_words(text);
        ++p;
    }
    return std::nullopt;
}

// A chat "messages": a non-empty array of {"role": string, "content": ...}.
std::optional<ApiError> read_messages(Members& m, CompletionRequest& req)
{
    const auto v = m.get("messages");
    if (!v) return invalid("'messages' is required", "messages");
    simdjson::dom::array arr;
    if (v->get_array().get(arr) != simdjson::SUCCESS || arr.size() == 0)
        return invalid("'messages' must be a non-empty array of messages", "messages");
    std::uint64_t words = 0;
    std::size_t i = 0;
    for (element e : arr) {
        simdjson::dom::object msg;
        if (e.get_object().get(msg) != simdjson::SUCCESS)
            return invalid(fmt::format("'messages[{}]' must be an object", i), "messages");
        std::string_view role;
        if (msg["role"].get_string().get(role) != simdjson::SUCCESS)
            return invalid(fmt::format("'messages[{}].role' must be a string", i), "messages");
        if (auto err = read_content(msg, i, role, words)) return err;
        ++i;
    }
    req.prompt_tokens = std::uint32_t(std::clamp<std::uint64_t>(words, 1, UINT32_MAX));
    return std::nullopt;
}

std::optional<ApiError> read_max_tokens(Members& m, CompletionRequest& req,
                                        const ApiLimits& limits)
{
    // Chat's newer name wins; the old one is still type-checked.
    std::optional<std::int64_t> old_name = m.integer("max_tokens");
    std::string_view param = "max_tokens";
    std::optional<std::int64_t> v = old_name;
    if (req.endpoint == Endpoint::chat_completions) {
        if (auto newer = m.integer("max_completion_tokens")) {
            v = newer;
            param = "max_completion_tokens";
        }
    }
    if (m.error) return m.error;
    if (!v) {
        req.max_tokens = limits.default_max_tokens;
        return std::nullopt;
    }
    if (*v < 1)
        return invalid(fmt::format("'{}' must be at least 1, got {}", param, *v),
                       std::string(param));
    if (*v > std::int64_t(limits.max_tokens))
        return invalid(fmt::format("'{}' must be at most {}, got {}", param, limits.max_tokens, *v),
                       std::string(param));
    req.max_tokens = std::uint32_t(*v);
    return std::nullopt;
}

std::optional<ApiError> read_logprobs(Members& m, CompletionRequest& req, const ApiLimits& limits)
{
    const auto out_of_range = [&](std::string_view param, std::int64_t v) {
        return invalid(fmt::format("'{}' must be between 0 and {}, got {}", param,
                                   limits.max_top_logprobs, v),
                       std::string(param));
    };
    if (req.endpoint == Endpoint::completions) {
        const auto n = m.integer("logprobs");
        if (m.error) return m.error;
        if (!n) return std::nullopt;
        if (*n < 0 || *n > limits.max_top_logprobs) return out_of_range("logprobs", *n);
        req.logprobs = true;
        req.top_logprobs = int(*n);
        return std::nullopt;
    }
    req.logprobs = m.boolean("logprobs").value_or(false);
    const auto top = m.integer("top_logprobs");
    if (m.error) return m.error;
    if (!top) return std::nullopt;
    if (!req.logprobs)
        return invalid("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    if (*top < 0 || *top > limits.max_top_logprobs) return out_of_range("top_logprobs", *top);
    req.top_logprobs = int(*top);
    return std::nullopt;
}

std::optional<ApiError> read_request(Members& m, CompletionRequest& req, const ApiLimits& limits)
{
    const auto model = m.string("model");
    if (m.error) return m.error;
    if (!model) return invalid("you must provide a model parameter", "model");
    if (*model != limits.model) {
        ApiError e = invalid(fmt::format("The model `{}` does not exist.", *model), "model");
        e.status = 404;
        e.code = "model_not_found";
        return e;
    }
    req.model = std::string(*model);

    if (auto err = req.endpoint == Endpoint::completions ? read_prompt(m, req)
                                                         : read_messages(m, req))
        return err;
    if (auto err = read_max_tokens(m, req, limits)) return err;

    if (const auto n = m.integer("n"); n && *n != 1)
        return invalid(fmt::format("'n' must be 1, got {}", *n), "n");
    if (req.endpoint == Endpoint::completions) {
        if (const auto best_of = m.integer("best_of"); best_of && *best_of > 1)
            return invalid(fmt::format("'best_of' > 1 is not supported, got {}", *best_of),
                           "best_of");
        if (m.boolean("echo").value_or(false))
            return invalid("'echo' is not supported", "echo");
    }
    if (m.error) return m.error;
    if (auto err = read_logprobs(m, req, limits)) return err;

    req.stream = m.boolean("stream").value_or(false);
    if (const auto options = m.object("stream_options")) {
        if (!req.stream)
            return invalid("The 'stream_options' parameter is only allowed when 'stream' is "
                           "enabled.",
                           "stream_options");
        element include;
        if (options->at_key("include_usage").get(include) == simdjson::SUCCESS &&
            !include.is_null()) {
            if (!include.is_bool())
                return invalid("'stream_options.include_usage' must be a boolean",
                               "stream_options");
            req.include_usage = include.get_bool().value_unsafe();
        }
    }
    if (m.error) return m.error;

    // A seed is only bits: a negative one keeps its two's-complement pattern rather than
    // failing a request OpenAI would take.
    if (const auto seed = m.get("seed")) {
        if (!is_integer(*seed)) return invalid("'seed' must be an integer", "seed");
        if (seed->type() == element_type::UINT64) req.seed = seed->get_uint64().value_unsafe();
        else req.seed = std::uint64_t(seed->get_int64().value_unsafe());
    }
    if (const auto user = m.string("user")) req.user = std::string(*user);
    m.number("temperature");
    m.number("top_p");
    return m.error;
}

}  // namespace

std::variant<CompletionRequest, ApiError> parse_completion_request(Endpoint endpoint,
                                                                   std::string_view body,
                                                                   const ApiLimits& limits)
{
    thread_local simdjson::dom::parser parser;
    element doc;
    if (const auto err = parser.parse(body.data(), body.size()).get(doc))
        return invalid(fmt::format("Invalid JSON in the request body: {}",
                                   simdjson::error_message(err)),
                       std::nullopt);
    simdjson::dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS)
        return invalid("The request body must be a JSON object", std::nullopt);
    CompletionRequest req;
    req.endpoint = endpoint;
    Members m(obj);
    if (auto err = read_request(m, req, limits)) return std::move(*err);
    return req;
}

std::uint32_t count_prompt_tokens(std::string_view text) noexcept
{
    return std::uint32_t(std::clamp<std::uint64_t>(count_words(text), 1, UINT32_MAX));
}

}  // namespace jsonlw::serve
