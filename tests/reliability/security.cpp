// Security: request-trace redaction covers every header of the list in any letter case; a
// per-key layout key with '/', "..", '.', NUL, nothing or too much of anything cannot leave the
// output directory once it goes through safe_path_component(); files are created with mode 0640
// (before the umask) unless WriterOptions::file_mode says otherwise.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <jsonlw/path_component.hpp>
#include <jsonlw/request_trace_writer.hpp>

#include <sys/stat.h>

#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace jsonlw_test;
using jsonlw::SubmitResult;
namespace fs = std::filesystem;

namespace {

// The names TensorRT-LLM's durable trace (tensorrt_llm/serve/request_trace.py) redacts: exact names, and parts a
// name may contain anywhere.
const std::vector<std::string> exact_names = {"authorization", "proxy-authorization", "cookie",
                                              "set-cookie"};
const std::vector<std::string> name_parts = {"api-key", "api_key", "apikey", "token", "secret",
                                             "password"};

// `s` in: lower case, upper case, Title-Case, and 8 seeded random mixes.
std::vector<std::string> case_variants(const std::string& s, std::mt19937& rng)
{
    auto map = [&](auto f) {
        std::string out = s;
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = f(out[i], i);
        return out;
    };
    std::vector<std::string> v;
    v.push_back(map([](char c, std::size_t) { return static_cast<char>(std::tolower(c)); }));
    v.push_back(map([](char c, std::size_t) { return static_cast<char>(std::toupper(c)); }));
    v.push_back(map([&](char c, std::size_t i) {
        const bool start = i == 0 || s[i - 1] == '-' || s[i - 1] == '_';
        return static_cast<char>(start ? std::toupper(c) : std::tolower(c));
    }));
    for (int k = 0; k < 8; ++k)
        v.push_back(map([&](char c, std::size_t) {
            return static_cast<char>(rng() % 2 ? std::toupper(c) : std::tolower(c));
        }));
    return v;
}

mode_t mode_of(const fs::path& p)
{
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

// Sets the umask for a scope.
class Umask {
public:
    explicit Umask(mode_t m) : old_(::umask(m)) {}
    ~Umask() { ::umask(old_); }
    Umask(const Umask&) = delete;
    Umask& operator=(const Umask&) = delete;

private:
    mode_t old_;
};

}  // namespace

TEST_CASE("every credential header of the list is redacted in any letter case, with its name kept; other headers are kept as they are",
          "[reliability][security][redaction]")
{
    std::mt19937 rng(7);
    std::vector<jsonlw::TraceHeader> headers;
    int secrets = 0;
    for (const auto& name : exact_names)
        for (auto& v : case_variants(name, rng)) headers.push_back({v, "s3cr3t-" + std::to_string(secrets++)});
    for (const auto& part : name_parts)
        for (const char* shape : {"%", "x-%", "%-id", "x-%-value", "X%Y"}) {
            std::string name = shape;
            name.replace(name.find('%'), 1, part);
            for (auto& v : case_variants(name, rng))
                headers.push_back({v, "s3cr3t-" + std::to_string(secrets++)});
        }
    const std::vector<jsonlw::TraceHeader> plain = {
        {"Content-Type", "application/json"}, {"X-Request-Id", "req-1"}, {"Accept", "*/*"},
        {"User-Agent", "curl/8"}, {"Authorization-Hint", "kept"}, {"Cookies-Enabled", "kept"}};

    for (const auto& h : headers) {
        INFO(h.name);
        CHECK(jsonlw::is_credential_header(h.name));
    }
    for (const auto& h : plain) {
        INFO(h.name);
        CHECK_FALSE(jsonlw::is_credential_header(h.name));
    }

    Harness h;
    jsonlw::RequestTraceWriter w(h.executor(), {.directory = h.dir.path(), .log = h.logs.sink()});
    h.start(w);
    jsonlw::RequestTrace r;
    r.trace_id = jsonlw::new_trace_id();
    r.session = "s";
    r.recorded_at = jsonlw::WallClock::now();
    r.route = "/v1/chat/completions";
    r.headers = headers;
    r.headers.insert(r.headers.end(), plain.begin(), plain.end());
    r.body = R"({"model":"m"})";
    const auto at = r.recorded_at;
    REQUIRE(w.record_request(std::move(r)) == SubmitResult::accepted);
    const auto report = close(w);
    REQUIRE(report.stats.written == 1);

    const std::string text = read_file(w.requests_file(at));
    CHECK(text.find("s3cr3t") == std::string::npos);
    simdjson::dom::element doc;
    REQUIRE(json_parser().parse(text).get(doc) == simdjson::SUCCESS);
    simdjson::dom::array arr;
    REQUIRE(doc["headers"].get_array().get(arr) == simdjson::SUCCESS);
    std::size_t i = 0;
    for (simdjson::dom::element pair : arr) {
        std::string_view name, value;
        REQUIRE(pair.at(0).get_string().get(name) == simdjson::SUCCESS);
        REQUIRE(pair.at(1).get_string().get(value) == simdjson::SUCCESS);
        if (i < headers.size()) {
            CHECK(name == headers[i].name);
            CHECK(value == "[redacted]");
        } else {
            CHECK(name == plain[i - headers.size()].name);
            CHECK(value == plain[i - headers.size()].value);
        }
        ++i;
    }
    CHECK(i == headers.size() + plain.size());
    std::printf("redaction: %zu credential header names (every listed name and part, 11 letter "
                "cases each) redacted, %zu others kept\n", headers.size(), plain.size());
}

TEST_CASE("safe_path_component turns any key into one component that stays in its directory, distinct keys into distinct components",
          "[reliability][security][path]")
{
    std::vector<std::string> keys = {"", ".", "..", "...", "/", "//", "a/b", "../etc/passwd",
                                     "..\\..\\x", "/etc/passwd", ".hidden", "a/../../b",
                                     std::string("\0", 1), std::string("a\0b", 3),
                                     std::string("..\0", 3), "%", "%2E", "%2F", "~", "a b",
                                     "\n", "\xff\xfe", "caf\xc3\xa9", "acme", "ACME",
                                     "tenant-1_x.y", std::string(255, 'a'), std::string(256, 'a'),
                                     std::string(10'000, '.'), std::string(10'000, '/'),
                                     std::string(4096, '%')};
    std::mt19937 rng(11);
    for (int k = 0; k < 200; ++k) {
        std::string s(rng() % 300, '\0');
        for (char& c : s) c = static_cast<char>(rng() % 256);
        keys.push_back(s);
    }
    const fs::path dir = "/srv/out";
    const std::set<std::string> distinct(keys.begin(), keys.end());
    std::set<std::string> seen;
    for (const auto& key : distinct) {
        const std::string c = jsonlw::safe_path_component(key);
        INFO("key of " << key.size() << " bytes -> " << c);
        CHECK(!c.empty());
        CHECK(c.size() <= jsonlw::max_path_component);
        CHECK(c.find('/') == std::string::npos);
        CHECK(c.find('\0') == std::string::npos);
        CHECK(c.front() != '.');
        CHECK(c != "." );
        CHECK(c != "..");
        for (unsigned char ch : c) CHECK((ch > 0x20 && ch < 0x7f));
        const fs::path joined = (dir / c).lexically_normal();
        CHECK(joined.parent_path() == dir);
        CHECK(jsonlw::safe_path_component(key) == c);  // stable
        CHECK(seen.insert(c).second);                  // distinct keys, distinct components
    }
    CHECK(jsonlw::safe_path_component("acme") == "acme");
    CHECK(jsonlw::safe_path_component("..") == "%2E.");
    CHECK(jsonlw::safe_path_component("a/b") == "a%2Fb");
}

TEST_CASE("a per-key layout whose keys go through safe_path_component creates files only inside its directory, whatever the keys",
          "[reliability][security][path]")
{
    Harness h;
    const fs::path out = h.dir / "out";
    RoutedWriter w(h.executor(), test_options(out, h.logs), [out](const Rec& r) {
        return out / jsonlw::safe_path_component(r.key) / "part.jsonl";
    });
    h.start(w);
    const std::vector<std::string> keys = {"", ".", "..", "../..", "/", "../../escape",
                                           std::string("x\0y", 3), std::string(5000, '.'),
                                           std::string(5000, 'k'), "/tmp/escape", "ok"};
    int id = 0;
    for (const auto& k : keys) {
        Rec r = rec(id++);
        r.key = k;
        REQUIRE(w.submit(r) == SubmitResult::accepted);
    }
    const auto report = close(w);
    INFO("stats: " << report.stats);
    CHECK(report.stats.written == keys.size());
    CHECK(invariant_holds(report.stats));
    // Everything under h.dir is under out, one folder per key, one line each.
    std::size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(h.dir.path())) {
        const fs::path rel = e.path().lexically_relative(out);
        INFO(e.path());
        CHECK((e.path() == out || (!rel.empty() && *rel.begin() != "..")));
        if (e.is_regular_file()) {
            ++files;
            CHECK(count_lines(e.path()) == 1);
            CHECK(e.path().parent_path().parent_path() == out);
        }
    }
    CHECK(files == keys.size());
}

TEST_CASE("files are created with mode 0640 by default, and with WriterOptions::file_mode when given; the umask still applies",
          "[reliability][security][mode]")
{
    struct Case {
        std::optional<mode_t> option;
        mode_t umask;
        mode_t want;
    };
    for (const Case& c : {Case{std::nullopt, 0, 0640}, Case{std::nullopt, 022, 0640},
                          Case{std::nullopt, 027, 0640}, Case{0600, 0, 0600},
                          Case{0666, 022, 0644}, Case{0666, 0, 0666}}) {
        INFO("file_mode " << (c.option ? std::to_string(*c.option) : "default") << ", umask 0"
                          << std::oct << c.umask << ", want 0" << c.want);
        Umask scoped(c.umask);
        Harness h;
        auto o = h.options();
        if (c.option) o.file_mode = *c.option;
        TestWriter w(h.executor(), o);
        h.start(w);
        REQUIRE(w.submit(rec(1)) == SubmitResult::accepted);
        close(w);
        CHECK(mode_of(w.file_path()) == (c.want & ~c.umask));
    }
    // The configured writers keep the default: a request trace's shard files.
    Umask scoped(0);
    Harness h;
    jsonlw::RequestTraceWriter w(h.executor(), {.directory = h.dir.path(), .log = h.logs.sink()});
    h.start(w);
    jsonlw::RequestTrace r;
    r.trace_id = jsonlw::new_trace_id();
    r.recorded_at = jsonlw::WallClock::now();
    const auto at = r.recorded_at;
    REQUIRE(w.record_request(std::move(r)) == SubmitResult::accepted);
    close(w);
    CHECK(mode_of(w.requests_file(at)) == 0640);
}
