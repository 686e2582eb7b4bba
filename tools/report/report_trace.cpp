#include <jsonlw/report/detail/report_trace.hpp>

#include <jsonlw/request_trace_verify.hpp>

#include <algorithm>
#include <array>
#include <functional>

namespace jsonlw::tools {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::uint64_t hash_id(object rec, bool& ok) noexcept
{
    std::string_view id;
    ok = rec.at_key("trace_id").get(id) == simdjson::SUCCESS;
    return ok ? std::hash<std::string_view>{}(id) : 0;
}

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool contains_nocase(std::string_view hay, std::string_view needle) noexcept
{
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                       [](char a, char b) { return lower(a) == b; }) != hay.end();
}

bool equals_nocase(std::string_view a, std::string_view b) noexcept
{
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == y; });
}

}  // namespace

bool is_credential_header(std::string_view name) noexcept
{
    for (const std::string_view exact : {"authorization", "proxy-authorization", "cookie", "set-cookie"})
        if (equals_nocase(name, exact)) return true;
    for (const std::string_view part : {"api-key", "api_key", "apikey", "token", "secret", "password"})
        if (contains_nocase(name, part)) return true;
    return false;
}

void TraceAccumulator::count(CountMap& m, std::string_view key, std::uint64_t n)
{
    if (auto it = m.find(key); it != m.end()) it->second += n;
    else if (m.size() < 32) m.emplace(std::string(key), n);
    else other_values += n;
}

void TraceAccumulator::add_common(object rec, std::vector<std::uint64_t>& ids, CountMap& status)
{
    bool ok = false;
    const std::uint64_t h = hash_id(rec, ok);
    if (ok) ids.push_back(h);
    std::string_view s;
    if (rec.at_key("status").get(s) == simdjson::SUCCESS) count(status, s);
    else ++other_values;
}

void TraceAccumulator::add_request(object rec)
{
    ++requests;
    add_common(rec, request_ids_, request_status);
    std::string_view s;
    if (rec.at_key("route").get(s) == simdjson::SUCCESS) count(routes, s);
    element e;
    if (rec.at_key("body_parse_error").get(e) == simdjson::SUCCESS) ++body_parse_errors;
    if (rec.at_key("validation_errors").get(e) == simdjson::SUCCESS) ++validation_errors;
    double t = 0;
    if (rec.at_key("server_arrival_time").get(t) != simdjson::SUCCESS) ++arrival_unknown;
    array hs;
    if (rec.at_key("headers").get(hs) != simdjson::SUCCESS) return;
    bool any = false;
    for (const element pair : hs) {
        array nv;
        std::string_view name, value;
        if (pair.get(nv) != simdjson::SUCCESS || nv.size() != 2 ||
            nv.at(0).get(name) != simdjson::SUCCESS || nv.at(1).get(value) != simdjson::SUCCESS) {
            ++other_values;
            continue;
        }
        ++headers;
        if (value == "[redacted]") {
            ++redacted;
            any = true;
            // Names are counted lower-cased (up to 64 characters, no allocation for known ones).
            std::array<char, 64> buf{};
            const std::size_t n = std::min(name.size(), buf.size());
            std::transform(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(n), buf.begin(), lower);
            count(redacted_by_name, std::string_view(buf.data(), n));
        } else if (is_credential_header(name)) {
            ++unredacted_credentials;
        }
    }
    if (any) ++requests_with_redaction;
}

void TraceAccumulator::add_response(object rec)
{
    ++responses;
    add_common(rec, response_ids_, response_status);
    std::string_view s;
    std::int64_t code = 0;
    if (rec.at_key("http_status").get(code) == simdjson::SUCCESS) {
        char buf[24];
        const auto n = std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(code));
        count(http_status, std::string_view(buf, static_cast<std::size_t>(n)));
    }
    object o;
    if (rec.at_key("response").get(o) == simdjson::SUCCESS && o.at_key("kind").get(s) == simdjson::SUCCESS)
        count(response_kinds, s);
    if (rec.at_key("termination").get(o) == simdjson::SUCCESS && o.at_key("cause").get(s) == simdjson::SUCCESS)
        count(termination_causes, s);
}

void TraceAccumulator::merge(TraceAccumulator&& o)
{
    requests += o.requests;
    responses += o.responses;
    for (auto [mine, theirs] : {std::pair{&request_status, &o.request_status},
                                std::pair{&response_status, &o.response_status},
                                std::pair{&routes, &o.routes},
                                std::pair{&response_kinds, &o.response_kinds},
                                std::pair{&http_status, &o.http_status},
                                std::pair{&termination_causes, &o.termination_causes},
                                std::pair{&redacted_by_name, &o.redacted_by_name}})
        for (const auto& [k, v] : *theirs) count(*mine, k, v);
    other_values += o.other_values;
    body_parse_errors += o.body_parse_errors;
    validation_errors += o.validation_errors;
    arrival_unknown += o.arrival_unknown;
    headers += o.headers;
    redacted += o.redacted;
    requests_with_redaction += o.requests_with_redaction;
    unredacted_credentials += o.unredacted_credentials;
    request_ids_.insert(request_ids_.end(), o.request_ids_.begin(), o.request_ids_.end());
    response_ids_.insert(response_ids_.end(), o.response_ids_.begin(), o.response_ids_.end());
}

void TraceAccumulator::finish()
{
    std::sort(request_ids_.begin(), request_ids_.end());
    std::sort(response_ids_.begin(), response_ids_.end());
    const auto unique_end = std::unique(request_ids_.begin(), request_ids_.end());
    duplicate_request_ids = static_cast<std::uint64_t>(request_ids_.end() - unique_end);
    request_ids_.erase(unique_end, request_ids_.end());
    response_ids_.erase(std::unique(response_ids_.begin(), response_ids_.end()), response_ids_.end());
    std::uint64_t both = 0;
    for (auto a = request_ids_.begin(), b = response_ids_.begin();
         a != request_ids_.end() && b != response_ids_.end();) {
        if (*a < *b) ++a;
        else if (*b < *a) ++b;
        else ++both, ++a, ++b;
    }
    requests_without_response = request_ids_.size() - both;
    responses_without_request = response_ids_.size() - both;
}

SidecarCheck check_sidecar(const std::filesystem::path& sidecar, const std::filesystem::path& root)
{
    SidecarCheck c;
    c.name = sidecar.lexically_relative(root).generic_string();
    try {
        simdjson::dom::parser parser;
        simdjson::padded_string text;
        if (const auto err = simdjson::padded_string::load(sidecar.string()).get(text)) {
            c.error = simdjson::error_message(err);
            return c;
        }
        object doc, counts, dropped;
        if (parser.parse(text).get(doc) != simdjson::SUCCESS) {
            c.error = "not JSON";
            return c;
        }
        std::uint64_t v = 0;
        if (doc.at_key("counts").get(counts) == simdjson::SUCCESS) {
            if (counts.at_key("submitted").get(v) == simdjson::SUCCESS) c.submitted = v;
            if (counts.at_key("persisted").get(v) == simdjson::SUCCESS) c.persisted = v;
            if (counts.at_key("unknown").get(v) == simdjson::SUCCESS) c.unknown = v;
            if (counts.at_key("pending").get(v) == simdjson::SUCCESS) c.pending = v;
            if (counts.at_key("dropped").get(dropped) == simdjson::SUCCESS)
                for (const auto field : dropped)
                    if (field.value.get(v) == simdjson::SUCCESS) c.dropped += v;
        }
        bool closed = false;
        if (doc.at_key("closed").get(closed) == simdjson::SUCCESS) c.closed = closed;
        const VerifyReport r = verify_request_trace_shards(sidecar);
        c.read = r.error.empty();
        c.consistent = r.consistent;
        c.counts_consistent = r.counts_consistent;
        c.shards = r.shards.size();
        c.records = r.records;
        c.bad = r.bad;
        c.error = r.error;
        for (const auto& s : r.shards)
            if (c.error.empty() && !s.error.empty()) c.error = s.file + ": " + s.error;
    } catch (const std::exception& e) {
        c.error = e.what();
    }
    return c;
}

}  // namespace jsonlw::tools
