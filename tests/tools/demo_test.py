#!/usr/bin/env python3
"""Runs `jsonlw demo` small and fast, then checks what it wrote with the other two commands:
all three record kinds are there, `validate` accepts every file, and `report` counts exactly
what the writers' own counters (the demo's table) say they wrote.

Usage: demo_test.py JSONLW
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

JSONLW = sys.argv[1]
failures = []


def expect(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"))
    if not cond:
        failures.append(name)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out")
    args = [JSONLW, "demo", "--requests", "60", "--rate", "5000", "--step-us", "200",
            "--concurrency", "16", "--vocab", "4096", "--tokens", "4-24", "--first-gen-every", "5",
            "--backend", "cpu", "--out", out]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    expect("demo exits 0", p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    print(p.stdout)

    # The writers' counters, as the demo prints them.
    written = {}
    for name in ("raw output", "request trace", "perf metrics"):
        m = re.search(rf"^{name}\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+(\d+)$", p.stdout, re.M)
        expect(f"demo prints the {name} writer's counters", m is not None)
        if m:
            submitted, wrote, dropped, unknown = map(int, m.groups())
            expect(f"{name}: everything submitted was written", submitted == wrote and dropped == 0
                   and unknown == 0, m.group(0))
            written[name] = wrote
    expect("every request finished", "jsonlw demo: 60 requests" in p.stdout)

    files = sorted(glob.glob(os.path.join(out, "**", "*.jsonl"), recursive=True))
    kinds = {os.path.relpath(f, out).split(os.sep)[0] for f in files}
    expect("all three kinds were written", kinds == {"raw_output", "request_trace", "perf_metrics"},
           str(kinds))
    v = subprocess.run([JSONLW, "validate", "--quiet", *files], capture_output=True, text=True,
                       timeout=60)
    expect("validate accepts every file", v.returncode == 0, v.stdout + v.stderr)

    r = subprocess.run([JSONLW, "report", out, "--json", "--quiet"], capture_output=True, text=True,
                       timeout=60)
    expect("report exits 0", r.returncode == 0, r.stderr)
    rep = json.loads(r.stdout)
    expect("no malformed line, no torn tail", rep["malformed"] == 0 and rep["torn_tails"] == 0)
    raw = rep["raw_output"]
    expect("report's raw outputs == the raw-output writer's written",
           raw["outputs"] == written.get("raw output"), f'{raw["outputs"]} vs {written}')
    traces = rep["request_traces"]
    expect("report's requests + responses == the request-trace writer's written",
           traces["requests"] + traces["responses"] == written.get("request trace"),
           f'{traces["requests"]}+{traces["responses"]} vs {written}')
    expect("every request has its response", traces["requests"] == traces["responses"] == 60)
    expect("report's perf records == the perf-metrics writer's written",
           rep["perf_metrics"]["records"]["worker"] == written.get("perf metrics"),
           f'{rep["perf_metrics"]["records"]} vs {written}')
    expect("credentials were redacted, none left", traces["redacted"] == 3 * 60
           and traces["unredacted_credential_headers"] == 0, str(traces["redacted"]))
    lp = raw["logprobs"]
    expect("every token has a logprob, a rank and its top-5", lp["values"] == raw["tokens"]
           and lp["nulls"] == 0 and lp["ranked_tokens"] == raw["tokens"]
           and lp["top_logprobs_entries"] == 5 * raw["tokens"], json.dumps(lp))
    fg = raw["first_gen_logits"]
    expect("first_gen_logits of every 5th request, as fp16 (bf16 logits, compat mode)",
           fg["items"] == 12 and fg["bad"] == 0 and fg["dtypes"] == {"float16": 12}, json.dumps(fg))

    # A second run replaces the first one's folders instead of appending to them.
    p2 = subprocess.run(args, capture_output=True, text=True, timeout=120)
    expect("a second demo into the same place exits 0", p2.returncode == 0, p2.stderr)
    r2 = json.loads(subprocess.run([JSONLW, "report", out, "--json", "--quiet"],
                                   capture_output=True, text=True, timeout=60).stdout)
    expect("... and its report counts one run", r2["raw_output"]["outputs"] == 60)

    bad = subprocess.run([JSONLW, "demo", "--requests", "0"], capture_output=True, text=True,
                         timeout=30)
    expect("bad arguments exit 2", bad.returncode == 2, bad.stderr)

sys.exit(1 if failures else 0)
