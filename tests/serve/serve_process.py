"""`jsonlw serve` as a child process for the tests of real clients (sdk_test.py,
curl_test.py, h2load_test.py): started on 127.0.0.1 port 0, its port read from the line it
prints first, stopped with SIGINT, its accounting table parsed, its files read back.
Every wait has a deadline; none waits out a time.
"""
import glob
import json
import os
import re
import selectors
import signal
import subprocess
import time

DEADLINE = 60  # seconds: a generous bound for an event that should come within one
WRITERS = ("raw output", "request trace", "perf metrics")
KIND_DIRS = {"raw output": "raw_output", "request trace": "request_trace",
             "perf metrics": "perf_metrics"}


class Failures:
    """Checks that print one line each and remember what failed."""

    def __init__(self):
        self.failed = []

    def expect(self, name, cond, detail=""):
        print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"), flush=True)
        if not cond:
            self.failed.append(name)
        return cond

    def equal(self, name, got, want):
        return self.expect(name, got == want, f"got {got!r}, want {want!r}")

    def exit_status(self):
        if self.failed:
            print(f"{len(self.failed)} check(s) failed: {', '.join(self.failed)}")
            return 1
        return 0


class Server:
    """One `jsonlw serve --listen 127.0.0.1:0 --out OUT ARGS...`."""

    def __init__(self, jsonlw, out, *args):
        self.out = out
        self.stderr_path = out.rstrip("/") + ".stderr"
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        self.stderr = open(self.stderr_path, "wb")
        self.p = subprocess.Popen([jsonlw, "serve", "--listen", "127.0.0.1:0", "--out", out, *args],
                                  stdout=subprocess.PIPE, stderr=self.stderr)
        self.first = self._first_line()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.first)
        if not m:
            self.kill()
            raise RuntimeError(f"jsonlw serve did not say where it listens: {self.first!r}; "
                               f"stderr: {self.stderr_text()}")
        self.port = int(m.group(1))
        self.base = f"http://127.0.0.1:{self.port}"
        self.summary = ""
        self.returncode = None

    def _first_line(self):
        fd = self.p.stdout.fileno()
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        data = b""
        until = time.monotonic() + DEADLINE
        try:
            while b"\n" not in data:
                left = until - time.monotonic()
                if left <= 0 or not sel.select(timeout=left):
                    break
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                data += chunk
        finally:
            sel.close()
        line, _, self._rest = data.partition(b"\n")
        return line.decode(errors="replace")

    def stop(self, timeout=DEADLINE):
        """SIGINT, then the rest of stdout (the accounting) and the exit status."""
        self.p.send_signal(signal.SIGINT)
        try:
            rest, _ = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(f"jsonlw serve did not exit within {timeout} s of SIGINT")
        finally:
            self.stderr.close()
        self.summary = (self._rest + rest).decode(errors="replace")
        self.returncode = self.p.returncode
        return self.returncode

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=DEADLINE)
        if not self.stderr.closed:
            self.stderr.close()

    def stderr_text(self):
        if not self.stderr.closed:
            self.stderr.flush()
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def accounting(self):
        """{writer: {"expected", "written", "dropped", "unknown", "unaccounted"}} from the
        table the server prints when it stops."""
        rows = {}
        lines = self.summary.splitlines()
        start = next((i for i, l in enumerate(lines)
                      if l.startswith("writer") and "expected" in l and "unaccounted" in l), None)
        if start is None:
            return rows
        for line in lines[start + 1:]:
            if line.startswith("accounting:"):
                break
            m = re.match(r"(raw output|request trace|perf metrics)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)",
                         line)
            if m:
                rows[m.group(1)] = dict(zip(("expected", "written", "dropped", "unknown", "unaccounted"),
                                            map(int, m.groups()[1:])))
        return rows

    def files(self, writer, pattern="*.jsonl"):
        return sorted(glob.glob(os.path.join(self.out, KIND_DIRS[writer], "**", pattern),
                                recursive=True))

    def lines(self, writer, pattern="*.jsonl"):
        """Every line of the writer's files, parsed (a line that is not JSON raises)."""
        out = []
        for path in self.files(writer, pattern):
            with open(path, "rb") as f:
                data = f.read()
            if data and not data.endswith(b"\n"):
                raise RuntimeError(f"{path} does not end on a line boundary")
            out.extend(json.loads(l) for l in data.splitlines())
        return out


def check_accounting(f, server, expected):
    """The stop table: per writer, expected as given, all of it written, nothing unaccounted."""
    table = server.accounting()
    for w in WRITERS:
        row = table.get(w)
        if not f.expect(f"the server's table has a '{w}' row", row is not None, server.summary):
            continue
        if w in expected:
            f.equal(f"{w}: expected", row["expected"], expected[w])
        f.equal(f"{w}: written == expected", row["written"], row["expected"])
        f.equal(f"{w}: dropped, unknown, unaccounted", (row["dropped"], row["unknown"], row["unaccounted"]),
                (0, 0, 0))
    return table
