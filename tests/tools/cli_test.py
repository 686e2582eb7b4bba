#!/usr/bin/env python3
"""Runs the built `jsonlw` executable: exit statuses, --json, and the --html page's
well-formedness (every tag closed in order, checked with html.parser; one <svg> per <figure>).

Usage: cli_test.py JSONLW DATA_DIR
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

from checks import expect, finish

JSONLW, DATA = sys.argv[1], sys.argv[2]
VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


def run(*args):
    p = subprocess.run([JSONLW, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


class Balance(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.counts = [], [], {}

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> at {self.getpos()} closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()


def check_html(name, path, figures):
    text = open(path, encoding="utf-8").read()
    b = Balance()
    b.feed(text)
    b.close()
    expect(f"{name}: html starts with a doctype", text.startswith("<!DOCTYPE html>"))
    expect(f"{name}: html tags balance", not b.errors and not b.stack, (b.errors[:3], b.stack[:3]))
    expect(f"{name}: one svg per figure", b.counts.get("svg", 0) == b.counts.get("figure", 0) == figures,
           (b.counts.get("svg"), b.counts.get("figure")))
    expect(f"{name}: no scripts or external resources",
           "<script" not in text and " src=" not in text and " href=" not in text)


with tempfile.TemporaryDirectory() as tmp:
    rc, out, _ = run("--help")
    expect("--help exits 0", rc == 0)
    for cmd in ("jsonlw demo", "jsonlw serve", "jsonlw report", "jsonlw validate", "jsonlw verify"):
        expect(f"--help documents {cmd}", cmd in out)
    expect("--help states exit statuses for all five", out.count("exit status:") == 5)
    expect("jsonlw verify without DIR exits 2", run("verify")[0] == 2)
    expect("jsonlw verify of a directory without a manifest exits 2",
           run("verify", os.path.join(DATA, "validate"))[0] == 2)
    rc, out, _ = run("--version")
    expect("--version exits 0", rc == 0 and out.startswith("jsonlw "))
    expect("an unknown command exits 2", run("frobnicate")[0] == 2)
    expect("no command exits 2", run()[0] == 2)

    v = os.path.join(DATA, "validate")
    expect("validate: all valid exits 0", run("validate", os.path.join(v, "good.jsonl"))[0] == 0)
    rc, out, _ = run("validate", os.path.join(v, "bad.jsonl"))
    expect("validate: malformed exits 1", rc == 1, rc)
    expect("validate: names file:line", "bad.jsonl:2: malformed" in out and "bad.jsonl:4: malformed" in out, out)
    rc, out, _ = run("validate", os.path.join(v, "torn.jsonl"))
    expect("validate: torn tail exits 2", rc == 2, rc)
    expect("validate: torn tail reported apart", "torn.jsonl:3: torn tail: 5 bytes" in out, out)
    expect("validate: --allow-torn-tail exits 0",
           run("validate", "--allow-torn-tail", os.path.join(v, "torn.jsonl"))[0] == 0)
    expect("validate: malformed wins over torn",
           run("validate", os.path.join(v, "torn.jsonl"), os.path.join(v, "bad.jsonl"))[0] == 1)
    expect("validate: missing file exits 3", run("validate", os.path.join(v, "nope.jsonl"))[0] == 3)
    expect("validate: no FILE exits 3", run("validate")[0] == 3)
    expect("validate: unknown option exits 3", run("validate", "--frob", "x")[0] == 3)

    # A directory: every *.jsonl and *.jsonl.open under it (recursively, sorted), nothing else.
    t = os.path.join(DATA, "validate_tree")
    rc, out, err = run("validate", t)
    expect("validate DIR: the torn tail of a *.jsonl.open file is not an error, exit 0", rc == 0 and err == "",
           (rc, err))
    hour = os.path.join(t, "2026-11-29T15")
    expect("validate DIR: a summary line per file, then the total", out == (
        f"{hour}/perf-000000.jsonl: 1 lines, 1 valid, 0 malformed, torn tail none\n"
        f"{hour}/perf-000001.jsonl.open:2: torn tail: 7 bytes after the last newline (still being written)\n"
        f"{hour}/perf-000001.jsonl.open: 1 lines, 1 valid, 0 malformed, torn tail 7 B (still being written)\n"
        f"{t}/closed.jsonl: 2 lines, 2 valid, 0 malformed, torn tail none\n"
        "3 files: 4 lines, 4 valid, 0 malformed, 0 torn tails (+1 still being written)\n"), out)
    rc, out, _ = run("validate", "--quiet", t)
    expect("validate DIR --quiet: nothing to say, nothing printed", rc == 0 and out == "", (rc, out))
    rc, out, _ = run("validate", v)
    expect("validate DIR: a malformed line in one of its files exits 1", rc == 1, rc)
    expect("validate DIR: the four files' summaries and the total", [l for l in out.splitlines() if "malformed:" not in l] == [
        f"{v}/bad.jsonl: 5 lines, 3 valid, 2 malformed, torn tail none",
        f"{v}/bad_utf8.jsonl: 2 lines, 1 valid, 1 malformed, torn tail none",
        f"{v}/good.jsonl: 3 lines, 3 valid, 0 malformed, torn tail none",
        f"{v}/torn.jsonl:3: torn tail: 5 bytes after the last newline",
        f"{v}/torn.jsonl: 2 lines, 2 valid, 0 malformed, torn tail 5 B",
        "4 files: 12 lines, 9 valid, 3 malformed, 1 torn tail"], out)
    closed = os.path.join(tmp, "closed")
    os.makedirs(os.path.join(closed, "2026-11-29T15"))
    shutil.copy(os.path.join(v, "torn.jsonl"), os.path.join(closed, "2026-11-29T15", "perf-000000.jsonl"))
    expect("validate DIR: a closed file's torn tail exits 2", run("validate", closed)[0] == 2)
    expect("validate DIR: ... 0 with --allow-torn-tail", run("validate", "--allow-torn-tail", closed)[0] == 0)
    os.rename(os.path.join(closed, "2026-11-29T15", "perf-000000.jsonl"),
              os.path.join(closed, "2026-11-29T15", "perf-000000.jsonl.open"))
    expect("validate DIR: ... and 0 once it is a *.jsonl.open file", run("validate", closed)[0] == 0)
    empty = os.path.join(tmp, "empty")
    os.makedirs(os.path.join(empty, "sub"))
    rc, out, err = run("validate", empty)
    expect("validate DIR: no *.jsonl under DIR exits 3", rc == 3 and out == "" and
           err == f"jsonlw validate: {empty}: no *.jsonl or *.jsonl.open file under it\n", (rc, out, err))

    page = os.path.join(tmp, "disagg.html")
    rc, out, err = run("report", os.path.join(DATA, "disagg"), "--html", page, "--json", "--quiet")
    expect("report: clean directory exits 0", rc == 0, (rc, err))
    doc = json.loads(out)
    spans = doc["perf_metrics"]["disagg"]
    names = ["disagg_preprocessing", "ctx_preprocessing", "ctx_queue", "ctx_processing", "ctx_postprocessing",
             "disagg_relay", "gen_preprocessing", "gen_queue_wait", "gen_kv_transfer", "gen_post_transfer",
             "gen_postprocessing", "disagg_postprocessing"]
    expect("report --json: spans are 1..12 ms",
           [spans[n]["median"] for n in names] == [float(k) for k in range(1, 13)],
           [spans[n]["median"] for n in names])
    expect("report --json: no samples is null, not 0", spans["tpot"]["median"] is None)
    expect("report --quiet: nothing on stderr", err == "", err)
    check_html("disagg", page, 4)

    page = os.path.join(tmp, "mixed.html")
    rc, out, err = run("report", os.path.join(DATA, "mixed"), "--html", page)
    expect("report: malformed lines exit 1", rc == 1, rc)
    expect("report: names the malformed line",
           "perf_metrics-server-node1-7-20260101T000000Z.jsonl:3: malformed" in out, out)
    check_html("mixed", page, 5)  # worker queue, TTFT, e2e, TPOT and the timeline

    expect("report: no DIR exits 2", run("report")[0] == 2)
    expect("report: missing DIR exits 2", run("report", os.path.join(tmp, "nope"))[0] == 2)
    expect("report: unknown option exits 2", run("report", DATA, "--frob")[0] == 2)
    expect("report: unwritable --html exits 2",
           run("report", os.path.join(DATA, "disagg"), "--quiet", "--html", os.path.join(tmp, "no", "x.html"))[0] == 2)
    rc, out, _ = run("report", "--bench-baseline", os.path.join(DATA, "disagg"))
    expect("report --bench-baseline prints both figures", rc == 0 and "iterate_many baseline" in out, out)

finish()
