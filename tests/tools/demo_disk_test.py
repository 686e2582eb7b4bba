#!/usr/bin/env python3
"""What `jsonlw demo` counts as written is on disk where a reader finds it.
Each case runs the demo with a fault made for real while it writes — its output folder
removed (rm -rf), the perf-metrics file moved away, a full disk (a small tmpfs, mounted here;
skipped where mount is refused) that frees up again — or with retention by count and by
bytes; then, per writer, checks the demo's "on disk" table against the lines this script
counts itself: on disk == written - deleted - removed - moved, moved lines found where they
were moved, no torn line, unaccounted 0. Faults wait for their event (a file with lines, a
"No space left" warning), never for a time.

Usage: demo_disk_test.py JSONLW
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from checks import expect, finish

JSONLW = sys.argv[1]
DEADLINE = 60  # seconds: generous bound for an event that should come within one
NAMES = {"raw output": "raw_output", "request trace": "request_trace",
         "perf metrics": "perf_metrics"}


def demo_args(out, requests, rate, *extra):
    return [JSONLW, "demo", "--in-process", "--requests", str(requests), "--rate", str(rate), "--step-us", "200",
            "--concurrency", "16", "--vocab", "4096", "--tokens", "4-24", "--first-gen-every", "0",
            "--backend", "cpu", "--out", out, *extra]


class Demo:
    """The demo running in the background; stderr collected as it comes."""

    def __init__(self, args):
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err = []
        self.out = ""
        self.t_err = threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True)
        self.t_err.start()

    def wait(self):
        self.out = self.p.stdout.read()
        self.p.wait(timeout=300)
        self.t_err.join(timeout=10)
        return self.p.returncode


def wait_for(cond, what):
    until = time.monotonic() + DEADLINE
    while time.monotonic() < until:
        if cond():
            return True
        time.sleep(0.005)  # polling for the event, not waiting out a time
    expect(f"{what} within {DEADLINE} s", False)
    return False


def lines_in(paths):
    n = 0
    for f in paths:
        with open(f, "rb") as fh:
            data = fh.read()
        n += data.count(b"\n")
        expect(f"{f} ends on a line boundary", data == b"" or data.endswith(b"\n"))
    return n


def files_of(out, kind):
    return sorted(glob.glob(os.path.join(out, kind, "**", "*.jsonl*"), recursive=True))


def disk_table(stdout):
    """The demo's "on disk" rows: name -> (written, on disk, deleted, removed, moved,
    reappended, rolled back, unaccounted)."""
    rows = {}
    for name in NAMES:
        m = re.search(rf"^  {name}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)$",
                      stdout, re.M)
        expect(f"the demo prints {name}'s on-disk row", m is not None, stdout)
        if m:
            rows[name] = tuple(map(int, m.groups()))
    return rows


def check_disk(case, out, stdout, moved_lines=None):
    """Per writer: the table adds up, and this script finds exactly 'on disk' lines."""
    rows = disk_table(stdout)
    for name, kind in NAMES.items():
        if name not in rows:
            continue
        written, on_disk, deleted, removed, moved, _, _, unaccounted = rows[name]
        found = lines_in(files_of(out, kind))
        expect(f"{case}: {name}: unaccounted 0", unaccounted == 0, rows[name])
        expect(f"{case}: {name}: on disk == written - deleted - removed - moved ({on_disk})",
               on_disk == written - deleted - removed - moved, rows[name])
        expect(f"{case}: {name}: lines found == on disk ({found})", found == on_disk, rows[name])
        if moved_lines is not None and kind in moved_lines:
            expect(f"{case}: {name}: moved == lines where they were moved ({moved_lines[kind]})",
                   moved == moved_lines[kind], rows[name])
    return rows


with tempfile.TemporaryDirectory() as tmp:
    # 1. The output folder removed while the writers write.
    out = os.path.join(tmp, "removed")
    d = Demo(demo_args(out, 3000, 1500))
    wait_for(lambda: any(os.path.getsize(f) > 0 for f in files_of(out, "raw_output")),
             "the raw-output file has lines")
    shutil.rmtree(out, ignore_errors=True)
    rc = d.wait()
    print(d.out[d.out.find("on disk"):d.out.find("files under")])
    expect("folder removed: the demo exits 3 (records removed by someone else, counted)", rc == 3,
           f"exit {rc}\n{d.out}\n{''.join(d.err[-20:])}")
    rows = check_disk("folder removed", out, d.out)
    expect("folder removed: a removal was noticed", sum(r[3] for r in rows.values()) > 0, rows)
    expect("folder removed: logged once per writer",
           sum("was removed" in e for e in d.err) <= 3, "".join(d.err))

    # 2. The perf-metrics file moved away (out of the demo's folder) while it is written.
    out = os.path.join(tmp, "moved")
    moved_to = os.path.join(tmp, "moved-away.jsonl")
    d = Demo(demo_args(out, 3000, 1500))
    wait_for(lambda: any(os.path.getsize(f) > 0 for f in files_of(out, "perf_metrics")),
             "the perf-metrics file has lines")
    os.rename(files_of(out, "perf_metrics")[0], moved_to)
    rc = d.wait()
    expect("file moved: the demo exits 3", rc == 3, f"exit {rc}\n{d.out}")
    with open(moved_to, "rb") as fh:
        moved_n = fh.read().count(b"\n")
    rows = check_disk("file moved", out, d.out, {"perf_metrics": moved_n})
    if "perf metrics" in rows:
        expect("file moved: written == lines in the folder + lines where the file went",
               rows["perf metrics"][0] == rows["perf metrics"][1] + moved_n, rows["perf metrics"])

    # 3. Retention by count (the perf-metrics file rotated every ~4 KB) and by bytes.
    out = os.path.join(tmp, "count")
    p = subprocess.run(demo_args(out, 400, 4000, "--rotate-bytes", "4000", "--retain-files", "3"),
                       capture_output=True, text=True, timeout=300)
    expect("retain-files: the demo exits 0", p.returncode == 0, f"exit {p.returncode}\n{p.stdout}")
    print(p.stdout[p.stdout.find("on disk"):p.stdout.find("snapshot stage")])
    rows = check_disk("retain-files 3", out, p.stdout)
    expect("retain-files: 3 perf-metrics files remain", len(files_of(out, "perf_metrics")) == 3,
           files_of(out, "perf_metrics"))
    if "perf metrics" in rows:
        expect("retain-files: perf-metrics records were deleted", rows["perf metrics"][2] > 0,
               rows["perf metrics"])

    out = os.path.join(tmp, "bytes")
    p = subprocess.run(demo_args(out, 400, 4000, "--rotate-bytes", "4000", "--retain-bytes",
                                 "10000"), capture_output=True, text=True, timeout=300)
    expect("retain-bytes: the demo exits 0", p.returncode == 0, f"exit {p.returncode}\n{p.stdout}")
    check_disk("retain-bytes 10000", out, p.stdout)
    for kind in NAMES.values():
        total = sum(os.path.getsize(f) for f in files_of(out, kind))
        expect(f"retain-bytes: {kind} keeps at most 10000 bytes ({total})", total <= 10000)

    # 4. A full disk that frees up again: a 4 MiB tmpfs, filled but for 256 KiB by another file
    # that is deleted once the writers report ENOSPC. 500 requests write about 2.7 MiB, so
    # once the filler is gone there is room for every writer, whichever appends first.
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt],
                       capture_output=True, text=True)
    if m.returncode != 0:
        print(f"skip full disk: mount -t tmpfs refused ({m.stderr.strip()})")
    else:
        try:
            filler = os.path.join(mnt, "filler")
            with open(filler, "wb") as fh:
                fh.write(b"\0" * (4 * 1024 * 1024 - 256 * 1024))
            out = os.path.join(mnt, "out")
            d = Demo(demo_args(out, 500, 500))
            wait_for(lambda: any("No space left" in e for e in d.err),
                     "a writer reports ENOSPC")
            os.remove(filler)
            rc = d.wait()
            print(d.out[d.out.find("\nwriter"):d.out.find("files under")])
            expect("full disk: the demo exits 3 (records dropped as write_error, counted)",
                   rc == 3, f"exit {rc}\n{d.out}")
            rows = check_disk("full disk", out, d.out)
            print("full disk: appends cut back per writer:", {n: r[6] for n, r in rows.items()})
            expect("full disk: writing resumed once space came back",
                   all(r[1] > 0 for r in rows.values()), rows)
        finally:
            subprocess.run(["umount", mnt])

finish()
