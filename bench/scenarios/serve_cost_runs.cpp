// The serve-cost runs: one fresh `jsonlw serve` (ServeApp on a loopback port, its loop on a
// second thread) per run, writing under its own directory, driven by the built-in client on
// the calling thread or by h2load as a child process; the client's figures, the loop's CPU
// and the writers' accounting come back (runs.hpp).
#include "report.hpp"
#include "runs.hpp"

#include "../demo/thread_stats.hpp"
#include "load_client.hpp"
#include "serve_app.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <unistd.h>

namespace bench {
namespace {

namespace fs = std::filesystem;
namespace sv = jsonlw::serve;

sv::ServeOptions serve_options(const ServeRunSpec& s)
{
    sv::ServeOptions so;
    so.port = 0;
    so.writers = s.writers;
    so.model.vocab = s.model.vocab;
    so.model.concurrency = s.model.concurrency;
    so.model.step_us = s.model.step_us;
    so.model.min_tokens = s.model.min_tokens;
    so.model.max_tokens = s.model.max_tokens;
    so.model.top_k = s.model.top_k;
    so.model.first_gen_every = s.model.first_gen_every;
    so.model.backend = jsonlw::snapshot::Backend::cpu;
    so.model.out = s.dir / "out";
    return so;
}

// What the server ended with: the loop's CPU per request and every writer's accounting.
void take_outcome(const sv::ServeOutcome& out, bool writers, ServeRunResult& r)
{
    r.server_requests = out.counters.requests;
    r.server_tokens = out.counters.tokens_streamed;
    r.loop_cpu_seconds = out.loop_cpu_seconds;
    if (out.counters.requests)
        r.loop_us_per_request = out.loop_cpu_seconds * 1e6 / double(out.counters.requests);
    if (!writers) return;
    for (const jsonlw::CloseReport& c : out.writers_outcome.reports) {
        r.records_written += c.stats.written;
        r.records_dropped += c.stats.dropped.total() + c.stats.unknown;
    }
    if (r.records_dropped && r.problem.empty())
        r.problem = fmt::format("the writers dropped {} records", r.records_dropped);
}

// Each thread's CPU since `before` (threads that were not there count from zero), by role.
void take_threads(const std::vector<jsonlw::tools::ThreadStat>& before, int client_tid,
                  ServeRunResult& r)
{
    std::map<int, std::pair<double, double>> base;
    for (const auto& t : before) base[t.tid] = {t.cpu_s, t.runqueue_s};
    for (const auto& t : jsonlw::tools::read_thread_stats()) {
        const auto b = base.count(t.tid) ? base[t.tid] : std::pair<double, double>{0, 0};
        const double cpu = t.cpu_s - b.first;
        r.runqueue_s += t.runqueue_s - b.second;
        if (t.tid == client_tid) r.client_cpu_s += cpu;
        else if (t.name == "serve-loop") r.loop_thread_cpu_s += cpu;
        else if (t.name == "serve-engine" || t.name.rfind("jsonlw-rows", 0) == 0) r.engine_cpu_s += cpu;
        else if (t.name.rfind("jsonlw:", 0) == 0) r.writers_cpu_s += cpu;
        else r.other_cpu_s += cpu;
    }
}

// The server on its own thread for as long as `client` runs on this one.
template <class Client>
ServeRunResult with_server(const ServeRunSpec& s, Client&& client)
{
    ServeRunResult r;
    std::error_code ec;
    fs::remove_all(s.dir / "out", ec);
    fs::create_directories(s.dir / "out", ec);
    try {
        const sv::ServeOptions so = serve_options(s);
        sv::ServeApp app(so);
        const std::uint16_t port = app.listen();
        sv::ServeOutcome outcome;
        const auto before = jsonlw::tools::read_thread_stats();
        std::thread server([&] { outcome = app.run(false); });
        client(port, r);
        take_threads(before, int(::gettid()), r);  // before the stop: its threads still there
        app.request_stop();
        server.join();
        take_outcome(outcome, s.writers, r);
    } catch (const std::exception& e) {
        r.problem = fmt::format("jsonlw serve: {}", e.what());
    }
    fs::remove_all(s.dir / "out", ec);
    return r;
}

double ms(std::chrono::steady_clock::duration d)
{
    return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

ServeRunResult serve_cost_run(const ServeRunSpec& s)
{
    return with_server(s, [&s](std::uint16_t port, ServeRunResult& r) {
        sv::LoadOptions lo;
        lo.port = port;
        lo.requests = s.requests;
        lo.rate = s.rate;
        lo.connections = s.connections;
        lo.stream_share = 1.0;
        lo.chat_share = 0.5;
        lo.disconnect_every = 0;
        lo.min_tokens = s.model.min_tokens;
        lo.max_tokens = s.model.max_tokens;
        lo.top_logprobs = s.model.top_k;
        lo.seed = 7;  // the same workload for writers off and on
        const sv::LoadResult load = sv::run_load(lo);
        std::vector<double> ttft, e2e;
        ttft.reserve(load.results.size());
        e2e.reserve(load.results.size());
        std::uint64_t tokens = 0;
        for (const sv::ClientResult& c : load.results) {
            if (c.outcome != sv::ClientResult::Outcome::completed || !c.stream_well_formed) {
                ++r.failed;
                if (r.problem.empty())
                    r.problem = fmt::format("request {} failed: {}", c.index,
                                            c.error.empty() ? "malformed stream" : c.error);
                continue;
            }
            ++r.completed;
            tokens += c.tokens;
            ttft.push_back(ms(c.first_token - c.sent));
            e2e.push_back(ms(c.done - c.sent));
        }
        r.seconds = load.seconds;
        r.tokens = tokens;
        r.ttft_p50_ms = quantile(ttft, 0.5);
        r.ttft_p99_ms = quantile(ttft, 0.99);
        r.e2e_p50_ms = quantile(e2e, 0.5);
        r.e2e_p99_ms = quantile(e2e, 0.99);
    });
}

bool have_h2load() { return std::system("h2load --version >/dev/null 2>&1") == 0; }

ServeRunResult serve_cost_h2load_run(const ServeRunSpec& s)
{
    return with_server(s, [&s](std::uint16_t port, ServeRunResult& r) {
        // One streamed completion of the mean length, with the logprobs the client asks for.
        const fs::path body = s.dir / "h2load-body.json";
        {
            std::ofstream f(body);
            f << fmt::format(R"({{"model":"jsonlw-demo","prompt":"Tell me why a writer batches its )"
                             R"(lines.","max_tokens":{},"stream":true,"logprobs":{}}})",
                             (s.model.min_tokens + s.model.max_tokens) / 2, s.model.top_k);
        }
        const std::string cmd = fmt::format(
            "h2load --h1 -n {} -c {} -d '{}' -H 'content-type: application/json' "
            "http://127.0.0.1:{}/v1/completions 2>&1",
            s.requests, s.connections, body.string(), port);
        std::FILE* p = ::popen(cmd.c_str(), "r");
        if (!p) {
            r.problem = "cannot start h2load";
            return;
        }
        char line[512];
        double secs = 0, rps = 0;
        unsigned long long total = 0, started = 0, done = 0, ok = 0, failed = 0;
        while (std::fgets(line, sizeof line, p)) {
            std::sscanf(line, "finished in %lfs, %lf req/s", &secs, &rps);
            std::sscanf(line, "requests: %llu total, %llu started, %llu done, %llu succeeded, %llu failed",
                        &total, &started, &done, &ok, &failed);
        }
        const int status = ::pclose(p);
        r.seconds = secs;
        r.completed = ok;
        r.failed = total - ok;
        if (status != 0 || secs <= 0) r.problem = fmt::format("h2load exited {}", status);
        else if (r.failed) r.problem = fmt::format("h2load: {} of {} requests failed", r.failed, total);
    });
}

}  // namespace bench
