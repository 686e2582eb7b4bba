#!/usr/bin/env python3
"""SIGTERM while `jsonlw serve` is busy: three streams and a whole response in the middle of
their generations, a request half sent, an idle keep-alive connection. The server stops
accepting, ends each open stream with an error event and the chunked body's end, answers the
whole response 503, closes the rest, closes its writers and prints the accounting: every stream
and response recorded as aborted (raw output "aborted", perf "aborted", response line
client_disconnected with termination "server_shutdown"), the half request traced with its
termination, the idle connection not a request at all, and expected == written for every writer.

Usage: shutdown_test.py JSONLW
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import DEADLINE, Failures, Server, check_accounting  # noqa: E402

JSONLW = sys.argv[1]
f = Failures()


def post(port, path, body):
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    data = json.dumps(body).encode()
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def read_until(s, marker):
    buf = b""
    while marker not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def read_to_eof(s):
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk


with tempfile.TemporaryDirectory() as tmp:
    srv = Server(JSONLW, os.path.join(tmp, "out"), "--backend", "cpu", "--vocab", "4096",
                 "--step-us", "2000", "--concurrency", "16")
    whole = post(srv.port, "/v1/completions",
                 {"model": "jsonlw-demo", "prompt": "long", "max_tokens": 3000})
    streams = [post(srv.port, "/v1/chat/completions",
                    {"model": "jsonlw-demo", "stream": True, "max_tokens": 3000, "logprobs": True,
                     "messages": [{"role": "user", "content": f"stream {i}"}]}) for i in range(3)]
    heads = [read_until(s, b"data: {") for s in streams]  # a first event with a token came
    f.expect("three streams started", all(h.startswith(b"HTTP/1.1 200 OK") for h in heads), heads)
    half = socket.create_connection(("127.0.0.1", srv.port), timeout=DEADLINE)
    half.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Len")
    idle = socket.create_connection(("127.0.0.1", srv.port), timeout=DEADLINE)
    # The half request's first byte and the idle connection must be in before the signal:
    # a request that succeeds on a third connection orders them (one loop, one thread).
    probe = socket.create_connection(("127.0.0.1", srv.port), timeout=DEADLINE)
    probe.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    f.expect("a request on another connection is answered", read_to_eof(probe).startswith(b"HTTP/1.1 200"))
    probe.close()

    srv.p.send_signal(signal.SIGTERM)
    tails = [read_to_eof(s) for s in streams]
    f.expect("each stream ends with an error event and the chunked end",
             all(b"server_shutdown" in t and t.endswith(b"0\r\n\r\n") for t in tails),
             [t[-200:] for t in tails])
    answer = read_to_eof(whole)
    f.expect("the whole response is answered 503", answer.startswith(b"HTTP/1.1 503"), answer[:200])
    f.equal("the half-sent request's connection is closed", read_to_eof(half), b"")
    f.equal("the idle connection is closed", read_to_eof(idle), b"")
    try:
        rest, _ = srv.p.communicate(timeout=DEADLINE)
    finally:
        srv.stderr.close()
    srv.summary = (srv._rest + rest).decode(errors="replace")
    print(srv.summary)
    f.equal("the server exits 0 after SIGTERM", srv.p.returncode, 0)
    m = re.search(r"(\d+) completed, (\d+) client disconnected, (\d+) ended by shutdown", srv.summary)
    f.expect("four generations ended by the shutdown, none completed",
             m is not None and m.groups() == ("0", "0", "4"), m.group(0) if m else srv.summary)
    # Requests: 4 generations + the probe + the half-sent one (the idle connection sent nothing).
    check_accounting(f, srv, {"raw output": 4, "request trace": 12, "perf metrics": 4})

    perf = srv.lines("perf metrics")
    raw = srv.lines("raw output")
    resps = srv.lines("request trace", "responses-*.jsonl")
    f.equal("perf records: four, all aborted", sorted(l["status"] for l in perf), ["aborted"] * 4)
    f.expect("raw outputs: four, all aborted, each cut short",
             len(raw) == 4 and all(l["aborted"] and 0 < l["num_output_tokens"] < 3000 for l in raw),
             [(l.get("aborted"), l.get("num_output_tokens")) for l in raw])
    causes = sorted((l.get("termination") or {}).get("cause", "-") for l in resps)
    f.equal("response lines: four generations and the half request ended by the shutdown, the probe answered",
            causes, ["-"] + ["server_shutdown"] * 5)
sys.exit(f.exit_status())
