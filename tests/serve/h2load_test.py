#!/usr/bin/env python3
"""A real HTTP load generator against `jsonlw serve`: h2load (nghttp2-client) sends 20,000
POST /v1/completions over 64 HTTP/1.1 keep-alive connections, then 10,000 streamed
POST /v1/chat/completions with logprobs. h2load sends the same body every time and no
traceparent, so the server makes one per request. After SIGINT every request must be in the
files exactly once: the server's table has expected == written for all three writers and
nothing unaccounted; the request trace holds one request line and one response line per
request, the perf metrics and the raw output one line per completion, each with its own
traceparent, and the four join one to one by traceparent (and by request id).

Usage: h2load_test.py JSONLW WORKDIR
Exit 77 (skipped) without h2load (Debian: apt-get install nghttp2-client).
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import Failures, Server, check_accounting  # noqa: E402

JSONLW, WORK = sys.argv[1], sys.argv[2]
MODEL = "jsonlw-demo"
CONNECTIONS = 64
RUNS = [
    # (name, route, requests, body)
    ("completions", "/v1/completions", 20000,
     {"model": MODEL, "prompt": "a load of requests", "max_tokens": 2}),
    ("chat streamed", "/v1/chat/completions", 10000,
     {"model": MODEL, "messages": [{"role": "user", "content": "load"}], "max_tokens": 4,
      "stream": True, "logprobs": True, "top_logprobs": 5}),
]
TOTAL = sum(n for _, _, n, _ in RUNS)
f = Failures()


def h2load(h2, base, name, route, n, body):
    path = os.path.join(WORK, name.replace(" ", "_") + ".json")
    with open(path, "w") as fh:
        json.dump(body, fh)
    cmd = [h2, "--h1", "-n", str(n), "-c", str(CONNECTIONS), "-m", "1", "-d", path,
           "-H", "content-type: application/json", base + route]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        f.expect(f"h2load {name}: finishes within 150 s", False)
        return
    summary = [l for l in p.stdout.splitlines()
               if l.startswith(("finished in", "requests:", "status codes:", "traffic:"))]
    print(f"h2load {name} ({n} x POST {route}, {CONNECTIONS} connections, HTTP/1.1):")
    for line in summary:
        print("  " + line)
    f.equal(f"h2load {name}: exits 0", p.returncode, 0)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", p.stdout, re.M)
    f.equal(f"h2load {name}: total, started, done, succeeded, failed, errored, timeout",
            tuple(map(int, m.groups())) if m else None, (n, n, n, n, 0, 0, 0))
    m = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", p.stdout, re.M)
    f.equal(f"h2load {name}: status codes 2xx, 3xx, 4xx, 5xx",
            tuple(map(int, m.groups())) if m else None, (n, 0, 0, 0))


def by_traceparent(name, lines):
    """{traceparent: line}; each traceparent on exactly one line."""
    out = {}
    for line in lines:
        out.setdefault(line.get("traceparent"), []).append(line)
    f.equal(f"{name}: no line without a traceparent", None in out, False)
    f.equal(f"{name}: {len(lines)} lines, {len(lines)} distinct traceparents", len(out), len(lines))
    return {tp: ls[0] for tp, ls in out.items()}


def stream_tokens(body):
    """The token texts and logprobs of a recorded SSE body, and whether it ends with [DONE]."""
    tokens, logprobs = [], []
    events = [e for e in body.split("\n\n") if e]
    for e in events[:-1]:
        chunk = json.loads(e[len("data: "):])
        for c in chunk["choices"]:
            for t in (c.get("logprobs") or {}).get("content", []):
                tokens.append(t["token"])
                logprobs.append(t["logprob"])
    return tokens, logprobs, events[-1:] == ["data: [DONE]"]


def main():
    h2 = shutil.which("h2load")
    if not h2:
        print("SKIP: h2load is not installed (Debian: apt-get install nghttp2-client)")
        return 77
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    # Queues that hold the whole run's records (60,000 trace lines): on two busy cores the
    # writer thread can fall behind h2load, and the default queue then drops (counted,
    # queue_full); this test is about every request being recorded once, not about overload
    # (tools_demo_overload is).
    server = Server(JSONLW, os.path.join(WORK, "out"), "--backend", "cpu", "--vocab", "4096",
                    "--step-us", "0", "--concurrency", "256", "--top-k", "5", "--first-gen-every", "0",
                    "--ring-slots", "64", "--stage-wait-ms", "10000", "--writer-queue", str(1 << 16))
    try:
        for name, route, n, body in RUNS:
            h2load(h2, server.base, name, route, n, body)
    finally:
        rc = server.stop(timeout=120)
    f.equal("jsonlw serve exits 0 after SIGINT", rc, 0)
    print("\n".join(l for l in server.summary.splitlines()[:4]))
    if rc != 0:
        print(server.summary, server.stderr_text())

    table = check_accounting(f, server, {"raw output": TOTAL, "request trace": 2 * TOTAL, "perf metrics": TOTAL})

    requests = by_traceparent("request lines", server.lines("request trace", "requests-*.jsonl"))
    responses = by_traceparent("response lines", server.lines("request trace", "responses-*.jsonl"))
    perf = by_traceparent("perf-metrics lines", server.lines("perf metrics"))
    raw = by_traceparent("raw-output lines", server.lines("raw output"))
    f.equal("request lines", len(requests), TOTAL)
    f.equal("response lines", len(responses), TOTAL)
    f.equal("perf-metrics lines", len(perf), TOTAL)
    f.equal("raw-output lines", len(raw), TOTAL)
    f.equal("the response lines' traceparents are the request lines'", set(responses) == set(requests), True)
    f.equal("each perf line's traceparent is on exactly one request line", set(perf) == set(requests), True)
    f.equal("each raw line's traceparent is on exactly one request line", set(raw) == set(requests), True)
    f.equal("perf request_id: 1..N, once each", sorted(l["request_id"] for l in perf.values()),
            list(range(1, TOTAL + 1)))

    routes, bodies, statuses, joins, streamed, stream_equal = {}, 0, {}, 0, 0, 0
    want_body = {route: body for _, route, _, body in RUNS}
    for tp, req in requests.items():
        routes[req["route"]] = routes.get(req["route"], 0) + 1
        bodies += req["body"] == want_body.get(req["route"])
        resp, p, r = responses.get(tp), perf.get(tp), raw.get(tp)
        if resp is None or p is None or r is None:
            continue
        statuses[(resp.get("http_status"), resp["status"], p["status"], r["aborted"])] = \
            statuses.get((resp.get("http_status"), resp["status"], p["status"], r["aborted"]), 0) + 1
        joins += (req["trace_id"] == resp["trace_id"] and resp["client_id"] == p["request_id"]
                  and r["request_id"] == str(p["request_id"]))
        if resp["response"]["kind"] == "sse_text":
            streamed += 1
            tokens, logprobs, done = stream_tokens(resp["response"]["body"])
            stream_equal += done and tokens == r["frames"] and logprobs == r["logprobs"]
    f.equal("request lines per route", routes, {route: n for _, route, n, _ in RUNS})
    f.equal("every request line holds the body h2load sent", bodies, TOTAL)
    f.equal("(http_status, response status, perf status, raw aborted) of every request",
            statuses, {(200, "completed", "complete", False): TOTAL})
    f.equal("request, response, perf and raw lines join by trace_id and request id", joins, TOTAL)
    f.equal("streamed responses recorded", streamed, RUNS[1][2])
    f.equal("each recorded stream ends with [DONE] and carries its raw line's tokens and logprobs",
            stream_equal, RUNS[1][2])

    print(f"files: {len(requests)} request lines, {len(responses)} response lines, {len(perf)} perf-metrics "
          f"lines, {len(raw)} raw-output lines, each with its own traceparent, joined one to one "
          f"({joins} joins); table: " + "; ".join(
              f"{w} {row['expected']} expected / {row['written']} written / {row['unaccounted']} unaccounted"
              for w, row in table.items()))
    return f.exit_status()


if __name__ == "__main__":
    sys.exit(main())
