#!/usr/bin/env python3
"""Runs `jsonlw demo` small and fast, then checks what it wrote with the other two commands:
all three record kinds are there, `validate` accepts every file, `report` counts exactly
what the writers' own counters (the demo's table) say they wrote, and every request's records
join by the traceparent its client sent. Then the shipping options:
--envelope with --rotate-bytes (numbered lines without gaps, rotated perf-metrics files,
writers.json agreeing with them) and --kafka (every line delivered and read back; skipped
when the binary was built without librdkafka), and --chain sha256 / hmac-sha256 (every line
chained, `jsonlw verify` accepts each writer's chain).

Usage: demo_test.py JSONLW
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


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out")
    args = [JSONLW, "demo", "--in-process", "--requests", "60", "--rate", "5000", "--step-us", "200",
            "--concurrency", "16", "--vocab", "4096", "--tokens", "4-24", "--first-gen-every", "5",
            "--backend", "cpu",
            # The stage's CPU workers waited for: a 2-core CI box under ASan can keep every
            # ring slot busy past the default 5 ms, and a dropped step is a null position,
            # counted (demo_overload_test.py checks that path); here every token must have its data.
            "--stage-wait-ms", "10000", "--out", out]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    expect("demo exits 0", p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    print(p.stdout)

    # The writers' counters, as the demo prints them: expected, written, dropped, unknown,
    # unaccounted, records/s, MB.
    written = {}
    expected_records = {"raw output": 60, "request trace": 120, "perf metrics": 60}
    for name in ("raw output", "request trace", "perf metrics"):
        m = re.search(rf"^{name}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s+\S+\s+\S+$",
                      p.stdout, re.M)
        expect(f"demo prints the {name} writer's counters", m is not None)
        if m:
            expected, wrote, dropped, unknown, unaccounted = map(int, m.groups())
            expect(f"{name}: every expected record was written", expected == wrote
                   == expected_records[name] and dropped == 0 and unknown == 0
                   and unaccounted == 0, m.group(0))
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
    tc = rep["trace_context"]
    expect("every request's perf, raw-output and request-trace lines join by traceparent",
           tc["requests"] == tc["joined"] == 60 and tc["not_joined"] == 0
           and tc["lines_with_traceparent"] == 4 * 60 and tc["lines_without_traceparent"] == 0
           and tc["invalid_traceparents"] == 0, json.dumps(tc))
    expect("... and the demo's report says so",
           "Trace context: 60 requests by traceparent, 60 joined" in p.stdout, p.stdout[-2000:])
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

    bad = subprocess.run([JSONLW, "demo", "--in-process", "--requests", "0"], capture_output=True, text=True,
                         timeout=30)
    expect("bad arguments exit 2", bad.returncode == 2, bad.stderr)
    bad = subprocess.run([JSONLW, "demo", "--in-process", "--rotate-bytes", "many"], capture_output=True,
                         text=True, timeout=30)
    expect("a bad --rotate-bytes exits 2", bad.returncode == 2, bad.stderr)

    # --envelope --rotate-bytes: numbered lines, rotated perf-metrics files, writers.json.
    out_env = os.path.join(tmp, "envelope")
    small = [JSONLW, "demo", "--in-process", "--requests", "150", "--rate", "5000", "--step-us", "200",
             "--concurrency", "16", "--vocab", "4096", "--tokens", "4-24", "--first-gen-every", "10",
             "--backend", "cpu"]
    p = subprocess.run(small + ["--out", out_env, "--envelope", "--rotate-bytes", "20000"],
                       capture_output=True, text=True, timeout=120)
    expect("demo --envelope --rotate-bytes exits 0", p.returncode == 0,
           f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    everything = glob.glob(os.path.join(out_env, "**", "*"), recursive=True)
    expect("no .open file is left after close", not [f for f in everything if f.endswith(".open")],
           str(everything))
    perf_files = sorted(glob.glob(os.path.join(out_env, "perf_metrics", "*.jsonl")))
    expect("the perf-metrics file rotated into several", len(perf_files) >= 3, str(perf_files))
    expect("... none over 20000 bytes", all(os.path.getsize(f) <= 20000 for f in perf_files),
           str([os.path.getsize(f) for f in perf_files]))
    seqs = {}  # writer -> its lines' seq values
    first_keys_ok = True
    for f in glob.glob(os.path.join(out_env, "**", "*.jsonl"), recursive=True):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                keys = list(rec)[:2]
                if keys != ["seq", "writer"] or not isinstance(rec["seq"], int):
                    first_keys_ok = False
                seqs.setdefault(rec.get("writer"), []).append(rec.get("seq"))
    expect("every line begins with seq and writer", first_keys_ok)
    with open(os.path.join(out_env, "writers.json"), encoding="utf-8") as fh:
        writers = json.load(fh)
    expect("writers.json has one entry per writer", sorted(w["kind"] for w in writers)
           == ["perf_metrics", "raw_output", "request_trace"], json.dumps(writers))
    expect("... and the lines' writer ids are its ids",
           set(seqs) == {w["writer"] for w in writers}, f"{set(seqs)} vs {writers}")
    for w in writers:
        got = sorted(seqs.get(w["writer"], []))
        expect(f'{w["kind"]}: count(*) == written', len(got) == w["written"],
               f'{len(got)} vs {w["written"]}')
        expect(f'{w["kind"]}: max(seq) + 1 - count(*) == seq_gaps',
               got and got[-1] + 1 - len(got) == w["seq_gaps"], json.dumps(w))
        if w["seq_gaps"] == 0:
            expect(f'{w["kind"]}: seq is 0..n-1 without gaps', got == list(range(len(got))))
        expect(f'{w["kind"]}: nothing dropped or unknown in a small run',
               w["seq_gaps"] == 0 and w["unknown"] == 0, json.dumps(w))
    perf = next((w for w in writers if w["kind"] == "perf_metrics"), {})
    expect("writers.json lists the perf-metrics files",
           sorted(perf.get("files", [])) == [os.path.relpath(f, out_env) for f in perf_files],
           f'{perf.get("files")} vs {perf_files}')
    r = subprocess.run([JSONLW, "report", out_env, "--json", "--quiet"], capture_output=True,
                       text=True, timeout=60)
    expect("report reads the enveloped, rotated files", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        rep = json.loads(r.stdout)
        expect("... and counts every perf record", rep["perf_metrics"]["records"]["worker"] == 150
               and rep["malformed"] == 0, json.dumps(rep["perf_metrics"]["records"]))
        expect("... and joins every request by traceparent through the envelope",
               rep["trace_context"]["joined"] == rep["trace_context"]["requests"] == 150,
               json.dumps(rep["trace_context"]))

    # --kafka: every line through a KafkaSink to the mock cluster and back.
    out_kafka = os.path.join(tmp, "kafka")
    p = subprocess.run(small + ["--out", out_kafka, "--requests", "60", "--kafka"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode == 2 and "built without Kafka" in p.stderr:
        print("skip --kafka cases: " + p.stderr.strip())
        expect("... and says so in one line", p.stderr.count("\n") == 1, p.stderr)
    else:
        expect("demo --kafka exits 0", p.returncode == 0,
               f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        rows = re.findall(r"^jsonlw\.(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)$",
                          p.stdout, re.M)
        expect("a Kafka row per writer", sorted(r[0] for r in rows)
               == ["perf_metrics", "raw_output", "request_trace"], p.stdout)
        expected = {"raw_output": 60, "request_trace": 120, "perf_metrics": 60}
        for kind, submitted, delivered, failed, consumed, same in rows:
            expect(f"kafka {kind}: delivered == submitted == consumed == lines written",
                   int(submitted) == int(delivered) == int(consumed) == expected[kind]
                   and int(failed) == 0 and same == "yes",
                   f"{submitted} {delivered} {failed} {consumed} {same}")

    # --chain sha256 (and hmac-sha256 with a key file): every line of all three writers ends
    # with its chain value, report still reads them, and jsonlw verify accepts each writer's
    # chain (docs/chain.md).
    key = os.path.join(tmp, "chain.key")
    with open(key, "w") as f:
        f.write("demo key\n")
    for mode, extra in (("sha256", []), ("hmac-sha256", ["--chain-key", key])):
        out_chain = os.path.join(tmp, "chain-" + mode)
        p = subprocess.run(small + ["--out", out_chain, "--requests", "40", "--chain", mode,
                                    "--rotate-bytes", "20000", "--retain-files", "2"] + extra,
                           capture_output=True, text=True, timeout=120)
        expect(f"demo --chain {mode} exits 0", p.returncode == 0,
               f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        lines = [l for f in glob.glob(os.path.join(out_chain, "**", "*.jsonl"), recursive=True)
                 for l in open(f)]
        expect(f"--chain {mode}: every line ends with its chain value",
               lines and all(re.search(r',"chain":"[0-9a-f]{64}"}$', l) for l in lines))
        v = subprocess.run([JSONLW, "verify", out_chain] + (["--key", key] if extra else []),
                           capture_output=True, text=True, timeout=60)
        expect(f"verify accepts the --chain {mode} output", v.returncode == 0
               and v.stdout.count(f": {mode} chain verified: ") == 3, v.stdout + v.stderr)
        if extra:
            v = subprocess.run([JSONLW, "verify", out_chain], capture_output=True, text=True,
                               timeout=60)
            expect("verify without --key exits 2", v.returncode == 2, v.stdout + v.stderr)

finish()
