// The jsonlw command: `jsonlw demo|report|validate|verify|help|--help|--version`. Results go to
// stdout, progress and errors to stderr; each subcommand's exit statuses are in the help.
#include "commands.hpp"

#include <jsonlw/report/report.hpp>
#include <jsonlw/version.hpp>

#include <simdjson.h>

#include <cstdio>
#include <span>
#include <string_view>

namespace {

constexpr std::string_view usage = R"(usage: jsonlw <command> [options]

  jsonlw demo      start `jsonlw serve`, drive it with a built-in HTTP client, report
  jsonlw serve     an OpenAI-compatible HTTP server that writes all three record kinds
  jsonlw report    summarize a directory of JSON Lines written by the jsonlw writers
  jsonlw validate  check that every line of some files is strict JSON
  jsonlw verify    check the hash chain of every writer under a directory
  jsonlw help CMD  the options and exit statuses of one command
  jsonlw --help    all of them;  jsonlw --version  the version

Results go to stdout; progress (a bar on a terminal, a line every few seconds otherwise) and
errors go to stderr.
)";

constexpr std::string_view demo_help = R"(jsonlw demo [--requests N] [--rate R | --closed-loop] [--connections C]
            [--stream-share F] [--chat-share F] [--disconnect-every N] [serve options]
            [model options]
jsonlw demo --in-process [model options] [in-process options]
  The main job on a real protocol: starts `jsonlw serve` on a free loopback port and drives
  it with a built-in HTTP client over real sockets (Poisson arrivals; completions and chat,
  streamed and whole, all with logprobs; every Nth stream left after its first token), then
  prints the server's accounting, the client's view joined with the server's perf-metrics
  and request-trace records of the same requests (by the traceparent each request sent: the
  server's span must sit inside the client's), and `jsonlw report DIR`. docs/serving.md.
  With --in-process: the simulation without sockets (requests made up on the server's loop),
  which also takes the in-process options below and runs far past what HTTP carries on two
  cores (docs/reliability.md). An earlier demo's folders in DIR are replaced.
    --requests N        how many requests the client sends (default 2000)
    --rate R            Poisson arrivals per second (default 500)
    --closed-loop       instead: --connections requests always in flight
    --connections C     the client's sockets at most, kept alive (default 64)
    --stream-share F    share of streamed requests, 0..1 (default 0.5)
    --chat-share F      share sent to /v1/chat/completions, 0..1 (default 0.5)
    --disconnect-every N  every Nth streamed request leaves after its first token
                        (default 100; 0: none)
  serve options: as `jsonlw serve` (--header-limit, --body-limit, --writers, ...).
  model options:
    --concurrency C     requests decoding at once at most (default 64)
    --vocab V           vocabulary size of the synthetic model (default 32000)
    --seed S            random seed: same seed, same tokens and lengths (default 1)
    --out DIR           where the writers write (default ./jsonlw-out)
    --backend B         the snapshot stage's backend: auto (CUDA when a GPU is present),
                        cpu or cuda (default auto)
    --dtype T           the synthetic logits' element type (default bf16)
    --tokens MIN-MAX    output length in tokens, uniform (default 8-64)
    --top-k K           alternatives recorded per token, 1..64 (default 5)
    --step-us U         the simulated forward pass per decode step (default 1000)
    --first-gen-every N capture the first token's whole logits row of every Nth request
                        (default 10; 0: never)
    --capture C         the raw-output and request-trace writers' content: full (default),
                        or metadata: the generated text, frames and token ids, the request
                        and response bodies written as their lengths and SHA-256 digests
                        (docs/writers.md, "Content capture"), counted in the summary
    --format F          the three writers' lines: jsonl (default), or otlp: one OpenTelemetry
                        LogsData JSON document per line (service.name jsonlw-demo), what the
                        Collector's otlpjsonfile receiver reads (docs/otlp.md)
    --envelope          begin every line of all three writers with {"seq":N,"writer":ID,...}
                        (seq: 0, 1, 2, ... per writer) and write DIR/writers.json after
                        close: per writer its kind, writer ID, submitted, written,
                        seq_gaps, unknown, and (perf metrics) its files, so that
                        max(seq) + 1 - count(*) per writer can be checked against it
    --chain MODE        end every line of all three writers with a hash chain value
                        (sha256, or hmac-sha256 with --chain-key FILE), each writer's file
                        events in <writer dir>/<stem>.chain; check with jsonlw verify DIR
                        (docs/chain.md)
    --chain-key FILE    the key of --chain hmac-sha256 (the file's bytes exactly)
    --rotate-bytes N    rotate the perf-metrics file once it holds N bytes (default 0: never);
                        the file being written ends in .open until it is rotated or closed
    --rotate-interval-ms N  ... or once it has been open N ms (default 0: never)
    --retain-files N    per writer, keep at most N closed (sealed) files: older ones are
                        deleted, oldest first, counted (default 0: no limit); the file being
                        written is never deleted
    --retain-bytes N    ... at most N bytes of closed files per writer
    --retain-age-ms N   ... delete closed files older than N ms
  in-process options (with --in-process only):
    --requests N, --rate R  as above, arrivals made up on the server's loop
    --kafka             also send every line the writers append through a KafkaSink, a
                        topic per writer (jsonlw.raw_output, ...), to an in-process mock
                        Kafka cluster; a consumer reads every topic back from its start, and
                        the demo prints per topic: submitted, delivered, failed, consumed,
                        and whether the topic holds exactly the files' lines. Needs a jsonlw
                        built with librdkafka (exit status 2 otherwise)
    --ring-slots N      the snapshot stage's result slots (default 16)
    --stage-wait-ms W   wait up to W ms for a free slot before a step is dropped (default 5;
                        0: drop at once); a dropped step's positions are null, counted
    --stage-threads N   CPU backend: threads computing rows (default 0: every core)
    --stage-nice N      CPU backend: nice added to the row workers (default 10)
    --server-us U       the server spends U us of CPU on each step (a slow loop)
    --writer-queue N    queue capacity of the raw-output and request-trace writers
    --slow-disk-us U    every append waits U us first (a slow disk)
    --thread-stats      per-thread CPU, run-queue wait and context switches at the end
    --summary-json FILE the per-writer accounting and the stage's figures as JSON
  Per writer the demo prints expected = written + dropped + unknown, and unaccounted; then
  reads each writer's files back: lines on disk must equal written less what retention
  deleted and what someone else removed or moved (counted), else "unaccounted".
  exit status: 0 every record written (retention's deletions included); 3 every record
               accounted for, some dropped (or unknown) with a counted reason, or files
               removed or moved by someone else; 1 records unaccounted for, a line did not
               reach Kafka (--kafka), the report found malformed lines, or (over HTTP) a
               request the client sent is missing from the request-trace or perf-metrics
               files, or a server span is not inside its client span; 2 bad arguments
)";

constexpr std::string_view serve_help = R"(jsonlw serve [--listen HOST:PORT] [--writers on|off] [--header-limit BYTES]
             [--body-limit BYTES] [--header-timeout-ms MS] [--idle-timeout-ms MS]
             [--write-timeout-ms MS] [--shutdown-timeout-ms MS] [--max-connections N]
             [--writer-flush-ms MS]
             [--model-name NAME] [--max-tokens-limit N] [model options of jsonlw demo]
  An OpenAI-compatible HTTP/1.1 server (Boost.Beast) in the writers' Asio loop, over the
  demo's seeded synthetic model: POST /v1/completions and /v1/chat/completions (JSON, or
  "stream": true as Server-Sent Events; logprobs and top_logprobs from the snapshot stage's
  per-token data; usage), GET /v1/models, GET /health; keep-alive; x-request-id and
  traceparent on every response. Every request is traced (credentials redacted), every
  completion gets a raw-output and a perf-metrics record. SIGINT/SIGTERM: stop accepting,
  end open streams (recorded as aborted), close the writers, print the accounting.
  docs/serving.md.
    --listen HOST:PORT  where to listen (default 127.0.0.1:8000; port 0 picks a free one,
                        printed first: "listening on http://HOST:PORT")
    --writers on|off    off: no writer at all (the cost baseline; default on)
    --writer-flush-ms MS  a record waits up to MS for its batch to fill (default 20; 0: at
                        once, one hand-off to the I/O thread per record at light load)
    --header-limit B    a larger header block is answered 431 (default 16384)
    --body-limit B      a larger body is answered 413 (default 1048576)
    --header-timeout-ms a request must arrive whole this long after its first byte, else
                        408 and the connection closes (default 10000)
    --idle-timeout-ms   a keep-alive connection idle this long is closed (default 60000)
    --write-timeout-ms  a client that takes no bytes this long is dropped (default 30000)
    --shutdown-timeout-ms  how long open responses get to end at SIGINT (default 5000)
    --max-connections N past N open connections, new ones are closed (default 10000)
    --model-name NAME   the model served (default jsonlw-demo; others: 404)
    --max-tokens-limit N  a larger max_tokens is a 400 (default 4096)
  exit status: as jsonlw demo's (0 every record written; 3 some dropped, counted; 1 records
               unaccounted for); 2 bad arguments
)";

constexpr std::string_view report_help = R"(jsonlw report DIR [--html FILE] [--json] [--jobs N] [--quiet] [--verify-logits]
  Reads every *.jsonl under DIR (recursively; big files in parts, in parallel), tells record
  kinds apart by their fields, and prints per-file integrity (lines, valid, malformed, torn
  tail), perf-metrics spans (count, mean, median, p75, p99 in ms; percentiles by linear
  interpolation; spans with a missing or inverted end are excluded and counted), raw-output
  figures and request-trace figures, with durable sidecars (_writer/*.json) verified.
    --html FILE      also write a self-contained HTML page (inline SVG and CSS): latency
                     histograms and a timeline of the first 200 requests
    --json           print the figures as one JSON object instead of text
    --jobs N         reader threads (default: one per hardware thread)
    --quiet          no progress on stderr
    --verify-logits  decode every first_gen_logits item (default: check shape and length)
  exit status: 0 ok (torn tails are tolerated: writers may still be writing);
               1 malformed lines, an unreadable file, or a sidecar that does not verify;
               2 bad arguments, DIR not a readable directory, or FILE not writable
)";

constexpr std::string_view validate_help = R"(jsonlw validate [--allow-torn-tail] [--quiet] FILE|DIR...
  Parses each '\n'-terminated line of each FILE on its own (simdjson DOM: strict JSON,
  valid UTF-8; an empty line is malformed), so one bad line does not hide the rest. A DIR
  gives every *.jsonl under it (recursively, as report reads it) and every *.jsonl.open, a
  file still being written, whose torn final line is expected. A line that is an OTLP
  LogsData document (a writer with format otlp, docs/otlp.md) must also follow the OTLP
  JSON rules (ids as hex, 64-bit integers as decimal strings, each body a kvlistValue). Prints
  FILE:LINE: malformed: <reason> for each bad line (1000 per file at most), the torn final
  line apart, a summary line per FILE and a total (not with --quiet). FILE "-" reads stdin.
    --allow-torn-tail  a final line without '\n' is reported but not an error
  exit status: 0 every line valid; 1 a malformed line (wins over 2 and 3);
               2 a torn final line of a closed file (unless --allow-torn-tail);
               3 bad arguments, a FILE that cannot be read, or a DIR that cannot be read
                 or holds no *.jsonl or *.jsonl.open file
)";

constexpr std::string_view verify_help = R"(jsonlw verify DIR [--key FILE]
  Finds every writer's chain manifest (<stem>.chain) under DIR and recomputes its hash chain
  (docs/chain.md): per writer, file by file in the manifest's order, each file from the value
  the manifest says it starts from, which must be where an earlier file of the writer was (or
  64 zeros); a closed file must end with the value recorded when it closed; a file missing
  without a recorded retention deletion, or a *.jsonl named like the writer's files that no
  manifest lists, is a break too. Prints the first break as
  FILE:LINE: KIND: what it looks like (KIND: edited, deleted_or_inserted, reordered,
  truncated, missing_key, not_json_object, deleted file, inserted file, broken link), or one
  line per writer: its mode, files, lines, files deleted by retention, last value.
    --key FILE  the key file of writers with chain hmac-sha256 (its bytes exactly)
  exit status: 0 every chain verified; 1 a break (printed); 2 bad arguments, DIR not a
               directory or without a manifest, an hmac-sha256 chain without --key, or an
               unreadable key file or manifest
)";

int help(std::string_view topic)
{
    if (topic == "demo") std::fputs(demo_help.data(), stdout);
    else if (topic == "serve") std::fputs(serve_help.data(), stdout);
    else if (topic == "report") std::fputs(report_help.data(), stdout);
    else if (topic == "validate") std::fputs(validate_help.data(), stdout);
    else if (topic == "verify") std::fputs(verify_help.data(), stdout);
    else if (topic.empty()) {
        std::fputs(usage.data(), stdout);
        for (const auto h : {demo_help, serve_help, report_help, validate_help, verify_help}) {
            std::fputs("\n", stdout);
            std::fputs(h.data(), stdout);
        }
    } else {
        std::fprintf(stderr, "jsonlw help: no command '%.*s'\n", static_cast<int>(topic.size()), topic.data());
        return 2;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    const std::span<char*> args(argv, static_cast<std::size_t>(argc));
    if (args.size() < 2) {
        std::fputs(usage.data(), stderr);
        return 2;
    }
    const std::string_view cmd(args[1]);
    const auto rest = args.subspan(2);
    if (cmd == "--help" || cmd == "-h") return help("");
    if (cmd == "help") return help(rest.empty() ? std::string_view() : std::string_view(rest[0]));
    if (cmd == "--version") {
        std::printf("jsonlw %s (simdjson %d.%d.%d, %s)\n", jsonlw::version_string, int(simdjson::SIMDJSON_VERSION_MAJOR),
                    int(simdjson::SIMDJSON_VERSION_MINOR), int(simdjson::SIMDJSON_VERSION_REVISION),
                    simdjson::get_active_implementation()->name().c_str());
        return 0;
    }
    // Each command's own --help.
    for (const char* a : rest)
        if (std::string_view(a) == "--help" || std::string_view(a) == "-h") return help(cmd);
    if (cmd == "demo") return jsonlw::tools::demo_main(rest);
    if (cmd == "serve") return jsonlw::tools::serve_main(rest);
    if (cmd == "report") return jsonlw::tools::report_main(rest);
    if (cmd == "validate") return jsonlw::tools::validate_main(rest);
    if (cmd == "verify") return jsonlw::tools::verify_main(rest);
    std::fprintf(stderr, "jsonlw: unknown command '%.*s'\n%s", static_cast<int>(cmd.size()), cmd.data(),
                 usage.data());
    return 2;
}
