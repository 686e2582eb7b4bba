#!/usr/bin/env python3
"""`jsonlw serve` against bad input over raw loopback sockets: one server with small limits
takes malformed request lines, a header block and a body over their limits, a body that is
not JSON, a field of the wrong type, an unknown route, a wrong method, a client that leaves
in the middle of a stream, one that leaves in the middle of its request, one that trickles
its header slower than --header-timeout-ms, and 1,000 idle connections held open while
normal requests are timed. Each case: the exact status line and OpenAI-style error body (or
the clean close), a normal request on another connection right after, and, once SIGINT has
stopped the server, what the request trace (and for a completion the raw output and perf
metrics) holds for it. The server's accounting must then match what was sent exactly:
requests, connections, responses by status, and one request line and one response line per
request begun (an idle connection that sent nothing is not a request).

Usage: bad_input_test.py JSONLW
"""
import glob
import json
import math
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

JSONLW = sys.argv[1]
MODEL = "jsonlw-demo"
HEADER_LIMIT = 2048
BODY_LIMIT = 4096
HEADER_TIMEOUT_MS = 1500
IDLE_CONNECTIONS = 1000
TIMED_REQUESTS = 20
STREAM_MAX_TOKENS = 200
DEADLINE_S = 20  # any one exchange; generous: the machine may be busy

failures = []


def expect(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"))
    if not cond:
        failures.append(name)
    return cond


class Conn:
    """One client socket with a read buffer; every read is bounded by the connection's
    deadline (the socket's timeout is what is left of it)."""

    def __init__(self, port, deadline_s=DEADLINE_S):
        self.deadline = time.monotonic() + deadline_s
        self.s = socket.create_connection(("127.0.0.1", port), timeout=deadline_s)
        self.buf = b""
        self.eof = False

    def send(self, data):
        self.s.sendall(data)

    def fill(self):
        """Reads what comes next; False at the peer's close (or a reset after it)."""
        if self.eof:
            return False
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        self.s.settimeout(left)
        try:
            d = self.s.recv(65536)
        except ConnectionResetError:
            d = b""
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def take_until(self, marker):
        for _ in range(100_000):
            i = self.buf.find(marker)
            if i >= 0:
                out, self.buf = self.buf[:i + len(marker)], self.buf[i + len(marker):]
                return out
            if not self.fill():
                raise EOFError(f"closed before {marker!r}; have {self.buf[:200]!r}")
        raise RuntimeError("too many reads")

    def take(self, n):
        for _ in range(100_000):
            if len(self.buf) >= n:
                out, self.buf = self.buf[:n], self.buf[n:]
                return out
            if not self.fill():
                raise EOFError(f"closed with {len(self.buf)} of {n} bytes")
        raise RuntimeError("too many reads")

    def response(self):
        """(status line, {lower-case header: value}, body bytes) of the next response."""
        head = self.take_until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        headers = {}
        for h in lines[1:]:
            if h:
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
        if "content-length" in headers:
            body = self.take(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            body = b""
            for _ in range(100_000):
                size = int(self.take_until(b"\r\n")[:-2], 16)
                chunk = self.take(size + 2)[:-2]
                if size == 0:
                    break
                body += chunk
        else:
            body = b""
        return lines[0], headers, body

    def closed_clean(self):
        """True when the server closed the connection with nothing more sent."""
        for _ in range(100_000):
            if not self.fill():
                return self.buf == b""
        return False

    def close(self):
        self.s.close()


def start_server(out, stderr):
    args = [JSONLW, "serve", "--listen", "127.0.0.1:0", "--header-limit", str(HEADER_LIMIT),
            "--body-limit", str(BODY_LIMIT), "--header-timeout-ms", str(HEADER_TIMEOUT_MS),
            "--idle-timeout-ms", "600000", "--backend", "cpu", "--vocab", "4096",
            "--step-us", "2000", "--concurrency", "64", "--tokens", "4-16", "--out", out]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr)
    first = b""
    deadline = time.monotonic() + 30
    while not first.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
            p.kill()
            sys.exit(f"FAIL the server did not print its address within 30 s: {first!r}")
        b = os.read(p.stdout.fileno(), 1)
        if not b:
            sys.exit(f"FAIL the server exited before listening: {first!r}")
        first += b
    m = re.match(rb"jsonlw serve: listening on http://127\.0\.0\.1:(\d+) ", first)
    if not m:
        p.kill()
        sys.exit(f"FAIL unexpected first line: {first!r}")
    return p, int(m.group(1)), first.decode()


def readable_within(sock, seconds):
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(int(seconds * 1000)))


def trace_id_of(headers):
    tp = headers.get("traceparent", "")
    parts = tp.split("-")
    return parts[1] if len(parts) == 4 else None


def error_of(body):
    try:
        return json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return None


def post(route, body, extra=b"", close=True):
    return (b"POST " + route + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + extra + (b"Connection: close\r\n" if close else b"")
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def completion_body(max_tokens, stream=False):
    return json.dumps({"model": MODEL, "prompt": "hello there", "max_tokens": max_tokens,
                       "stream": stream}).encode()


def p99(xs):
    s = sorted(xs)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)]


def main():
    # 1,000 idle sockets plus the rest: more than the usual soft limit of descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = IDLE_CONNECTIONS + 256
    if soft < want and (hard == resource.RLIM_INFINITY or hard >= want):
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        with open(os.path.join(tmp, "stderr"), "w+b") as stderr:
            run(tmp, out, stderr)
    if failures:
        print(f"{len(failures)} failed: {failures}")
        sys.exit(1)


def run(tmp, out, stderr):
    server, port, first_line = start_server(out, stderr)
    print(first_line.strip())

    sent = {"requests": 0, "connections": 0, "completions": 0}
    by_status = {}
    cases = []  # (name, input, status, trace id or None, trace check)

    def connect():
        sent["connections"] += 1
        return Conn(port)

    def began(status):
        sent["requests"] += 1
        by_status[status] = by_status.get(status, 0) + 1

    def normal(after):
        """A normal completion on a new connection: 200 and 4 tokens; its latency."""
        t0 = time.monotonic()
        c = connect()
        c.send(post(b"/v1/completions", completion_body(4)))
        began(200)
        sent["completions"] += 1
        status, headers, body = c.response()
        dt = time.monotonic() - t0
        c.close()
        ok = status == "HTTP/1.1 200 OK"
        if ok:
            doc = json.loads(body)
            ok = (doc["object"] == "text_completion" and doc["model"] == MODEL
                  and doc["usage"]["completion_tokens"] == 4
                  and doc["choices"][0]["finish_reason"] == "length")
        if not ok:
            expect(f"a normal request after {after} succeeds", False, f"{status} {body[:300]!r}")
        return dt

    def rejected(name, shown, data, status_line, error, loc, close_expected):
        """Sends `data` on a new connection; the response must be `status_line` with the
        error body `error` (its message checked when it is a string, else by the callable),
        then a clean close when close_expected. Returns the response's trace id."""
        c = connect()
        c.send(data)
        status = int(status_line.split()[1])
        began(status)
        line, headers, body = c.response()
        expect(f"{name}: {status_line}", line == status_line, line)
        got = error_of(body)
        want = dict(error)
        msg_ok = True
        if callable(want.get("message")):
            msg_ok = got is not None and want.pop("message")(got.get("message", ""))
            got = {k: v for k, v in (got or {}).items() if k != "message"}
        shown_error = {k: ("<checked>" if callable(v) else v) for k, v in error.items()}
        expect(f"{name}: the error body is {json.dumps(shown_error)}",
               got == want and msg_ok, body[:400])
        expect(f"{name}: content-type application/json, length exact",
               headers.get("content-type") == "application/json"
               and headers.get("content-length") == str(len(body)), headers)
        if close_expected:
            expect(f"{name}: Connection: close, then a clean close",
                   headers.get("connection") == "close" and c.closed_clean(), headers)
        c.close()
        normal(name)
        tid = trace_id_of(headers)
        expect(f"{name}: the response has a traceparent", tid is not None, headers)
        cases.append({"name": name, "input": shown, "status": line, "tid": tid, "loc": loc,
                      "error": error})
        return tid

    normal("start")

    # (a) malformed request lines.
    bad_http = {"type": "invalid_request_error", "param": None, "code": "bad_request"}
    rejected("garbage request line", "GARBAGE\\r\\n\\r\\n", b"GARBAGE\r\n\r\n",
             "HTTP/1.1 400 Bad Request",
             {"message": "malformed HTTP request: bad method", **bad_http}, "http", True)
    rejected("unknown HTTP version", "GET / HTTP/9.9\\r\\n\\r\\n", b"GET / HTTP/9.9\r\n\r\n",
             "HTTP/1.1 400 Bad Request",
             {"message": "malformed HTTP request: bad version", **bad_http}, "http", True)

    # (b) a header block over --header-limit.
    rejected("header block over the limit", f"GET /health + X-Big: {HEADER_LIMIT + 100} bytes",
             b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (HEADER_LIMIT + 100)
             + b"\r\n\r\n",
             "HTTP/1.1 431 Request Header Fields Too Large",
             {"message": f"request header fields exceed {HEADER_LIMIT} bytes",
              "type": "invalid_request_error", "param": None, "code": "header_too_large"},
             "headers", True)

    # (c) a body over --body-limit: answered from the Content-Length, before the body.
    too_large = {"message": f"request body exceeds {BODY_LIMIT} bytes",
                 "type": "invalid_request_error", "param": None, "code": "body_too_large"}
    rejected("body over the limit (headers only)", "POST, Content-Length: 5000, no body yet",
             b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n",
             "HTTP/1.1 413 Payload Too Large", too_large, "body", True)
    rejected("body over the limit (sent whole)", "POST, Content-Length: 5000 + 5000 bytes",
             b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n"
             + b"x" * 5000,
             "HTTP/1.1 413 Payload Too Large", too_large, "body", True)

    # (d) a body that is not JSON.
    prefix = "Invalid JSON in the request body: "
    rejected("invalid JSON body", "POST /v1/completions, body {abc]",
             post(b"/v1/completions", b"{abc]"), "HTTP/1.1 400 Bad Request",
             {"message": lambda m: m.startswith(prefix) and len(m) > len(prefix),
              "type": "invalid_request_error", "param": None, "code": None}, "body", True)

    # (e) a field of the wrong type.
    rejected("max_tokens of the wrong type", 'POST /v1/completions, "max_tokens": "x"',
             post(b"/v1/completions",
                  json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": "x"}).encode()),
             "HTTP/1.1 400 Bad Request",
             {"message": "'max_tokens' must be an integer", "type": "invalid_request_error",
              "param": "max_tokens", "code": None}, "body", True)

    # (f) an unknown route; (g) a wrong method.
    rejected("unknown route", "GET /v1/nope",
             b"GET /v1/nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             "HTTP/1.1 404 Not Found",
             {"message": "Not Found: GET /v1/nope", "type": "invalid_request_error",
              "param": None, "code": "not_found"}, "route", True)
    rejected("wrong method", "GET /v1/completions",
             b"GET /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             "HTTP/1.1 405 Method Not Allowed",
             {"message": "Method Not Allowed", "type": "invalid_request_error", "param": None,
              "code": "method_not_allowed"}, "route", True)

    # An error on a keep-alive connection leaves it usable: 404, then a completion on it.
    c = connect()
    c.send(b"GET /v1/nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    began(404)
    line404, h404, _ = c.response()
    c.send(post(b"/v1/completions", completion_body(4)))
    began(200)
    sent["completions"] += 1
    line200, _, _ = c.response()
    expect("keep-alive: a 404 without Connection: close, then a 200 on the same connection",
           line404 == "HTTP/1.1 404 Not Found" and "connection" not in h404
           and line200 == "HTTP/1.1 200 OK", f"{line404} {h404} {line200}")
    c.close()

    # (h) a client that leaves after the first event of a 200-token stream.
    c = connect()
    c.send(post(b"/v1/completions", completion_body(STREAM_MAX_TOKENS, stream=True), close=False))
    began(200)
    sent["completions"] += 1
    head = c.take_until(b"\r\n\r\n").decode("latin-1")
    first_event = c.take_until(b"\n\n")  # a chunk's size line, then "data: {...}\n\n"
    c.close()
    stream_tid = None
    m = re.search(r"(?im)^traceparent: 00-([0-9a-f]{32})-", head)
    ev = re.search(rb"data: (\{.*\})\n\n$", first_event)
    ok = head.startswith("HTTP/1.1 200 OK\r\n") and "text/event-stream" in head and m and ev
    if ok:
        stream_tid = m.group(1)
        doc = json.loads(ev.group(1))
        ok = doc["object"] == "text_completion" and doc["choices"][0]["finish_reason"] is None
    expect("stream: 200, text/event-stream, a first data event", ok, head + repr(first_event))
    normal("a stream left after its first event")
    cases.append({"name": "client leaves mid-stream", "tid": stream_tid,
                  "input": f"stream:true, max_tokens {STREAM_MAX_TOKENS}, close after 1st event",
                  "status": "HTTP/1.1 200 OK (stream cut)"})

    # (k) a client that leaves in the middle of its request (header whole, body cut short).
    c = connect()
    c.send(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"
           b'{"model":')
    c.s.shutdown(socket.SHUT_WR)
    began(0)
    expect("incomplete request: closed without a response", c.closed_clean(), c.buf[:200])
    c.close()
    normal("an incomplete request")
    cases.append({"name": "client leaves mid-request", "tid": None,
                  "input": "POST, Content-Length: 100, 9 bytes of body, FIN",
                  "status": "(none: closed)"})

    # (i) a header trickled one byte every 300 ms: 408 after --header-timeout-ms. The pause
    # between bytes is the client's pacing; the outcome is waited for on the socket.
    c = connect()
    trickle = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n\r\n"
    t0 = time.monotonic()
    began(408)
    bytes_sent = 0
    answered = False
    for i in range(len(trickle)):
        c.send(trickle[i:i + 1])
        bytes_sent += 1
        if readable_within(c.s, 0.3):
            answered = True
            break
    line, headers, body = c.response() if answered else ("(none)", {}, b"")
    took = time.monotonic() - t0
    expect("trickled header: HTTP/1.1 408 Request Timeout", line == "HTTP/1.1 408 Request Timeout",
           line)
    expect(f"trickled header: answered after {HEADER_TIMEOUT_MS} ms, not before, and before the "
           "whole header was sent",
           HEADER_TIMEOUT_MS / 1000 <= took < HEADER_TIMEOUT_MS / 1000 + 5
           and bytes_sent < len(trickle), f"{took:.3f} s, {bytes_sent} bytes")
    timeout_error = {"message": f"the request did not arrive within {HEADER_TIMEOUT_MS} ms",
                     "type": "invalid_request_error", "param": None, "code": "request_timeout"}
    expect("trickled header: the error body", error_of(body) == timeout_error, body[:300])
    expect("trickled header: Connection: close, then a clean close",
           headers.get("connection") == "close" and c.closed_clean(), headers)
    c.close()
    normal("a trickled header")
    cases.append({"name": "header trickled 1 B / 300 ms", "tid": trace_id_of(headers),
                  "input": f"GET /health, {bytes_sent} bytes sent by the 408", "status": line,
                  "loc": "http", "error": timeout_error})

    # (j) 1,000 idle connections: normal requests before and while they are open.
    baseline = [normal("the baseline") for _ in range(TIMED_REQUESTS)]
    idle = []
    t_open = time.monotonic()
    for _ in range(IDLE_CONNECTIONS):
        if time.monotonic() - t_open > 60:
            break
        idle.append(socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S))
        sent["connections"] += 1
    expect(f"{IDLE_CONNECTIONS} idle connections opened", len(idle) == IDLE_CONNECTIONS, len(idle))
    # Connections are accepted in order: once this one is answered, every idle one is a
    # session of the server's (the time it took to accept them is not what is measured).
    normal(f"opening {IDLE_CONNECTIONS} idle connections")
    loaded = [normal(f"{IDLE_CONNECTIONS} idle connections") for _ in range(TIMED_REQUESTS)]
    # Not one of them was closed by the server meanwhile (the idle timeout is 600 s).
    poller = select.poll()
    for s in idle:
        poller.register(s, select.POLLIN)
    readable = poller.poll(0)
    expect("the idle connections are still open (none readable: no close, no bytes)",
           not readable, len(readable))
    for s in idle:
        s.close()
    base_p99, load_p99 = p99(baseline), p99(loaded)
    print(f"latency of {TIMED_REQUESTS} requests, p99: {base_p99 * 1e3:.2f} ms alone, "
          f"{load_p99 * 1e3:.2f} ms with {IDLE_CONNECTIONS} idle connections open")
    expect("requests beside the idle connections: p99 under max(10x the baseline, 500 ms)",
           load_p99 < max(10 * base_p99, 0.5), f"{load_p99:.3f} s vs {base_p99:.3f} s")
    normal("closing the idle connections")

    # SIGINT: the server stops, prints its accounting, exits 0.
    server.send_signal(signal.SIGINT)
    try:
        stdout, _ = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        stdout, _ = server.communicate()
        expect("the server exits within 60 s of SIGINT", False)
    stdout = stdout.decode()
    stderr.seek(0)
    print(stdout)
    expect("the server exits 0", server.returncode == 0,
           f"exit {server.returncode}\n{stderr.read().decode()[-3000:]}")
    check_accounting(stdout, sent, by_status)
    check_files(out, sent, cases)


def check_accounting(stdout, sent, by_status):
    m = re.search(r"^jsonlw serve: (\d+) requests on (\d+) connections .*\((\d+) open at most",
                  stdout, re.M)
    expect("the summary counts the requests and connections sent",
           m is not None and int(m.group(1)) == sent["requests"]
           and int(m.group(2)) == sent["connections"],
           f"{m and m.groups()} vs {sent}")
    expect(f"{IDLE_CONNECTIONS + 1} connections were open at once at least",
           m is not None and int(m.group(3)) >= IDLE_CONNECTIONS + 1, m and m.group(3))
    m = re.search(r"^  responses by status:(.*)$", stdout, re.M)
    got = {}
    if m:
        it = m.group(1).split()
        got = {(0 if k == "none" else int(k)): int(v) for k, v in zip(it[::2], it[1::2])}
    expect("responses by status are what was sent", got == by_status,
           f"{got} vs {by_status}")
    completions = sent["completions"]
    line = (f"  completions: {completions} admitted (1 streamed), {completions - 1} completed, "
            "1 client disconnected, 0 ended by shutdown;")
    expect("completions: one streamed, left by its client; the rest completed", line in stdout,
           line)
    line = ("  bad input: 2 malformed HTTP, 1 request timeouts, 1 incomplete requests, "
            "0 write timeouts")
    expect("bad input counted", line in stdout, line)
    want = {"raw output": completions, "request trace": 2 * sent["requests"],
            "perf metrics": completions}
    for name, n in want.items():
        m = re.search(rf"^{name}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s", stdout, re.M)
        expect(f"{name}: expected == written == {n}, none dropped, unknown or unaccounted",
               m is not None and [int(x) for x in m.groups()] == [n, n, 0, 0, 0],
               m and m.group(0))


def read_lines(pattern):
    lines = []
    for f in sorted(glob.glob(pattern, recursive=True)):
        with open(f, encoding="utf-8") as fh:
            lines += [json.loads(x) for x in fh if x.strip()]
    return lines


def tid_of_line(rec):
    tp = rec.get("traceparent", "")
    parts = tp.split("-")
    return parts[1] if len(parts) == 4 else None


def check_files(out, sent, cases):
    requests = read_lines(os.path.join(out, "request_trace", "**", "requests-*.jsonl"))
    responses = read_lines(os.path.join(out, "request_trace", "**", "responses-*.jsonl"))
    raws = read_lines(os.path.join(out, "raw_output", "**", "*.jsonl"))
    perfs = read_lines(os.path.join(out, "perf_metrics", "**", "*.jsonl"))
    expect(f"request lines == response lines == requests begun ({sent['requests']})",
           len(requests) == len(responses) == sent["requests"],
           f"{len(requests)} / {len(responses)}")
    expect(f"raw-output lines == perf lines == completions admitted ({sent['completions']})",
           len(raws) == len(perfs) == sent["completions"], f"{len(raws)} / {len(perfs)}")
    req_by_id = {r["trace_id"]: r for r in requests}
    resp_by_id = {r["trace_id"]: r for r in responses}
    expect("each request line has its response line (by trace_id), each once",
           len(req_by_id) == len(requests) and set(req_by_id) == set(resp_by_id))

    def pair(tid):
        rq = [r for r in requests if tid_of_line(r) == tid]
        rs = [r for r in responses if tid_of_line(r) == tid]
        return (rq[0] if len(rq) == 1 else None), (rs[0] if len(rs) == 1 else None)

    table = []
    for case in cases:
        name = case["name"]
        if case["tid"] is None and name != "client leaves mid-request":
            table.append((case["input"], case["status"], "(no trace id to find it by)"))
            continue
        if name == "client leaves mid-request":
            rs = [r for r in responses if (r.get("termination") or {}).get("detail")
                  == "the request was incomplete"]
            rs = rs[0] if len(rs) == 1 else None
            rq = req_by_id.get(rs["trace_id"]) if rs else None
        else:
            rq, rs = pair(case["tid"])
        if not expect(f"{name}: one request line and one response line", rq and rs):
            table.append((case["input"], case["status"], "(missing)"))
            continue
        if name == "client leaves mid-stream":
            summary = check_stream(rq, rs, raws, perfs, case["tid"])
        elif name == "client leaves mid-request":
            expect(f"{name}: the request line: route and headers, the body cut", rq["route"]
                   == "/v1/completions" and ["Content-Length", "100"] in rq["headers"]
                   and rq["body"] == '{"model":' and rq["body_parse_error"].startswith("invalid JSON"), rq)
            expect(f"{name}: the response line: client_disconnected, no http_status",
                   rs["status"] == "client_disconnected" and "http_status" not in rs
                   and rs["termination"] == {"cause": "client_disconnected",
                                             "detail": "the request was incomplete"}, rs)
            summary = (f'req route {rq["route"]}, the 9 bytes that came as body (body_parse_error); resp status '
                       f'{rs["status"]}, no http_status, termination client_disconnected')
        else:
            summary = check_rejected(case, rq, rs)
        table.append((case["input"], case["status"], summary))

    print("\ninput -> status -> what the trace holds")
    w0 = max(len(t[0]) for t in table)
    w1 = max(len(t[1]) for t in table)
    for i, s, t in table:
        print(f"  {i:<{w0}}  ->  {s:<{w1}}  ->  {t}")


def check_rejected(case, rq, rs):
    name, error = case["name"], case["error"]
    status = int(case["status"].split()[1])
    expect(f"{name}: the request line is rejected_400 with one validation error at "
           f"[{case['loc']}...]",
           rq["status"] == "rejected_400" and len(rq.get("validation_errors", [])) == 1
           and rq["validation_errors"][0]["loc"][0] == case["loc"]
           and rq["validation_errors"][0]["type"] == (error["code"] or error["type"]), rq)
    if error.get("param"):
        expect(f"{name}: the validation error names the field",
               rq["validation_errors"][0]["loc"] == [case["loc"], error["param"]], rq)
    termination = {"cause": "header_timeout", "detail": None} if status == 408 else None
    expect(f"{name}: the response line holds http_status {status} and the error body sent",
           rs["http_status"] == status and rs["status"] == "completed"
           and rs["response"]["kind"] == "json" and rs["response"]["body"]["error"]["code"]
           == error["code"] and rs.get("termination") == termination, rs)
    if name == "invalid JSON body":
        body_error = rq.get("body_parse_error", "")
        message = rs["response"]["body"]["error"]["message"]
        expect(f"{name}: the request line holds the body as a string with body_parse_error",
               rq["body"] == "{abc]" and body_error.startswith("invalid JSON: ")
               and message == "Invalid JSON in the request body: "
               + body_error[len("invalid JSON: "):], rq)
    if name == "max_tokens of the wrong type":
        expect(f"{name}: the request line holds the body as JSON",
               rq["body"] == {"model": MODEL, "prompt": "hi", "max_tokens": "x"}
               and "body_parse_error" not in rq, rq)
    v = rq["validation_errors"][0]
    body = rq["body"] if isinstance(rq["body"], str) else json.dumps(rq["body"],
                                                                     separators=(",", ":"))
    parts = [f'req route "{rq["route"]}"', f"{len(rq['headers'])} headers",
             f"body {body[:24]!r}" + (" + body_parse_error" if "body_parse_error" in rq else ""),
             f"validation_errors loc {v['loc']} type {v['type']}",
             f"resp http_status {rs['http_status']} status {rs['status']}"]
    if rs.get("termination"):
        parts.append(f"termination {rs['termination']['cause']}")
    return "; ".join(parts)


def check_stream(rq, rs, raws, perfs, tid):
    name = "client leaves mid-stream"
    expect(f"{name}: the request line is accepted with the body as JSON",
           rq["status"] == "accepted" and rq["body"]["stream"] is True
           and rq["body"]["max_tokens"] == STREAM_MAX_TOKENS, rq)
    detail = (rs.get("termination") or {}).get("detail") or ""
    m = re.fullmatch(rf"after (\d+) of {STREAM_MAX_TOKENS} tokens", detail)
    expect(f"{name}: the response line: http_status 200, client_disconnected, termination "
           "client_disconnected after fewer than all tokens",
           rs["http_status"] == 200 and rs["status"] == "client_disconnected"
           and rs["termination"]["cause"] == "client_disconnected" and m
           and 1 <= int(m.group(1)) < STREAM_MAX_TOKENS
           and rs["response"]["kind"] == "sse_text"
           and rs["response"]["body"].startswith("data: {"), rs)
    raw = [r for r in raws if tid_of_line(r) == tid]
    perf = [r for r in perfs if tid_of_line(r) == tid]
    raw = raw[0] if len(raw) == 1 else None
    perf = perf[0] if len(perf) == 1 else None
    expect(f"{name}: one raw-output line, aborted, fewer than {STREAM_MAX_TOKENS} tokens",
           raw is not None and raw["aborted"] is True and raw["streaming"] is True
           and 1 <= raw["num_output_tokens"] < STREAM_MAX_TOKENS
           and len(raw["token_ids"]) == raw["num_output_tokens"], raw)
    expect(f"{name}: one perf line, status aborted", perf is not None
           and perf["status"] == "aborted", perf)
    return (f"req accepted; resp http_status 200 status {rs['status']}, termination "
            f"{rs['termination']['cause']} ({detail}); raw aborted "
            f"{raw and raw['aborted']}, {raw and raw['num_output_tokens']} tokens; perf "
            f"{perf and perf['status']}")


if __name__ == "__main__":
    main()
