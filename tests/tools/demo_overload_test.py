#!/usr/bin/env python3
"""`jsonlw demo` past its load, scaled down: a slow server (--server-us) behind a two-slot
snapshot ring makes the stage drop steps, a slow disk (--slow-disk-us) behind two-record
queues makes the raw-output and request-trace writers drop records. Whatever was dropped,
every record the demo should have produced is accounted for, exactly:

- per writer, expected (per request: one request line, one response line, one perf record,
  one raw output) == written + dropped + unknown, and the demo says so and exits 3 (drops,
  all counted), not 1 (records unaccounted for);
- with --stage-wait-ms the engine waits for a slot instead, and nothing is dropped;
- every output that was written has all of its tokens (text and ids come from the engine),
  each raw record once; the positions of dropped steps are null and counted in
  logprobs_missing, and their sum over what was written never exceeds the writer's
  tokens_without_data, which equals the rows the stage dropped.

Usage: demo_overload_test.py JSONLW
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
REQUESTS = 200


def writer_rows(stdout):
    """writer -> (expected, written, dropped, unknown, unaccounted) from the demo's table."""
    rows = {}
    for name in ("raw output", "request trace", "perf metrics"):
        m = re.search(rf"^{name}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s+\S+\s+\S+$", stdout, re.M)
        if m:
            rows[name] = tuple(map(int, m.groups()))
    return rows


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out")
    args = [JSONLW, "demo", "--in-process", "--requests", str(REQUESTS), "--rate", "100000", "--step-us", "0",
            "--concurrency", "16", "--vocab", "2048", "--tokens", "4-16", "--backend", "cpu",
            "--first-gen-every", "10",
            "--ring-slots", "2", "--server-us", "2000",          # the stage drops steps
            "--stage-wait-ms", "0",                              # ... at once
            "--writer-queue", "2", "--slow-disk-us", "20000",    # the writers drop records
            "--out", out]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    print(p.stdout)
    expect("demo exits 3: records dropped, every one counted", p.returncode == 3,
           f"exit {p.returncode}\n{p.stderr}")
    expect("demo says every record is accounted for",
           "accounting: every record written or dropped with a counted reason" in p.stdout)

    rows = writer_rows(p.stdout)
    expected = {"raw output": REQUESTS, "request trace": 2 * REQUESTS, "perf metrics": REQUESTS}
    for name, want in expected.items():
        expect(f"{name}: a row in the table", name in rows, p.stdout)
        if name not in rows:
            continue
        exp, written, dropped, unknown, unaccounted = rows[name]
        expect(f"{name}: expected is {want}", exp == want, str(rows[name]))
        expect(f"{name}: expected == written + dropped + unknown", exp == written + dropped + unknown,
               str(rows[name]))
        expect(f"{name}: unaccounted 0", unaccounted == 0, str(rows[name]))
    for name in ("raw output", "request trace"):
        expect(f"{name}: the slow disk made it drop records (queue_full)",
               rows.get(name, (0, 0, 0))[2] > 0 and
               re.search(rf"^{name}.*\n  dropped by reason: queue_full [1-9]", p.stdout, re.M)
               is not None, str(rows.get(name)))

    m = re.search(r"snapshot stage \(cpu\): (\d+) steps, (\d+) captured \((\d+) rows\), (\d+) dropped "
                  r"\(\S+ %, (\d+) rows\)", p.stdout)
    expect("the stage's line", m is not None, p.stdout)
    steps, captured, captured_rows, dropped_steps, dropped_rows = map(int, m.groups()) if m else (0,) * 5
    expect("the stage dropped steps", dropped_steps > 0, m.group(0) if m else "")
    expect("steps == captured + dropped", steps == captured + dropped_steps, m.group(0) if m else "")
    t = re.search(r"per-token data: (\d+) token positions written without it .*?, (\d+) rows of "
                  r"results that found no output", p.stdout)
    expect("the per-token data line", t is not None, p.stdout)
    without, orphaned = map(int, t.groups()) if t else (-1, -1)
    expect("positions without per-token data == rows the stage dropped", without == dropped_rows,
           f"{without} vs {dropped_rows}")
    expect("no stage results went astray", orphaned == 0, str(orphaned))

    # The files: one record per written output, every token there, missing positions counted.
    records = []
    for f in glob.glob(os.path.join(out, "raw_output", "**", "*.jsonl"), recursive=True):
        with open(f, encoding="utf-8") as fh:
            records += [json.loads(line) for line in fh]
    raw_written = rows.get("raw output", (0, 0))[1]
    expect("raw-output lines == the writer's written", len(records) == raw_written,
           f"{len(records)} vs {raw_written}")
    ids = [r["request_id"] for r in records]
    expect("each output has one record at most", len(ids) == len(set(ids)))
    expect("no record is partial (every output got its final chunk)",
           not [r for r in records if r.get("partial")])
    tokens_ok = all(4 <= r["num_output_tokens"] <= 16 and len(r["token_ids"]) == r["num_output_tokens"]
                    and len(r["frames"]) == r["num_output_tokens"] for r in records)
    expect("every written output has all its tokens and text frames", tokens_ok)
    missing_sum = 0
    counted_ok = True
    for r in records:
        lp = r["logprobs"]
        # ranks and top_logprobs are left out of a record none of whose steps was captured
        ranks = r.get("ranks", [None] * len(lp))
        top = r.get("top_logprobs", [[]] * len(lp))
        nulls = sum(1 for i in range(len(lp)) if lp[i] is None and ranks[i] is None and top[i] == [])
        if nulls != r.get("logprobs_missing", 0) or len(lp) != r["num_output_tokens"]:
            counted_ok = False
        missing_sum += r.get("logprobs_missing", 0)
    expect("each record's logprobs_missing counts exactly its null positions", counted_ok)
    expect("some written record has missing positions", missing_sum > 0, str(missing_sum))
    expect("missing positions written <= positions without data (dropped records had some)",
           missing_sum <= without, f"{missing_sum} vs {without}")

    rep = subprocess.run([JSONLW, "report", out, "--json", "--quiet"], capture_output=True,
                         text=True, timeout=60)
    if rep.returncode == 0:
        raw = json.loads(rep.stdout)["raw_output"]
        expect("report counts the missing positions", raw["logprobs"]["missing_positions"] == missing_sum,
               json.dumps(raw["logprobs"]))
    else:
        expect("report reads the files", False, rep.stderr)

    # The same slow server with --stage-wait-ms: the engine stalls for a slot instead of
    # dropping, so no token lacks its per-token data.
    out_wait = os.path.join(tmp, "wait")
    waiting = list(args)
    for flag in ("--writer-queue", "--slow-disk-us"):  # a flag and its value
        i = waiting.index(flag)
        del waiting[i:i + 2]
    waiting[waiting.index("--out") + 1] = out_wait
    p = subprocess.run(waiting + ["--stage-wait-ms", "1000"], capture_output=True, text=True,
                       timeout=300)
    expect("with --stage-wait-ms the demo exits 0: nothing dropped", p.returncode == 0,
           f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    m = re.search(r"\), (\d+) dropped \(\S+ %, (\d+) rows\); (\d+) waited for a slot .*?, (\d+) still "
                  r"dropped\)", p.stdout)
    expect("the stage's line with the waits", m is not None, p.stdout)
    if m:
        dropped, rows_dropped, waits, timeouts = map(int, m.groups())
        expect("no step dropped, the engine waited instead", dropped == 0 and rows_dropped == 0
               and waits > 0 and timeouts == 0, m.group(0))
    expect("no token without per-token data",
           "per-token data: 0 token positions written without it" in p.stdout, p.stdout)

finish()
