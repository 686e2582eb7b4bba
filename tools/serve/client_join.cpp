#include "client_join.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace jsonlw::serve {

namespace {

namespace fs = std::filesystem;
using Outcome = ClientResult::Outcome;
using simdjson::dom::element;
using simdjson::dom::object;

enum class Kind { perf, trace_request, trace_response };

// What the server's files hold about one request (the first line of each kind).
struct Found {
    std::uint32_t perf = 0, requests = 0, responses = 0;  // lines seen per kind
    bool aborted = false;
    std::optional<double> arrival, first_token, last_token;  // steady-clock seconds
    std::string request_id;  // the perf line's, as text; empty when it has none
};

double seconds_of(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::optional<double> time_field(object timing, std::string_view key)
{
    double v = 0;
    if (timing[key].get(v) != simdjson::SUCCESS || !(v > 0)) return std::nullopt;  // null, absent
    return v;
}

// One join_with_server() call: reads the server's files into per-request findings, then
// compares each request with them. Owns its parser; lives on the caller's thread.
class Joiner {
public:
    Joiner(std::span<const ClientResult> results, JoinReport& report)
        : results_(results), found_(results.size()), report_(report)
    {
        by_traceparent_.reserve(results.size());
        for (std::size_t i = 0; i < results.size(); ++i)
            by_traceparent_.emplace(results[i].traceparent, i);
    }

    void read_dir(const fs::path& dir, bool perf_dir);
    void join();

private:
    void read_file(const fs::path& path, bool perf_dir);
    void on_line(element root, bool perf_dir);
    void example(const ClientResult& r, std::string_view what);

    std::span<const ClientResult> results_;
    std::vector<Found> found_;
    JoinReport& report_;
    std::unordered_map<std::string_view, std::size_t> by_traceparent_;
    simdjson::dom::parser parser_;
};

void Joiner::read_dir(const fs::path& dir, bool perf_dir)
{
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;  // a writer that was off: its records are missing
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
        std::error_code sec;
        if (it->path().extension() == ".jsonl" && it->is_regular_file(sec)) files.push_back(it->path());
    }
    if (ec) report_.errors.push_back(fmt::format("{}: {}", dir.string(), ec.message()));
    std::sort(files.begin(), files.end());
    for (const auto& f : files) read_file(f, perf_dir);
}

void Joiner::read_file(const fs::path& path, bool perf_dir)
{
    simdjson::padded_string text;
    if (const auto err = simdjson::padded_string::load(path.string()).get(text)) {
        report_.errors.push_back(fmt::format("{}: {}", path.string(), simdjson::error_message(err)));
        return;
    }
    // Every line is followed by the rest of the file and the string's padding, so each can be
    // parsed in place.
    const std::string_view all(text.data(), text.size());
    for (std::size_t at = 0; at < all.size();) {
        std::size_t nl = all.find('\n', at);
        if (nl == std::string_view::npos) nl = all.size();
        const std::string_view line = all.substr(at, nl - at);
        at = nl + 1;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        element root;
        if (parser_.parse(line.data(), line.size(), false).get(root) != simdjson::SUCCESS) {
            ++report_.unreadable_lines;
            continue;
        }
        on_line(root, perf_dir);
    }
}

void Joiner::on_line(element root, bool perf_dir)
{
    object obj, perf;
    if (root.get(obj) != simdjson::SUCCESS) {
        ++report_.unreadable_lines;
        return;
    }
    Kind kind = Kind::perf;
    if (perf_dir) {
        if (obj["perf_metrics"].get(perf) != simdjson::SUCCESS) {
            ++report_.unreadable_lines;  // a disaggregated server's line, or not perf metrics
            return;
        }
        ++report_.perf_lines;
    } else {
        std::string_view event;
        if (obj["event"].get(event) == simdjson::SUCCESS && event == "request") {
            kind = Kind::trace_request;
            ++report_.trace_request_lines;
        } else if (event == "response") {
            kind = Kind::trace_response;
            ++report_.trace_response_lines;
        } else {
            ++report_.unreadable_lines;
            return;
        }
    }
    std::string_view tp;
    if (obj["traceparent"].get(tp) != simdjson::SUCCESS) {
        ++report_.without_traceparent;
        return;
    }
    const auto hit = by_traceparent_.find(tp);
    if (hit == by_traceparent_.end()) {
        ++report_.unknown_traceparent;
        return;
    }
    Found& f = found_[hit->second];
    std::uint32_t& seen = kind == Kind::perf            ? f.perf
                          : kind == Kind::trace_request ? f.requests
                                                        : f.responses;
    if (++seen == 2) {
        ++report_.duplicated;
        example(results_[hit->second], kind == Kind::perf            ? "more than one perf line"
                                       : kind == Kind::trace_request ? "more than one trace request line"
                                                                     : "more than one trace response line");
    }
    if (seen > 1 || kind != Kind::perf) return;

    std::string_view status;
    f.aborted = obj["status"].get(status) == simdjson::SUCCESS && status == "aborted";
    std::uint64_t uid = 0;
    std::int64_t sid = 0;
    std::string_view text_id;
    if (obj["request_id"].get(uid) == simdjson::SUCCESS) f.request_id = std::to_string(uid);
    else if (obj["request_id"].get(sid) == simdjson::SUCCESS) f.request_id = std::to_string(sid);
    else if (obj["request_id"].get(text_id) == simdjson::SUCCESS) f.request_id = text_id;
    object timing;
    if (perf["timing_metrics"].get(timing) == simdjson::SUCCESS) {
        f.arrival = time_field(timing, "server_arrival_time");
        f.first_token = time_field(timing, "server_first_token_time");
        f.last_token = time_field(timing, "last_token_time");
    }
}

void Joiner::example(const ClientResult& r, std::string_view what)
{
    if (report_.examples.size() < JoinReport::max_examples)
        report_.examples.push_back(fmt::format("request {} ({}): {}", r.index, r.traceparent, what));
}

void Joiner::join()
{
    std::vector<double> c_ttft, s_ttft, d_ttft, c_e2e, s_e2e, d_e2e;
    for (std::size_t i = 0; i < results_.size(); ++i) {
        const ClientResult& r = results_[i];
        const Found& f = found_[i];
        ++report_.sent;
        const bool completed = r.outcome == Outcome::completed;
        switch (r.outcome) {
        case Outcome::completed: ++report_.completed; break;
        case Outcome::disconnected_by_client: ++report_.disconnected; break;
        case Outcome::failed: ++report_.failed; break;
        }
        if (completed && r.stream && !r.stream_well_formed) {
            ++report_.malformed_streams;
            example(r, "stream not well formed");
        }
        const double sent = seconds_of(r.sent);
        if (completed) {
            c_e2e.push_back(seconds_of(r.done) - sent);
            if (r.stream && r.tokens > 0) c_ttft.push_back(seconds_of(r.first_token) - sent);
        }
        if (r.http_status == 0) {  // never answered: the server may not have seen it
            ++report_.unanswered;
            continue;
        }
        const bool need_perf = r.http_status == 200;
        if (need_perf && f.perf == 0) ++report_.missing_in_perf, example(r, "missing in perf metrics");
        if (f.requests == 0) ++report_.missing_in_trace_requests, example(r, "missing in trace requests");
        if (f.responses == 0) ++report_.missing_in_trace_responses, example(r, "missing in trace responses");
        if ((need_perf && f.perf == 0) || f.requests == 0 || f.responses == 0) continue;
        ++report_.joined;
        if (f.perf == 0) continue;

        if (f.aborted) ++report_.aborted_in_perf;
        if (r.outcome == Outcome::disconnected_by_client && !f.aborted) ++report_.disconnected_but_complete;
        if (completed && f.aborted) ++report_.completed_but_aborted;
        if (!r.server_request_id.empty() && !f.request_id.empty() && r.server_request_id != f.request_id) {
            ++report_.request_id_mismatches;
            example(r, fmt::format("x-request-id {} but perf request_id {}", r.server_request_id, f.request_id));
        }

        bool nulls = !f.arrival;
        std::string violation;
        if (f.arrival && *f.arrival < sent)
            violation = fmt::format("server arrival {:.3f} ms before sent", (sent - *f.arrival) * 1e3);
        if (completed) {
            nulls = nulls || !f.first_token || !f.last_token;
            const bool ttft_known = r.first_token != std::chrono::steady_clock::time_point{};
            if (f.first_token && ttft_known && *f.first_token > seconds_of(r.first_token) && violation.empty())
                violation = fmt::format("server first token {:.3f} ms after the client's",
                                        (*f.first_token - seconds_of(r.first_token)) * 1e3);
            if (f.last_token && *f.last_token > seconds_of(r.done) && violation.empty())
                violation = fmt::format("server last token {:.3f} ms after the client's end",
                                        (*f.last_token - seconds_of(r.done)) * 1e3);
        }
        if (nulls) ++report_.null_times;
        if (!violation.empty()) ++report_.span_violations, example(r, violation);

        if (!completed || !f.arrival) continue;
        if (r.stream && r.tokens > 0 && f.first_token) {
            s_ttft.push_back(*f.first_token - *f.arrival);
            d_ttft.push_back((seconds_of(r.first_token) - sent) - s_ttft.back());
        }
        if (f.last_token) {
            s_e2e.push_back(*f.last_token - *f.arrival);
            d_e2e.push_back((seconds_of(r.done) - sent) - s_e2e.back());
        }
    }
    report_.client_ttft = summarize_seconds(c_ttft);
    report_.server_ttft = summarize_seconds(s_ttft);
    report_.ttft_diff = summarize_seconds(d_ttft);
    report_.client_e2e = summarize_seconds(c_e2e);
    report_.server_e2e = summarize_seconds(s_e2e);
    report_.e2e_diff = summarize_seconds(d_e2e);
}

}  // namespace

LatencySummary summarize_seconds(std::vector<double>& seconds)
{
    LatencySummary s;
    s.count = seconds.size();
    if (seconds.empty()) return s;
    std::sort(seconds.begin(), seconds.end());
    const auto rank = [&](std::uint64_t p) {  // nearest rank: ceil(p/100 * n), 1-based
        const std::uint64_t k = (p * s.count + 99) / 100;
        return seconds[std::max<std::uint64_t>(k, 1) - 1] * 1e3;
    };
    s.p50_ms = rank(50);
    s.p90_ms = rank(90);
    s.p99_ms = rank(99);
    s.max_ms = seconds.back() * 1e3;
    return s;
}

JoinReport join_with_server(const std::filesystem::path& out, std::span<const ClientResult> results)
{
    JoinReport report;
    try {
        Joiner j(results, report);
        j.read_dir(out / "perf_metrics", true);
        j.read_dir(out / "request_trace", false);
        j.join();
    } catch (const std::exception& e) {  // allocation: say so rather than end the demo
        report.errors.push_back(std::string("join: ") + e.what());
    }
    return report;
}

bool join_ok(const JoinReport& r) noexcept
{
    return r.missing_in_perf == 0 && r.missing_in_trace_requests == 0 &&
           r.missing_in_trace_responses == 0 && r.duplicated == 0 && r.span_violations == 0 &&
           r.errors.empty();
}

void print_join(std::FILE* f, const JoinReport& r)
{
    fmt::print(f, "Client vs server, joined on traceparent: {}\n", join_ok(r) ? "join OK" : "join NOT OK");
    fmt::print(f, "    client: sent {}, completed {}, disconnected {}, failed {} ({} without a response); "
                  "malformed streams {}\n",
               r.sent, r.completed, r.disconnected, r.failed, r.unanswered, r.malformed_streams);
    fmt::print(f, "    server lines: perf {} (aborted {}), trace requests {}, trace responses {}; "
                  "unreadable {}, without traceparent {}, not sent by the client {}\n",
               r.perf_lines, r.aborted_in_perf, r.trace_request_lines, r.trace_response_lines,
               r.unreadable_lines, r.without_traceparent, r.unknown_traceparent);
    fmt::print(f, "    joined {}; missing in perf {}, trace requests {}, trace responses {}; duplicated {}; "
                  "span violations {} (null times {}); x-request-id mismatches {}\n",
               r.joined, r.missing_in_perf, r.missing_in_trace_requests, r.missing_in_trace_responses,
               r.duplicated, r.span_violations, r.null_times, r.request_id_mismatches);
    fmt::print(f, "    ends disagree: client disconnected / server complete {}, client complete / server aborted {}\n",
               r.disconnected_but_complete, r.completed_but_aborted);
    fmt::print(f, "    {:<20} {:>7} {:>9} {:>9} {:>9} {:>9}\n", "latency (ms)", "n", "p50", "p90", "p99", "max");
    const auto row = [&](std::string_view name, const LatencySummary& s) {
        fmt::print(f, "    {:<20} {:>7} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}\n", name, s.count, s.p50_ms,
                   s.p90_ms, s.p99_ms, s.max_ms);
    };
    row("TTFT client", r.client_ttft);
    row("TTFT server", r.server_ttft);
    row("TTFT client-server", r.ttft_diff);
    row("e2e client", r.client_e2e);
    row("e2e server", r.server_e2e);
    row("e2e client-server", r.e2e_diff);
    for (const auto& e : r.errors) fmt::print(f, "    error: {}\n", e);
    for (const auto& e : r.examples) fmt::print(f, "    e.g. {}\n", e);
}

}  // namespace jsonlw::serve
