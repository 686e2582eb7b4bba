#!/usr/bin/env python3
"""docs/writers.md's field tables against what the writers emit.

Runs writer_keys (which writes records that set every field, with the real writers) and, per
table marked `<!-- fields: NAME -->` in docs/writers.md, compares:
  - every key emitted in those lines (at any depth) must appear in the table, in backticks;
  - every key named in the table's first column must be emitted by some line.
Usage: check_writer_keys.py WRITER_KEYS_EXE DOCS_WRITERS_MD
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

# Keys documented ahead of the writer change that emits them (none is required to appear).
NOT_YET_EMITTED = {"logprobs_missing"}
# A table whose nested objects are "as in" another table: those keys may be documented there.
INHERITS = {"perf_metrics.disagg": "perf_metrics.worker"}
MARKER = re.compile(r"^<!--\s*fields:\s*(\S+)\s*-->\s*$")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def keys(value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            keys(v, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, out)
    return out


def tables(doc):
    """{name: (first-column identifiers, identifiers anywhere in backticks)}"""
    result, lines, i = {}, doc.read_text(encoding="utf-8").split("\n"), 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and not lines[i].startswith("|"):
            i += 1
        first, anywhere = set(), set()
        for row in lines[i + 2:]:  # after the header and the |---| line
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            for span in re.findall(r"`([^`]*)`", cells[0]):
                for part in re.split(r"[,\s]+", span.replace("…", "").replace("step:", "")):
                    first.update(p for p in part.strip(".").split(".") if IDENT.fullmatch(p))
            for span in re.findall(r"`([^`]*)`", row):
                anywhere.update(IDENT.findall(span))
        result[m.group(1)] = (first, anywhere | first)
        i += 1
    return result


def main():
    exe, doc = sys.argv[1], pathlib.Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([exe, d], check=True)
        emitted = {n: set() for n in ("perf_metrics.worker", "perf_metrics.disagg", "raw_output",
                                       "request_trace.request", "request_trace.response")}
        root = pathlib.Path(d)
        for f in sorted(root.rglob("*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                if f.is_relative_to(root / "perf"):
                    kind = "perf_metrics.disagg" if "ctx_server" in rec else "perf_metrics.worker"
                elif f.is_relative_to(root / "raw"):
                    kind = "raw_output"
                else:
                    kind = "request_trace." + rec["event"]
                keys(rec, emitted[kind])
    documented = tables(doc)
    errors = []
    for name, got in emitted.items():
        if name not in documented:
            errors.append(f"{doc}: no table marked <!-- fields: {name} -->")
            continue
        first, anywhere = documented[name]
        if name in INHERITS and INHERITS[name] in documented:
            anywhere = anywhere | documented[INHERITS[name]][1]
        for k in sorted(got - anywhere):
            errors.append(f"{name}: the writer emits `{k}`, which its table does not document")
        for k in sorted(first - got - NOT_YET_EMITTED):
            errors.append(f"{name}: the table documents `{k}`, which the writer never emitted")
        print(f"{name}: {len(got)} keys emitted, {len(first)} documented in the first column")
    for e in errors:
        print("FAIL " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
