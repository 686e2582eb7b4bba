"""The operator features from Python (docs/python.md, "Operator features"): format="otlp",
chain="sha256"/"hmac-sha256" with chain_key, capture="metadata" on jsonlw.trtllm's writers —
the bytes in the files, and a clear error for a bad value."""

import copy
import hashlib
import hmac
import json
import types

import pytest

from conftest import WORKER_RECORD, jsonl_files, read_lines, read_records
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter, RawOutputDump, RequestTraceWriter

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def chain_values(lines, start=b"0" * 64, key=None):
    """Recomputes docs/chain.md's values: each line's key removed, hashed after the previous value."""
    prev, out = start, []
    for line in lines:
        head, sep, tail = line.rpartition(b',"chain":"')
        assert sep and tail.endswith(b'"}') and len(tail) == 66
        body = head + b"}"
        v = (hmac.new(key, prev + body, hashlib.sha256) if key else hashlib.sha256(prev + body)).hexdigest()
        assert tail[:64].decode() == v
        prev = v.encode()
        out.append(v)
    return out


async def test_perf_metrics_as_otlp_one_logs_data_line_with_the_trace_ids(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server", format="otlp")
    await w.start()
    assert w.submit(dict(copy.deepcopy(WORKER_RECORD), traceparent=TP)) == SubmitResult.accepted
    report = await w.close()
    assert report["stats"]["written"] == 1
    (line,) = read_lines(out_dir)
    doc = json.loads(line)
    (rl,) = doc["resourceLogs"]
    attrs = {a["key"]: a["value"] for a in rl["resource"]["attributes"]}
    assert attrs["process.pid"]["intValue"].isdigit()
    (sl,) = rl["scopeLogs"]
    assert sl["scope"]["name"] == "jsonlw"
    (rec,) = sl["logRecords"]
    assert rec["eventName"] == "jsonlw.perf_metrics"
    assert rec["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736" and rec["spanId"] == "00f067aa0ba902b7"
    assert rec["flags"] == 1 and rec["severityNumber"] == 9
    keys = [kv["key"] for kv in rec["body"]["kvlistValue"]["values"]]
    assert keys[0] == "request_id" and "traceparent" not in keys
    assert report["stats"]["bytes"] == len(line) + 1


async def test_perf_metrics_with_a_sha256_chain_every_line_recomputes(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server", chain="sha256")
    await w.start()
    for _ in range(3):
        assert w.submit(copy.deepcopy(WORKER_RECORD)) == SubmitResult.accepted
    await w.close()
    lines = read_lines(out_dir)
    assert len(lines) == 3
    assert len(set(chain_values(lines))) == 3
    # The manifest (docs/chain.md) is <stem>.chain beside the file, not a *.jsonl.
    assert [p.name for p in out_dir.iterdir() if p.suffix == ".chain"] == ["perf_metrics-server.chain"]
    assert len(jsonl_files(out_dir)) == 1


async def test_request_traces_with_hmac_and_metadata_capture(out_dir, tmp_path):
    key = tmp_path / "chain.key"
    key.write_bytes(b"a secret key\n")
    w = RequestTraceWriter(str(out_dir), capture="metadata", chain="hmac-sha256", chain_key=key)
    await w.start()
    body = b'{"model":"m","prompt":"secret prompt"}'  # compact: written (and digested) as is
    tid = w.record_request(route="/v1/completions", headers=[("traceparent", TP)], body=body)
    w.record_response(tid, body='{"text": "secret answer"}', http_status=200)
    await w.close()
    lines = read_lines(out_dir, "*/requests-*.jsonl")
    (req,) = [json.loads(l) for l in lines]
    assert req["capture"] == "metadata" and "body" not in req
    assert req["body_len"] == len(body)
    assert req["body_sha256"] == hashlib.sha256(body).hexdigest()
    assert req["traceparent"] == TP
    assert b"secret" not in b"".join(read_lines(out_dir))
    chain_values(lines, key=b"a secret key\n")
    with pytest.raises(AssertionError):
        chain_values(lines, key=b"another key")


def test_raw_output_metadata_capture_keeps_lengths_and_digests(out_dir):
    d = RawOutputDump(str(out_dir), capture="metadata", chain="sha256")
    for i, diff in enumerate(["hel", "lo"]):
        d(types.SimpleNamespace(request_id=1, output_index=0, text_diff=diff, text=None,
                                token_ids_diff=[i + 5], is_final=i == 1, aborted=False,
                                streaming=True, disagg_request_id=None))
    d.close(timeout=10)
    lines = read_lines(out_dir)
    (rec,) = [json.loads(l) for l in lines]
    assert rec["capture"] == "metadata" and "text" not in rec and "frames" not in rec
    assert rec["text_len"] == 5 and rec["frame_lens"] == [3, 2]
    assert rec["text_sha256"] == hashlib.sha256(b"hello").hexdigest()
    chain_values(lines)


@pytest.mark.parametrize("kwargs, message", [
    (dict(format="xml"), "format must be 'jsonl' or 'otlp'"),
    (dict(chain="md5"), "chain must be None, 'sha256' or 'hmac-sha256'"),
    (dict(chain="hmac-sha256"), "needs chain_key"),
    (dict(chain="sha256", chain_key="/nonexistent"), "chain_key is only for chain='hmac-sha256'"),
    (dict(chain="hmac-sha256", chain_key="/nonexistent/key"), "/nonexistent/key"),
])
def test_a_bad_value_is_a_value_error_naming_it(out_dir, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        PerfMetricsJsonlWriter(str(out_dir), "server", **kwargs)


def test_a_bad_type_is_a_type_error(out_dir):
    with pytest.raises(TypeError):
        PerfMetricsJsonlWriter(str(out_dir), "server", format=1)
    with pytest.raises(TypeError):
        RawOutputDump(str(out_dir), capture=None)
    with pytest.raises(ValueError, match="capture must be 'full' or 'metadata'"):
        RequestTraceWriter(str(out_dir), capture="none")
