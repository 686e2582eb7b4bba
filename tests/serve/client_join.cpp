// The client/server join of `jsonlw demo` (tools/serve/client_join.hpp) on hand-written
// perf-metrics and request-trace files: what is counted missing, duplicated, a span
// violation, and the percentiles of a known set. Also the event-stream reader the load
// client counts tokens with (client_events.hpp).
#include "client_join.hpp"

#include "client_events.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace jsonlw::serve;
using Clock = std::chrono::steady_clock;
using Outcome = ClientResult::Outcome;

namespace {

class ScratchDir {
public:
    ScratchDir()
    {
        static std::atomic<int> n{0};
        path_ = fs::temp_directory_path() / fmt::format("jsonlw-client-join-{}-{}", ::getpid(), n++);
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~ScratchDir()
    {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

void write_lines(const fs::path& file, const std::vector<std::string>& lines)
{
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::app);
    for (const auto& l : lines) out << l << '\n';
}

std::string tp(int i) { return fmt::format("00-{:032x}-{:016x}-01", 0xabc0 + i, 0x100 + i); }

// A client-side result at t0 + offsets (ms): sent, first token, done.
ClientResult client(int i, Clock::time_point t0, double sent_ms, double first_ms, double done_ms,
                    Outcome outcome = Outcome::completed, bool stream = true)
{
    const auto at = [&](double ms) {
        return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
    };
    ClientResult r;
    r.index = static_cast<std::uint64_t>(i);
    r.traceparent = tp(i);
    r.server_request_id = std::to_string(1000 + i);
    r.stream = stream;
    r.http_status = 200;
    r.outcome = outcome;
    r.sent = at(sent_ms);
    r.first_token = at(first_ms);
    r.done = at(done_ms);
    r.tokens = 8;
    r.stream_well_formed = stream;
    return r;
}

double secs(Clock::time_point t0, double ms)
{
    return std::chrono::duration<double>(t0.time_since_epoch()).count() + ms / 1e3;
}

// A perf line with server arrival / first token / last token at t0 + ms.
std::string perf_line(int i, Clock::time_point t0, double arrival_ms, double first_ms, double last_ms,
                      std::string_view status = "complete")
{
    return fmt::format(
        R"({{"request_id":{},"perf_metrics":{{"timing_metrics":{{"arrival_time":{:.9f},"first_token_time":{:.9f},)"
        R"("last_token_time":{:.9f},"server_arrival_time":{:.9f},"server_first_token_time":{:.9f}}}}},)"
        R"("status":"{}","traceparent":"{}"}})",
        1000 + i, secs(t0, arrival_ms), secs(t0, first_ms), secs(t0, last_ms), secs(t0, arrival_ms),
        secs(t0, first_ms), status, tp(i));
}

std::string trace_line(int i, std::string_view event)
{
    return fmt::format(R"({{"event":"{}","trace_id":"tr_{:032x}","headers":[["traceparent","{}"]],"traceparent":"{}"}})",
                       event, i, tp(i), tp(i));
}

}  // namespace

TEST_CASE("Every answered request on file once, inside the client's span, joins clean", "[serve][join]")
{
    ScratchDir dir;
    const auto t0 = Clock::now();
    std::vector<ClientResult> rs;
    std::vector<std::string> perf, req, resp;
    // Ten requests: client TTFT 1..10 ms, e2e 11..20 ms; the server's span 0.1 ms inside.
    for (int i = 0; i < 10; ++i) {
        rs.push_back(client(i, t0, 0, 1 + i, 11 + i));
        perf.push_back(perf_line(i, t0, 0.1, 0.9 + i, 10.9 + i));
        req.push_back(trace_line(i, "request"));
        resp.push_back(trace_line(i, "response"));
    }
    write_lines(dir.path() / "perf_metrics" / "perf_metrics-server-h-1-20260101T000000Z.jsonl", perf);
    write_lines(dir.path() / "request_trace" / "2026-01-01T00" / "requests-1.jsonl", req);
    write_lines(dir.path() / "request_trace" / "2026-01-01T00" / "responses-1.jsonl", resp);
    // Files still open are never read.
    write_lines(dir.path() / "request_trace" / "2026-01-01T00" / "requests-2.jsonl.open", req);

    const JoinReport r = join_with_server(dir.path(), rs);
    CHECK(r.sent == 10);
    CHECK(r.completed == 10);
    CHECK(r.joined == 10);
    CHECK(r.perf_lines == 10);
    CHECK(r.trace_request_lines == 10);
    CHECK(r.trace_response_lines == 10);
    CHECK(r.missing_in_perf + r.missing_in_trace_requests + r.missing_in_trace_responses == 0);
    CHECK(r.duplicated == 0);
    CHECK(r.span_violations == 0);
    CHECK(r.request_id_mismatches == 0);
    CHECK(r.errors.empty());
    CHECK(join_ok(r));

    // Nearest rank over 1..10 ms: p50 the 5th, p90 the 9th, p99 the 10th.
    CHECK(r.client_ttft.count == 10);
    CHECK(r.client_ttft.p50_ms == Approx(5).margin(1e-6));
    CHECK(r.client_ttft.p90_ms == Approx(9).margin(1e-6));
    CHECK(r.client_ttft.p99_ms == Approx(10).margin(1e-6));
    CHECK(r.client_ttft.max_ms == Approx(10).margin(1e-6));
    CHECK(r.client_e2e.p50_ms == Approx(15).margin(1e-6));
    CHECK(r.client_e2e.max_ms == Approx(20).margin(1e-6));
    CHECK(r.server_ttft.p50_ms == Approx(4.8).margin(1e-4));
    CHECK(r.server_e2e.p90_ms == Approx(18.8).margin(1e-4));
    CHECK(r.ttft_diff.count == 10);
    CHECK(r.ttft_diff.p50_ms == Approx(0.2).margin(1e-4));
    CHECK(r.ttft_diff.max_ms == Approx(0.2).margin(1e-4));
    CHECK(r.e2e_diff.p99_ms == Approx(0.2).margin(1e-4));
}

TEST_CASE("Missing, duplicated, unknown and out-of-span records are each counted", "[serve][join]")
{
    ScratchDir dir;
    const auto t0 = Clock::now();
    std::vector<ClientResult> rs;
    for (int i = 0; i < 8; ++i) rs.push_back(client(i, t0, 0, 5, 10));
    // 5: the client disconnected after its first token; the server aborted it.
    rs[5] = client(5, t0, 0, 5, 6, Outcome::disconnected_by_client);
    // 6: refused with a 400: trace lines are looked for, a perf line is not.
    rs[6].outcome = Outcome::failed;
    rs[6].http_status = 400;
    // 7: never answered (connect refused): looked for nowhere.
    rs[7].outcome = Outcome::failed;
    rs[7].http_status = 0;

    std::vector<std::string> perf = {
        perf_line(0, t0, 1, 4, 9),
        perf_line(0, t0, 1, 4, 9),                // 0 twice: one duplicate
        perf_line(0, t0, 1, 4, 9),                // three copies still count once
        perf_line(2, t0, -1, 4, 9),               // arrived before the client sent it
        perf_line(3, t0, 1, 6, 9),                // first token after the client saw it
        perf_line(4, t0, 1, 4, 11),               // last token after the client's end
        perf_line(5, t0, 1, 4, 9, "aborted"),
        perf_line(42, t0, 1, 4, 9),               // never sent by this client
        R"({"request_id":9,"perf_metrics":{}})",  // no traceparent
        "not json",
    };
    // 1 missing in perf.
    std::vector<std::string> req, resp;
    for (int i = 0; i < 7; ++i) {
        if (i != 3) req.push_back(trace_line(i, "request"));     // 3 missing in requests
        if (i != 4 && i != 6) resp.push_back(trace_line(i, "response"));  // 4, 6 missing
    }
    resp.push_back(trace_line(2, "response"));  // 2 twice in responses
    write_lines(dir.path() / "perf_metrics" / "p.jsonl", perf);
    write_lines(dir.path() / "request_trace" / "h" / "requests-1.jsonl", req);
    write_lines(dir.path() / "request_trace" / "h" / "responses-1.jsonl", resp);

    const JoinReport r = join_with_server(dir.path(), rs);
    CHECK(r.sent == 8);
    CHECK(r.completed == 5);
    CHECK(r.disconnected == 1);
    CHECK(r.failed == 2);
    CHECK(r.unanswered == 1);
    CHECK(r.perf_lines == 9);
    CHECK(r.unreadable_lines == 1);
    CHECK(r.without_traceparent == 1);
    CHECK(r.unknown_traceparent == 1);
    CHECK(r.missing_in_perf == 1);
    CHECK(r.missing_in_trace_requests == 1);
    CHECK(r.missing_in_trace_responses == 2);
    CHECK(r.duplicated == 2);
    // Joined: 0, 2, 5 (every record looked for is there); 1, 3, 4, 6 miss one.
    CHECK(r.joined == 3);
    // Only joined requests are span-checked: 2 (arrival before sent). 3 and 4 are not joined.
    CHECK(r.span_violations == 1);
    CHECK(r.aborted_in_perf == 1);
    CHECK(r.disconnected_but_complete == 0);
    CHECK_FALSE(join_ok(r));
    CHECK_FALSE(r.examples.empty());

    std::FILE* sink = std::tmpfile();
    REQUIRE(sink != nullptr);
    print_join(sink, r);
    CHECK(std::ftell(sink) > 0);
    std::fclose(sink);
}

TEST_CASE("A server span that overruns the client's is a span violation", "[serve][join]")
{
    ScratchDir dir;
    const auto t0 = Clock::now();
    std::vector<ClientResult> rs;
    std::vector<std::string> perf, req, resp;
    for (int i = 0; i < 4; ++i) {
        rs.push_back(client(i, t0, 0, 5, 10));
        req.push_back(trace_line(i, "request"));
        resp.push_back(trace_line(i, "response"));
    }
    perf.push_back(perf_line(0, t0, 1, 4, 9));
    perf.push_back(perf_line(1, t0, 1, 6, 9));   // first token after the client's
    perf.push_back(perf_line(2, t0, 1, 4, 11));  // last token after the client's end
    perf.push_back(perf_line(3, t0, 1, 6, 11));  // both: one violation
    rs[0].server_request_id = "77";              // x-request-id disagrees with request_id
    write_lines(dir.path() / "perf_metrics" / "p.jsonl", perf);
    write_lines(dir.path() / "request_trace" / "h" / "requests-1.jsonl", req);
    write_lines(dir.path() / "request_trace" / "h" / "responses-1.jsonl", resp);

    const JoinReport r = join_with_server(dir.path(), rs);
    CHECK(r.joined == 4);
    CHECK(r.span_violations == 3);
    CHECK(r.request_id_mismatches == 1);
    CHECK(r.ttft_diff.count == 4);
    // Client TTFT 5 ms, server 3 or 5 ms: sorted 0, 0, 2, 2.
    CHECK(r.ttft_diff.p50_ms == Approx(0).margin(1e-4));
    CHECK(r.ttft_diff.max_ms == Approx(2).margin(1e-4));
    CHECK_FALSE(join_ok(r));
}

TEST_CASE("Without the server's directories every answered request is missing", "[serve][join]")
{
    ScratchDir dir;
    const auto t0 = Clock::now();
    std::vector<ClientResult> rs = {client(0, t0, 0, 1, 2), client(1, t0, 0, 1, 2)};
    const JoinReport r = join_with_server(dir.path() / "nothing-here", rs);
    CHECK(r.missing_in_perf == 2);
    CHECK(r.missing_in_trace_requests == 2);
    CHECK(r.missing_in_trace_responses == 2);
    CHECK(r.joined == 0);
    CHECK_FALSE(join_ok(r));
}

TEST_CASE("Percentiles are nearest-rank and empty sets are all zero", "[serve][join]")
{
    std::vector<double> none;
    CHECK(summarize_seconds(none).count == 0);
    CHECK(summarize_seconds(none).max_ms == 0);
    std::vector<double> hundred;
    for (int i = 100; i >= 1; --i) hundred.push_back(i / 1e3);
    const LatencySummary s = summarize_seconds(hundred);
    CHECK(s.count == 100);
    CHECK(s.p50_ms == Approx(50));
    CHECK(s.p90_ms == Approx(90));
    CHECK(s.p99_ms == Approx(99));
    CHECK(s.max_ms == Approx(100));
    std::vector<double> one = {0.007};
    CHECK(summarize_seconds(one).p50_ms == Approx(7));
}

TEST_CASE("An event stream split anywhere counts its tokens once and ends with [DONE]", "[serve][events]")
{
    const std::string stream =
        "data: {\"id\":\"chatcmpl-7\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
        ": a comment line\n\n"
        "data: {\"id\":\"chatcmpl-7\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"},"
        "\"logprobs\":{\"content\":[{\"token\":\" a\",\"logprob\":-0.5,\"top_logprobs\":[]},"
        "{\"token\":\" b\",\"logprob\":-0.1,\"top_logprobs\":[]}]}}]}\n\n"
        "data: {\"id\":\"chatcmpl-7\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" c\"}}]}\n\n"
        "data: {\"id\":\"chatcmpl-7\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
        "data: {\"id\":\"chatcmpl-7\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\n"
        "data: [DONE]\n\n";
    ResponseReader reader;
    for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}, stream.size()}) {
        EventStream s;
        s.reset(true);
        ClientResult r;
        for (std::size_t at = 0; at < stream.size(); at += piece)
            reader.feed(s, std::string_view(stream).substr(at, piece), r);
        CHECK(r.tokens == 3);  // two logprob entries, then one text piece
        CHECK(r.response_id == "chatcmpl-7");
        CHECK(r.first_token != Clock::time_point{});
        CHECK(ResponseReader::finish(s));
    }

    EventStream bad;
    bad.reset(false);
    ClientResult r;
    reader.feed(bad, "data: {\"choices\":[{\"text\":\" x\"}]}\n\ndata: [DONE]\n\ndata: {}\n\n", r);
    CHECK(r.tokens == 1);
    CHECK_FALSE(ResponseReader::finish(bad));  // data after [DONE]
    EventStream torn;
    torn.reset(false);
    reader.feed(torn, "data: {\"choices\":[{\"text\":\" x\"}]}\n\ndata: {\"cho", r);
    CHECK_FALSE(ResponseReader::finish(torn));
}

TEST_CASE("A whole completion body gives its id and token count", "[serve][events]")
{
    ResponseReader reader;
    ClientResult r;
    CHECK(reader.read_body(R"({"id":"cmpl-3","choices":[{"text":" a b","logprobs":{"tokens":[" a"," b"],)"
                           R"("token_logprobs":[-1,-2],"top_logprobs":[{},{}],"text_offset":[0,2]}}],)"
                           R"("usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})",
                           false, r));
    CHECK(r.response_id == "cmpl-3");
    CHECK(r.tokens == 2);
    ClientResult c;
    CHECK(reader.read_body(R"({"id":"chatcmpl-4","choices":[{"message":{"role":"assistant","content":" a b c"}}],)"
                           R"("usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}})",
                           true, c));
    CHECK(c.tokens == 3);  // no logprobs: usage says
    ClientResult e;
    CHECK_FALSE(reader.read_body("oops", false, e));
    CHECK(reader.error_message(R"({"error":{"message":"max_tokens too big","type":"invalid_request_error"}})") ==
          "max_tokens too big");
}
