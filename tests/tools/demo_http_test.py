#!/usr/bin/env python3
"""Runs `jsonlw demo` as the README's first command does — `jsonlw serve` on a loopback port,
driven by the built-in client over real sockets — small, then checks what it printed against
what it wrote: the server's counters, every writer's expected == written, the client/server
join (every request the client sent is in the request-trace and perf-metrics files exactly
once, its server span inside its client span), the planned disconnects recorded as aborted in
all three kinds, and the exit status. Then the in-process-only flags are refused.

Usage: demo_http_test.py JSONLW
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

from checks import expect, finish

JSONLW = sys.argv[1]
REQUESTS = 120


def lines(pattern):
    out = []
    for f in sorted(glob.glob(pattern, recursive=True)):
        with open(f) as fh:
            out += [json.loads(l) for l in fh if l.strip()]
    return out


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out")
    args = [JSONLW, "demo", "--requests", str(REQUESTS), "--rate", "400", "--step-us", "300",
            "--concurrency", "32", "--vocab", "4096", "--tokens", "4-24", "--backend", "cpu",
            "--disconnect-every", "10", "--stream-share", "0.5", "--out", out]
    p = subprocess.run(args, capture_output=True, text=True, timeout=150)
    print(p.stdout[:6000])
    expect("demo exits 0", p.returncode == 0, f"exit {p.returncode}\n{p.stderr[-3000:]}")

    m = re.search(r"completions: (\d+) admitted \((\d+) streamed\), (\d+) completed, (\d+) client "
                  r"disconnected, (\d+) ended by shutdown", p.stdout)
    expect("the server prints its completions", m is not None)
    if m:
        admitted, streamed, completed, disconnected, shut = map(int, m.groups())
        expect("every request was admitted", admitted == REQUESTS, m.group(0))
        expect("completed + disconnected == admitted, none ended by shutdown",
               completed + disconnected == admitted and shut == 0, m.group(0))
        # Every 10th streamed request (by index) leaves after its first token; on a loaded
        # machine the server may have sent the whole (short) stream before the client left,
        # which the join counts apart.
        late = re.search(r"client disconnected / server complete (\d+)", p.stdout)
        expect("the planned disconnects happened", late is not None and
               disconnected + int(late.group(1)) == streamed // 10, m.group(0))

    for name, per_request in (("raw output", 1), ("request trace", 2), ("perf metrics", 1)):
        r = re.search(rf"^{name}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s", p.stdout, re.M)
        expect(f"{name}: expected == written, nothing dropped or unaccounted", r is not None and
               int(r.group(1)) == int(r.group(2)) == per_request * REQUESTS and r.group(3) == "0"
               and r.group(5) == "0", r.group(0) if r else "no row")

    expect("the join is printed and OK", "joined on traceparent: join OK" in p.stdout)
    j = re.search(r"joined (\d+); missing in perf (\d+), trace requests (\d+), trace responses (\d+); "
                  r"duplicated (\d+); span violations (\d+)", p.stdout)
    expect("the join's counts are exact", j is not None and j.groups() ==
           (str(REQUESTS), "0", "0", "0", "0", "0"), j.group(0) if j else "no join line")

    # The files themselves: one perf line, one raw output, two trace lines per request, each
    # with the traceparent the client sent; the disconnected ones aborted in all three.
    perf = lines(os.path.join(out, "perf_metrics", "*.jsonl"))
    raw = lines(os.path.join(out, "raw_output", "**", "*.jsonl"))
    reqs = lines(os.path.join(out, "request_trace", "**", "requests-*.jsonl"))
    resps = lines(os.path.join(out, "request_trace", "**", "responses-*.jsonl"))
    expect("one line of each kind per request",
           (len(perf), len(raw), len(reqs), len(resps)) == (REQUESTS,) * 4,
           (len(perf), len(raw), len(reqs), len(resps)))
    tps = {l["traceparent"] for l in perf}
    expect("distinct traceparents, the same set in all four files",
           len(tps) == REQUESTS and tps == {l["traceparent"] for l in raw}
           == {l["traceparent"] for l in reqs} == {l["traceparent"] for l in resps})
    aborted_perf = {l["traceparent"] for l in perf if l["status"] == "aborted"}
    aborted_raw = {l["traceparent"] for l in raw if l["aborted"]}
    gone = {l["traceparent"] for l in resps if l["status"] == "client_disconnected"}
    expect("the disconnected requests are aborted in perf, raw output and response lines",
           m is not None and len(aborted_perf) == disconnected and aborted_perf == aborted_raw == gone,
           (len(aborted_perf), len(aborted_raw), len(gone)))
    expect("credentials are redacted on every request line",
           all(v == "[redacted]" for l in reqs for k, v in l["headers"] if k.lower() == "authorization"))

    for flag in (["--kafka"], ["--summary-json", "x.json"], ["--slow-disk-us", "5"]):
        bad = subprocess.run([JSONLW, "demo", *flag, "--out", out], capture_output=True, text=True,
                             timeout=30)
        expect(f"{flag[0]} without --in-process is refused with status 2",
               bad.returncode == 2 and "only for jsonlw demo --in-process" in bad.stderr, bad.stderr)

finish()
