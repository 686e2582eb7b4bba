#!/usr/bin/env python3
"""The official OpenAI SDK (npm `openai`) against `jsonlw serve`: openai_sdk_check.mjs makes
completions and chat requests, whole and streamed, with logprobs, through the SDK; the server
is stopped with SIGINT; then the same script joins what the SDK parsed to the raw-output
records, value for value, and this runner checks the server's accounting and that the
request trace holds the SDK's requests with their Authorization header redacted.

Usage: sdk_test.py JSONLW CHECK.mjs WORKDIR
Exit 77 (skipped) without node or the openai package in tests/serve/node_modules.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import DEADLINE, Failures, Server, check_accounting  # noqa: E402

JSONLW, CHECK, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
SDK = os.path.join(os.path.dirname(CHECK), "node_modules", "openai", "package.json")


def main():
    node = shutil.which("node")
    if not node:
        print("SKIP: node is not installed (Debian: apt-get install nodejs npm)")
        return 77
    if not os.path.exists(SDK):
        print(f"SKIP: {SDK} is missing (./run test installs tests/serve's npm packages)")
        return 77
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    out = os.path.join(WORK, "out")
    client_json = os.path.join(WORK, "sdk-client.json")
    f = Failures()

    server = Server(JSONLW, out, "--backend", "cpu", "--vocab", "4096", "--step-us", "200",
                    "--concurrency", "64", "--top-k", "5", "--first-gen-every", "0",
                    "--ring-slots", "64", "--stage-wait-ms", "10000")
    try:
        client = subprocess.run([node, CHECK, "client", server.base, client_json],
                                capture_output=True, text=True, timeout=2 * DEADLINE)
    except subprocess.TimeoutExpired:
        server.kill()
        print(f"FAIL the SDK client did not finish within {2 * DEADLINE} s")
        return 1
    except BaseException:
        server.kill()
        raise
    print(client.stdout, end="")
    if client.returncode == 77:
        server.kill()
        return 77
    rc = server.stop()
    f.equal("the SDK client run exits 0", client.returncode, 0)
    if client.returncode != 0:
        print(client.stderr)
    f.equal("jsonlw serve exits 0 after SIGINT", rc, 0)
    if rc != 0:
        print(server.summary, server.stderr_text())

    check = subprocess.run([node, CHECK, "check", client_json, out], capture_output=True, text=True,
                           timeout=DEADLINE)
    print(check.stdout, end="")
    f.equal("the SDK's view equals the raw-output records (openai_sdk_check.mjs check)",
            check.returncode, 0)
    if check.returncode != 0:
        print(check.stderr)

    # 30 completions + models.list + 3 errors: 34 exchanges, each a request and a response line.
    completions = 30
    exchanges = completions + 1 + 3
    check_accounting(f, server, {"raw output": completions, "request trace": 2 * exchanges,
                                 "perf metrics": completions})
    requests = server.lines("request trace", "requests-*.jsonl")
    responses = server.lines("request trace", "responses-*.jsonl")
    f.equal("request lines", len(requests), exchanges)
    f.equal("response lines", len(responses), exchanges)
    auth = [v for r in requests for k, v in r["headers"] if k.lower() == "authorization"]
    f.equal("every SDK request's Authorization header is recorded as [redacted]",
            auth, ["[redacted]"] * exchanges)
    f.equal("no line holds the API key", any("sk-jsonlw-test-key" in str(r) for r in requests), False)
    f.equal("perf-metrics lines", len(server.lines("perf metrics")), completions)
    return f.exit_status()


if __name__ == "__main__":
    sys.exit(main())
