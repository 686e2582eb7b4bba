#!/usr/bin/env python3
"""curl against `jsonlw serve`, every endpoint and every error: each request is one curl run
(one connection) whose status, headers and body are checked exactly; after SIGINT the
request-trace files must hold exactly one request line and one response line per curl run,
joined by the traceparent the response carried, with that run's http_status, and every
Authorization header recorded as "[redacted]".

Usage: curl_test.py JSONLW WORKDIR
Exit 77 (skipped) without curl.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import Failures, Server, check_accounting  # noqa: E402

JSONLW, WORK = sys.argv[1], sys.argv[2]
MODEL = "jsonlw-demo"
BODY_LIMIT = 4096
HEADER_LIMIT = 4096
SECRET = "sk-curl-secret-123"
CLIENT_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
f = Failures()
sent = []  # (name, the response): one per curl run, in order


class Response:
    def __init__(self, name, status, headers, body):
        self.name, self.status, self.headers, self.body = name, status, headers, body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            f.expect(f"{self.name}: the body is JSON", False, self.body[:200])
            return {}


def curl(name, base, path, *args, method=None, data=None, stream=False):
    """One curl run: -i output split into the final status line, headers and body."""
    cmd = ["curl", "-sS", "-i", "--max-time", "30", "-H", "Expect:"]
    if method:
        cmd += ["-X", method]
    if data is not None:
        cmd += ["-H", "content-type: application/json", "--data-binary", "@-"]
    if stream:
        cmd.append("-N")
    cmd += [*args, base + path]
    p = subprocess.run(cmd, input=(data or "").encode(), capture_output=True, timeout=60)
    f.equal(f"{name}: curl exits 0", p.returncode, 0)
    raw = p.stdout
    while True:  # past interim responses (100 Continue)
        head, _, raw = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/") else 0
        if status != 100:
            break
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    r = Response(name, status, headers, raw.decode())
    sent.append(r)
    return r


def events(r):
    """The data: payloads of a text/event-stream body, in order."""
    out = []
    for block in r.body.split("\n\n"):
        if block.strip():
            f.expect(f"{r.name}: each event is one data: line", block.startswith("data: ") and "\n" not in block,
                     block[:120])
            out.append(block[len("data: "):])
    return out


def expect_error(r, status, code, param, message=None, message_prefix=None):
    f.equal(f"{r.name}: status", r.status, status)
    f.equal(f"{r.name}: content-type", r.headers.get("content-type"), "application/json")
    body = r.json()
    err = body.get("error", {})
    f.equal(f"{r.name}: the body is exactly {{error: {{message, type, param, code}}}}",
            (list(body), sorted(err)), (["error"], ["code", "message", "param", "type"]))
    f.equal(f"{r.name}: error.type", err.get("type"), "invalid_request_error")
    f.equal(f"{r.name}: error.code", err.get("code"), code)
    f.equal(f"{r.name}: error.param", err.get("param"), param)
    if message is not None:
        f.equal(f"{r.name}: error.message", err.get("message"), message)
    if message_prefix is not None:
        f.expect(f"{r.name}: error.message begins {message_prefix!r}",
                 str(err.get("message", "")).startswith(message_prefix), err.get("message"))


def check_completion_logprobs(name, lp, n):
    f.equal(f"{name}: logprobs arrays of {n}",
            [len(lp["tokens"]), len(lp["token_logprobs"]), len(lp["top_logprobs"]), len(lp["text_offset"])],
            [n] * 4)
    f.equal(f"{name}: 2 alternatives at most per position",
            all(1 <= len(t) <= 2 for t in lp["top_logprobs"]), True)
    offsets = [sum(len(t) for t in lp["tokens"][:i]) for i in range(n)]
    f.equal(f"{name}: text_offset", lp["text_offset"], offsets)


def main():
    if not shutil.which("curl"):
        print("SKIP: curl is not installed (Debian: apt-get install curl)")
        return 77
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    server = Server(JSONLW, os.path.join(WORK, "out"), "--backend", "cpu", "--vocab", "4096",
                    "--step-us", "200", "--top-k", "5", "--first-gen-every", "0",
                    "--ring-slots", "64", "--stage-wait-ms", "10000",
                    "--body-limit", str(BODY_LIMIT), "--header-limit", str(HEADER_LIMIT))
    try:
        requests(server.base)
    finally:
        rc = server.stop()
    f.equal("jsonlw serve exits 0 after SIGINT", rc, 0)
    if rc != 0:
        print(server.summary, server.stderr_text())
    files(server)
    return f.exit_status()


def requests(base):
    auth = ["-H", f"Authorization: Bearer {SECRET}"]

    r = curl("GET /health", base, "/health")
    f.equal("GET /health: 200 {status: ok}", (r.status, r.json()), (200, {"status": "ok"}))

    r = curl("GET /v1/models", base, "/v1/models", *auth)
    f.equal("GET /v1/models: status", r.status, 200)
    f.equal("GET /v1/models: the one model", r.json(),
            {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "jsonlw"}]})

    # completions, whole
    r = curl("POST /v1/completions", base, "/v1/completions", *auth,
             data=json.dumps({"model": MODEL, "prompt": "three words here", "max_tokens": 4, "logprobs": 2}))
    f.equal(f"{r.name}: status", r.status, 200)
    b = r.json()
    f.equal(f"{r.name}: id is cmpl-<x-request-id>", b.get("id"), f"cmpl-{r.headers.get('x-request-id')}")
    c = b["choices"][0]
    f.equal(f"{r.name}: object, model, finish_reason", (b["object"], b["model"], c["finish_reason"]),
            ("text_completion", MODEL, "length"))
    f.equal(f"{r.name}: usage", b["usage"], {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
    check_completion_logprobs(r.name, c["logprobs"], 4)
    f.equal(f"{r.name}: text is its tokens", c["text"], "".join(c["logprobs"]["tokens"]))

    # completions, streamed
    r = curl("POST /v1/completions stream", base, "/v1/completions", *auth, stream=True,
             data=json.dumps({"model": MODEL, "prompt": "x", "max_tokens": 5, "logprobs": 1, "stream": True,
                              "stream_options": {"include_usage": True}}))
    f.equal(f"{r.name}: status, content-type", (r.status, r.headers.get("content-type")),
            (200, "text/event-stream"))
    f.equal(f"{r.name}: chunked", r.headers.get("transfer-encoding"), "chunked")
    ev = events(r)
    f.equal(f"{r.name}: ends with [DONE]", ev[-1:], ["[DONE]"])
    chunks = [json.loads(e) for e in ev[:-1]]
    f.equal(f"{r.name}: every chunk's id", {c["id"] for c in chunks}, {f"cmpl-{r.headers.get('x-request-id')}"})
    f.equal(f"{r.name}: the last event is usage", (chunks[-1]["choices"], chunks[-1]["usage"]),
            ([], {"prompt_tokens": 1, "completion_tokens": 5, "total_tokens": 6}))
    toks = [t for c in chunks[:-1] if c["choices"][0]["logprobs"] for t in c["choices"][0]["logprobs"]["tokens"]]
    f.equal(f"{r.name}: 5 tokens", len(toks), 5)
    f.equal(f"{r.name}: text is its tokens", "".join(c["choices"][0]["text"] for c in chunks[:-1]), "".join(toks))
    f.equal(f"{r.name}: finish_reason on the last choice only",
            [c["choices"][0]["finish_reason"] for c in chunks[:-1]], [None] * (len(chunks) - 2) + ["length"])

    # chat, whole, with the client's own traceparent
    r = curl("POST /v1/chat/completions", base, "/v1/chat/completions", *auth,
             "-H", f"traceparent: {CLIENT_TRACEPARENT}",
             data=json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hello there"}],
                              "max_tokens": 3, "logprobs": True, "top_logprobs": 2}))
    f.equal(f"{r.name}: status", r.status, 200)
    f.equal(f"{r.name}: the client's traceparent comes back", r.headers.get("traceparent"), CLIENT_TRACEPARENT)
    b = r.json()
    c = b["choices"][0]
    f.equal(f"{r.name}: id, object, role, finish_reason",
            (b["id"], b["object"], c["message"]["role"], c["finish_reason"]),
            (f"chatcmpl-{r.headers.get('x-request-id')}", "chat.completion", "assistant", "length"))
    content = c["logprobs"]["content"]
    f.equal(f"{r.name}: 3 tokens, 2 alternatives each", [len(t["top_logprobs"]) for t in content], [2, 2, 2])
    f.equal(f"{r.name}: content is its tokens", c["message"]["content"], "".join(t["token"] for t in content))
    f.equal(f"{r.name}: bytes are each token's UTF-8",
            all(t["bytes"] == list(t["token"].encode()) for t in content), True)
    f.equal(f"{r.name}: usage", b["usage"], {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5})

    # chat, streamed
    r = curl("POST /v1/chat/completions stream", base, "/v1/chat/completions", *auth, stream=True,
             data=json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
                              "stream": True, "logprobs": True}))
    f.equal(f"{r.name}: status, content-type", (r.status, r.headers.get("content-type")),
            (200, "text/event-stream"))
    ev = events(r)
    f.equal(f"{r.name}: ends with [DONE]", ev[-1:], ["[DONE]"])
    chunks = [json.loads(e) for e in ev[:-1]]
    first = chunks[0]["choices"][0]
    f.equal(f"{r.name}: the first chunk is the role alone (as OpenAI's)",
            (first["delta"], first["logprobs"], first["finish_reason"]),
            ({"role": "assistant", "content": ""}, None, None))
    last = chunks[-1]["choices"][0]
    f.equal(f"{r.name}: the last chunk is the finish alone",
            (last["delta"], last["logprobs"], last["finish_reason"]), ({}, None, "length"))
    toks = [t["token"] for c in chunks[1:-1] for t in c["choices"][0]["logprobs"]["content"]]
    f.equal(f"{r.name}: 4 tokens", len(toks), 4)
    f.equal(f"{r.name}: content is its tokens",
            "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:-1]), "".join(toks))

    # errors
    r = curl("invalid JSON", base, "/v1/completions", *auth, data='{"model": "jsonlw-demo", "prompt": ')
    expect_error(r, 400, None, None, message_prefix="Invalid JSON in the request body: ")
    r = curl("max_tokens a string", base, "/v1/completions", *auth,
             data=json.dumps({"model": MODEL, "prompt": "x", "max_tokens": "3"}))
    expect_error(r, 400, None, "max_tokens", message="'max_tokens' must be an integer")
    r = curl("unknown route", base, "/v1/embeddings", *auth, data=json.dumps({"model": MODEL, "input": "x"}))
    expect_error(r, 404, "not_found", None, message="Not Found: POST /v1/embeddings")
    r = curl("GET /v1/completions", base, "/v1/completions", *auth)
    expect_error(r, 405, "method_not_allowed", None, message="Method Not Allowed")
    f.equal(f"{r.name}: Allow", r.headers.get("allow"), "POST")
    r = curl("POST /v1/models", base, "/v1/models", method="POST", data="{}")
    expect_error(r, 405, "method_not_allowed", None, message="Method Not Allowed")
    f.equal(f"{r.name}: Allow", r.headers.get("allow"), "GET")
    # Just over the limit, so that the server's first read takes all of it: the 413 must not
    # depend on how a close with unread bytes (a reset) races the client's own writes.
    big = json.dumps({"model": MODEL, "prompt": "word " * (BODY_LIMIT // 5 + 200)})
    f.expect("the big body is over the limit and under 16 KiB", BODY_LIMIT < len(big) < 16384, len(big))
    r = curl("body over --body-limit", base, "/v1/completions", *auth, data=big)
    expect_error(r, 413, "body_too_large", None, message=f"request body exceeds {BODY_LIMIT} bytes")
    f.equal(f"{r.name}: Connection: close", r.headers.get("connection"), "close")
    # Far over the limit, still being sent when the 413 is written: the server shuts its side
    # and drains the rest before closing (a lingering close), so the answer is not reset away.
    huge = json.dumps({"model": MODEL, "prompt": "word " * 400000})
    r = curl("body far over --body-limit", base, "/v1/completions", *auth, data=huge)
    expect_error(r, 413, "body_too_large", None, message=f"request body exceeds {BODY_LIMIT} bytes")
    r = curl("header block over --header-limit", base, "/health", *auth, "-H", "X-Padding: " + "p" * HEADER_LIMIT)
    expect_error(r, 431, "header_too_large", None, message=f"request header fields exceed {HEADER_LIMIT} bytes")
    f.equal(f"{r.name}: Connection: close", r.headers.get("connection"), "close")
    r = curl("unknown model", base, "/v1/chat/completions", *auth,
             data=json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}))
    expect_error(r, 404, "model_not_found", "model", message="The model `gpt-4o` does not exist.")

    for r in sent:
        f.expect(f"{r.name}: a traceparent header", len(r.headers.get("traceparent", "")) == 55, r.headers)


def files(server):
    completions = 4
    n = len(sent)
    check_accounting(f, server, {"raw output": completions, "request trace": 2 * n,
                                 "perf metrics": completions})
    requests = server.lines("request trace", "requests-*.jsonl")
    responses = server.lines("request trace", "responses-*.jsonl")
    f.equal("request lines: one per curl run", len(requests), n)
    f.equal("response lines: one per curl run", len(responses), n)
    by_tp_req = {}
    by_tp_resp = {}
    for line in requests:
        by_tp_req.setdefault(line["traceparent"], []).append(line)
    for line in responses:
        by_tp_resp.setdefault(line["traceparent"], []).append(line)
    for r in sent:
        tp = r.headers.get("traceparent")
        reqs, resps = by_tp_req.get(tp, []), by_tp_resp.get(tp, [])
        if not f.equal(f"{r.name}: one request line and one response line with its traceparent",
                              (len(reqs), len(resps)), (1, 1)):
            continue
        f.equal(f"{r.name}: the lines share a trace_id", reqs[0]["trace_id"], resps[0]["trace_id"])
        f.equal(f"{r.name}: the response line's http_status", resps[0].get("http_status"), r.status)
        f.equal(f"{r.name}: request status", reqs[0]["status"], "accepted" if r.status == 200 else "rejected_400")
        if r.status == 200 and "stream" not in r.name:
            f.equal(f"{r.name}: the recorded response body is the one sent", resps[0]["response"]["body"], r.json())
    auth = [v for line in requests for k, v in line["headers"] if k.lower() == "authorization"]
    # Every curl run but /health, POST /v1/models and the one whose header block the server
    # refused before it had it (431) carried it; a 413 is refused from its Content-Length, with
    # every field there.
    with_auth = n - 3
    f.equal("every recorded Authorization header is [redacted]", auth, ["[redacted]"] * with_auth)
    everything = "".join(open(p, encoding="utf-8").read() for w in ("raw output", "request trace", "perf metrics")
                         for p in server.files(w))
    f.equal("the secret is in no file", SECRET in everything, False)
    perf = server.lines("perf metrics")
    f.equal("perf-metrics lines", len(perf), completions)
    f.equal("the client's traceparent is on its raw-output and perf lines",
            (sum(l.get("traceparent") == CLIENT_TRACEPARENT for l in server.lines("raw output")),
             sum(l.get("traceparent") == CLIENT_TRACEPARENT for l in perf)), (1, 1))
    statuses = {}
    for r in sent:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    print(f"curl: {n} requests, one connection each ("
          + ", ".join(f"{s} x{c}" for s, c in sorted(statuses.items())) + f"); request trace: "
          f"{len(requests)} request lines + {len(responses)} response lines, each joined to its curl run "
          f"by traceparent with the same http_status; {len(auth)} Authorization headers, all [redacted]")


if __name__ == "__main__":
    sys.exit(main())
