#!/usr/bin/env python3
"""Runs `jsonlw demo --capture metadata` small, then the same run (same seed) with full
capture, and checks: the metadata run's accounting and on-disk checks pass; no raw-output or
request-trace line holds content (no text, frames, token ids, top-k alternatives, logits rows
or bodies, none of the full run's texts or bodies); the counts of metadata lines are exact;
`validate` and `report` accept the files; each request line's digest equals the SHA-256
recomputed from the full run's line with the same request body, as docs/writers.md ("Content
capture") says a user matches them (generated text differs between runs: raw-output digests
are matched against full lines in tests/writers/raw_output/raw_output_capture.cpp).

Usage: demo_capture_test.py JSONLW
"""
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

from checks import expect, finish

JSONLW = sys.argv[1]
REQUESTS = 60


def sha(b):
    return hashlib.sha256(b).hexdigest()


def lines(out, kind):
    """(file name, line text, parsed) of every line under out/kind."""
    got = []
    for f in sorted(glob.glob(os.path.join(out, kind, "**", "*.jsonl"), recursive=True)):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                got.append((os.path.basename(f), line, json.loads(line)))
    return got


def raw_body(line, obj_start=0):
    """The exact text of the first "body" value at or after obj_start: what body_sha256 covers
    for a body written as JSON."""
    i = line.index('"body":', obj_start) + len('"body":')
    _, end = json.JSONDecoder().raw_decode(line, i)
    return line[i:end]


def run(out, capture):
    args = [JSONLW, "demo", "--in-process", "--requests", str(REQUESTS), "--rate", "5000", "--step-us", "200",
            "--concurrency", "16", "--vocab", "4096", "--tokens", "4-24", "--first-gen-every",
            "5", "--backend", "cpu", "--seed", "7", "--out", out, "--capture", capture]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


with tempfile.TemporaryDirectory() as tmp:
    meta_out, full_out = os.path.join(tmp, "metadata"), os.path.join(tmp, "full")
    p = run(meta_out, "metadata")
    expect("demo --capture metadata exits 0", p.returncode == 0,
           f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    print(p.stdout)
    expected_records = {"raw output": REQUESTS, "request trace": 2 * REQUESTS,
                        "perf metrics": REQUESTS}
    for name, n in expected_records.items():
        m = re.search(rf"^{name}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s+\S+\s+\S+$",
                      p.stdout, re.M)
        expect(f"{name}: every expected record was written", m is not None and
               list(map(int, m.groups())) == [n, n, 0, 0, 0], m.group(0) if m else p.stdout)
    expect("the summary counts the metadata lines exactly",
           f"content capture: metadata: {REQUESTS} raw-output records and {2 * REQUESTS} "
           "request-trace lines written with lengths and SHA-256 digests" in p.stdout, p.stdout)

    files = sorted(glob.glob(os.path.join(meta_out, "**", "*.jsonl"), recursive=True))
    v = subprocess.run([JSONLW, "validate", "--quiet", *files], capture_output=True, text=True,
                       timeout=60)
    expect("validate accepts every file", v.returncode == 0, v.stdout + v.stderr)
    r = subprocess.run([JSONLW, "report", meta_out, "--json", "--quiet"], capture_output=True,
                       text=True, timeout=60)
    expect("report exits 0", r.returncode == 0, r.stderr)
    rep = json.loads(r.stdout) if r.returncode == 0 else {}
    raw_rep = rep.get("raw_output", {})
    expect("report counts every output, no schema error, tokens from num_output_tokens",
           raw_rep.get("outputs") == REQUESTS and raw_rep.get("schema_errors") == 0
           and raw_rep.get("token_count_mismatch") == 0 and raw_rep.get("tokens", 0) > 0,
           json.dumps(raw_rep)[:400])

    raw = lines(meta_out, "raw_output")
    trace = lines(meta_out, "request_trace")
    expect("a raw-output line per request", len(raw) == REQUESTS, str(len(raw)))
    expect("a request and a response line per request", len(trace) == 2 * REQUESTS, str(len(trace)))
    hex64 = re.compile(r"^[0-9a-f]{64}$")
    content_keys = {"text", "frames", "token_ids", "top_logprobs", "first_gen_logits"}
    expect("no raw-output line holds text, frames, token ids, alternatives or logits rows",
           all(not (content_keys & set(rec)) for _, _, rec in raw))
    expect("every raw-output line has its lengths and digests",
           all(rec.get("capture") == "metadata" and hex64.match(rec["text_sha256"])
               and hex64.match(rec["frames_sha256"]) and hex64.match(rec["token_ids_sha256"])
               and isinstance(rec["text_len"], int) and isinstance(rec["frame_lens"], list)
               for _, _, rec in raw))
    expect("no request-trace line holds a body",
           all("body" not in rec and "body" not in rec.get("response", {}) for _, _, rec in trace))
    expect("every request-trace line has body_len and body_sha256",
           all(rec.get("capture") == "metadata"
               and hex64.match((rec if rec["event"] == "request" else rec["response"])["body_sha256"])
               for _, _, rec in trace))
    everything = "".join(line for _, line, _ in raw + trace)
    for needle in ("Tell me about record", "data: ", "cmpl-", "[DONE]"):
        expect(f"no line contains {needle!r}", needle not in everything)

    # The same run with full capture.
    p = run(full_out, "full")
    expect("demo --capture full exits 0", p.returncode == 0, p.stderr)
    expect("... and counts no metadata line", "content capture" not in p.stdout)
    full_raw = {rec["request_id"]: (line, rec) for _, line, rec in lines(full_out, "raw_output")}
    texts = [rec["text"] for _, rec in full_raw.values() if len(rec["text"]) >= 12]
    expect("none of the full run's texts is in the metadata files",
           texts and not any(t in everything for t in texts), str(len(texts)))
    # The generated text differs from run to run (the engine's batches do), so the raw-output
    # digests are checked against themselves here (tests/writers/raw_output/
    # raw_output_capture.cpp matches them against full lines): the frames add up to the text.
    expect("each raw-output line's frame_lens add up to text_len, frames_sha256 == text_sha256",
           all(sum(rec["frame_lens"]) == rec["text_len"] and rec["frames_sha256"] == rec["text_sha256"]
               for _, _, rec in raw if rec["frames_consistent"])
           and sum(rec["frames_consistent"] for _, _, rec in raw) == REQUESTS)
    # Request bodies are the same in both runs (they name the request id): each metadata line's
    # digest is that of a full line's body, recomputed as docs/writers.md says. Trace ids are
    # random per run, so requests are matched by the digest itself.
    full_trace = lines(full_out, "request_trace")
    full_requests = {sha(raw_body(line).encode()): (line, rec) for _, line, rec in full_trace
                     if rec["event"] == "request"}
    meta_requests = [rec for _, _, rec in trace if rec["event"] == "request"]
    expect("every request line's body digest is a full request body's",
           all(rec["body_sha256"] in full_requests and rec["body_len"]
               == len(raw_body(full_requests[rec["body_sha256"]][0]).encode())
               for rec in meta_requests))
    expect("every response line has a body digest of its own",
           len({rec["response"]["body_sha256"] for _, _, rec in trace if rec["event"] == "response"})
           == REQUESTS)

    bad = subprocess.run([JSONLW, "demo", "--in-process", "--capture", "some"], capture_output=True, text=True,
                         timeout=30)
    expect("a bad --capture exits 2", bad.returncode == 2, bad.stderr)

finish()
