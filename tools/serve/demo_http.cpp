// `jsonlw demo`: the main job on a real protocol. It starts `jsonlw serve` on a loopback port
// (on a second thread, the server's loop), drives it with the built-in client over real
// sockets (load_client.hpp: Poisson arrivals, streaming and whole responses, completions and
// chat, a few clients that leave mid-stream), then prints the server's accounting
// (serve_summary.hpp), the client's view joined with the server's records of the same
// requests (client_join.hpp), and `jsonlw report` over what the writers wrote. With
// --in-process, the simulation that needs no sockets (tools/demo/demo.cpp) runs instead.
#include "../commands.hpp"
#include "../demo/option_number.hpp"
#include "../demo/output_dir.hpp"
#include "client_join.hpp"
#include "load_client.hpp"
#include "serve_app.hpp"
#include "serve_summary.hpp"

#include <jsonlw/report/report.hpp>

#include <cstdio>
#include <string_view>
#include <thread>
#include <vector>

namespace jsonlw::tools {
namespace {

// The client's own flags; the rest are `jsonlw serve`'s and the model's.
bool parse_client_options(std::span<char*> args, serve::LoadOptions& c, std::vector<char*>& rest,
                          std::string& error)
{
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        const bool known = a == "--stream-share" || a == "--chat-share" ||
                           a == "--disconnect-every" || a == "--connections" ||
                           a == "--closed-loop";
        if (!known) {
            rest.push_back(args[i]);
            continue;
        }
        if (a == "--closed-loop") {
            c.rate = 0;
            continue;
        }
        if (i + 1 >= args.size()) {
            error = std::string(a) + " needs a value";
            return false;
        }
        const std::string_view v = args[++i];
        bool ok = false;
        if (a == "--stream-share") ok = option_number(v, c.stream_share) && c.stream_share >= 0 && c.stream_share <= 1;
        else if (a == "--chat-share") ok = option_number(v, c.chat_share) && c.chat_share >= 0 && c.chat_share <= 1;
        else if (a == "--disconnect-every") ok = option_number(v, c.disconnect_every);
        else if (a == "--connections") ok = option_number(v, c.connections) && c.connections > 0;
        if (!ok) {
            error = "bad value for " + std::string(a) + ": " + std::string(v);
            return false;
        }
    }
    return true;
}

std::string fmt_rate(double r)
{
    char b[64];
    std::snprintf(b, sizeof b, "Poisson, %.0f/s", r);
    return b;
}

}  // namespace

int demo_main(std::span<char*> args)
{
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (std::string_view(args[i]) != "--in-process") continue;
        std::vector<char*> rest(args.begin(), args.end());
        rest.erase(rest.begin() + std::ptrdiff_t(i));
        return in_process_demo_main(rest);
    }
    serve::ServeOptions so;
    so.port = 0;  // a free loopback port
    serve::LoadOptions lo;
    std::vector<char*> rest;
    std::string error;
    if (!parse_client_options(args, lo, rest, error) || !serve::parse_serve_options(rest, so, error)) {
        std::fprintf(stderr, "jsonlw demo: %s (see jsonlw help demo)\n", error.c_str());
        return 2;
    }
    const bool clock_rate = lo.rate != 0;
    lo.requests = so.model.requests;
    if (clock_rate) lo.rate = so.model.rate;
    lo.seed = so.model.seed;
    lo.min_tokens = so.model.min_tokens;
    lo.max_tokens = so.model.max_tokens;
    lo.top_logprobs = so.model.top_k;
    if (!fresh_output_dir(so.model.out, "demo")) return 2;
    int status = 0;
    try {
        serve::ServeApp app(so);
        lo.host = so.host;
        lo.port = app.listen();
        std::printf("jsonlw demo: jsonlw serve on http://%s:%u; the built-in client sends %llu "
                    "requests (%s, %.0f%% streamed, %.0f%% chat, every %lluth stream left "
                    "after its first token)\n",
                    so.host.c_str(), unsigned(lo.port), (unsigned long long)lo.requests,
                    clock_rate ? fmt_rate(lo.rate).c_str() : "closed loop", lo.stream_share * 100,
                    lo.chat_share * 100, (unsigned long long)lo.disconnect_every);
        std::fflush(stdout);
        serve::ServeOutcome outcome;
        std::thread server([&] { outcome = app.run(false); });
        const serve::LoadResult load = serve::run_load(lo);
        // The client is done; the streams it left may still be on their way to the server.
        app.request_stop_when_idle(std::chrono::seconds(5));
        server.join();
        std::printf("\n");
        status = serve::print_serve_summary(stdout, so, outcome);
        std::printf("\n");
        const serve::JoinReport join = serve::join_with_server(so.model.out, load.results);
        serve::print_join(stdout, join);
        if (!serve::join_ok(join)) status = 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jsonlw demo: %s\n", e.what());
        return 1;
    }
    std::printf("\n");
    std::fflush(stdout);
    std::string dir = so.model.out.string();
    char* report_args[] = {dir.data()};
    const int report_status = report_main(std::span<char*>(report_args, 1));
    return status != 0 ? status : report_status;
}

}  // namespace jsonlw::tools
