"""jsonlw.trtllm.RequestTraceWriter: TensorRT-LLM's request/response recording
(tensorrt_llm/serve/request_trace.py):
layout, redaction, sessions, hook semantics, durable mode and its sidecar."""

import asyncio
import gc
import glob
import json
import os
import re
import types

import pytest

from conftest import read_records
from jsonlw import SubmitResult
from jsonlw.trtllm import RequestTraceWriter


@pytest.fixture
async def trace(out_dir):
    w = RequestTraceWriter(str(out_dir))
    await w.start()
    yield w
    await w.close()


def kinds(out_dir):
    return (read_records(out_dir, "*/requests-*.jsonl"), read_records(out_dir, "*/responses-*.jsonl"))


async def test_request_and_response_lines_go_to_hour_folders_per_kind(trace, out_dir):
    tid = trace.record_request(route="/v1/chat/completions", headers=[("content-type", "application/json")],
                               body=b'{"model": "m", "messages": []}', session="s1",
                               server_arrival_time=123.5)
    assert re.fullmatch(r"tr_[0-9a-f]{32}", tid)
    assert trace.record_response(tid, session="s1", body='{"id": "chatcmpl-7"}', client_id=7,
                                 http_status=200) == SubmitResult.accepted
    await trace.flush()
    reqs, resps = kinds(out_dir)
    (req,), (resp,) = reqs, resps
    assert req["event"] == "request" and req["trace_id"] == tid and req["route"] == "/v1/chat/completions"
    assert req["body"] == {"model": "m", "messages": []} and req["server_arrival_time"] == 123.5
    assert req["status"] == "accepted"
    assert resp["event"] == "response" and resp["status"] == "completed" and resp["client_id"] == 7
    assert resp["response"] == {"kind": "json", "body": {"id": "chatcmpl-7"}}
    pid = os.getpid()
    (rf,) = glob.glob(str(out_dir / "*" / f"requests-{pid}.jsonl"))
    assert os.path.basename(os.path.dirname(rf)) == req["recorded_at"][:13]


async def test_the_request_line_reads_its_traceparent_header_and_the_handle_passes_it_to_the_response(
        trace, out_dir):
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    h = trace.begin(route="/r", headers=[("TraceParent", tp), ("x-tag", "a")])
    assert h.traceparent == tp
    h.finish(body="{}")
    tid = trace.record_request(route="/r", headers=[("traceparent", "00-zz")])  # invalid: ignored
    trace.record_response(tid, traceparent="00-zz")
    await trace.flush()
    reqs, resps = kinds(out_dir)
    assert [r.get("traceparent") for r in reqs] == [tp, None]
    assert [r.get("traceparent") for r in resps] == [tp, None]
    assert list(reqs[0])[-1] == "traceparent" and list(resps[0])[-1] == "traceparent"
    assert trace.invalid_traceparents == 1


async def test_the_hour_bucket_comes_from_each_lines_own_timestamp(trace, out_dir):
    tid = trace.record_request(route="/r", recorded_at=1_700_000_000.0)  # 2023-11-14T22
    trace.record_response(tid, finished_at=1_700_003_700.0)              # 2023-11-14T23
    await trace.flush()
    assert glob.glob(str(out_dir / "2023-11-14T22" / "requests-*.jsonl"))
    assert glob.glob(str(out_dir / "2023-11-14T23" / "responses-*.jsonl"))


async def test_credentials_are_redacted_and_repeated_headers_survive(trace, out_dir):
    headers = [("Authorization", "Bearer sk-1"), ("cookie", "a=b"), ("X-Api-Key", "k"),
               ("x-session-token", "t"), ("accept", "a"), ("accept", "b"), (b"x-raw", b"v")]
    trace.record_request(route="/r", headers=headers)
    await trace.flush()
    (req,), _ = kinds(out_dir)
    assert req["headers"] == [["Authorization", "[redacted]"], ["cookie", "[redacted]"],
                              ["X-Api-Key", "[redacted]"], ["x-session-token", "[redacted]"],
                              ["accept", "a"], ["accept", "b"], ["x-raw", "v"]]


@pytest.mark.parametrize("raw,written", [("user 1/../x", "user_1_.._x"), ("", "_no_session"),
                                         (".hidden", "_no_session"), ("a" * 300, "a" * 128)])
async def test_the_session_key_is_sanitized(trace, out_dir, raw, written):
    trace.record_request(route="/r", session=raw)
    await trace.flush()
    (req,), _ = kinds(out_dir)
    assert req["session"] == written


async def test_a_body_that_is_not_json_is_kept_as_text_with_the_parse_error(trace, out_dir):
    trace.record_request(route="/r", body=b"{not json", status="rejected_400",
                         validation_errors=[{"loc": ["body", 0], "type": "json_invalid", "msg": "bad"}])
    await trace.flush()
    (req,), _ = kinds(out_dir)
    assert req["body"] == "{not json" and req["body_parse_error"]
    assert req["status"] == "rejected_400"
    assert req["validation_errors"] == [{"loc": ["body", "0"], "type": "json_invalid", "msg": "bad"}]


async def test_byte_frames_are_joined_before_decoding(trace, out_dir):
    euro = "€".encode()
    tid = trace.record_request(route="/r")
    trace.record_response(tid, response_kind="sse_text", body=[b"data: " + euro[:1], euro[1:] + b"\n\n"])
    await trace.flush()
    _, (resp,) = kinds(out_dir)
    assert resp["response"] == {"kind": "sse_text", "body": "data: €\n\n"}


async def test_internal_disagg_hops_and_re_entry_are_not_traced(trace, out_dir):
    assert trace.begin(route="/r", disaggregated_params={"request_type": "context_only"}) is None
    assert trace.begin(route="/r", disaggregated_params=types.SimpleNamespace(
        request_type="generation_only")) is None
    state = types.SimpleNamespace()
    h = trace.begin(route="/v1/messages", request_state=state,
                    disaggregated_params={"request_type": "something_new"})
    assert h is not None and state.trtllm_request_trace is h
    assert trace.begin(route="/v1/chat/completions", request_state=state) is None  # re-entry
    await trace.flush()
    reqs, _ = kinds(out_dir)
    assert [r["route"] for r in reqs] == ["/v1/messages"]


async def test_the_response_is_written_once_per_handle(trace, out_dir):
    h = trace.begin(route="/r")
    assert h.finish(body="{}") == SubmitResult.accepted
    assert h.finish(body="{}") is None
    await trace.flush()
    _, resps = kinds(out_dir)
    assert len(resps) == 1


async def _frames(*items, fail=None):
    for i in items:
        yield i
    if fail:
        raise fail


async def test_stream_status_completed_disconnected_error_and_not_started(trace, out_dir):
    h = trace.begin(route="/a")
    assert [f async for f in h.wrap_stream(_frames("data: 1\n\n", "data: [DONE]\n\n"))] == [
        "data: 1\n\n", "data: [DONE]\n\n"]
    h2 = trace.begin(route="/b")
    s = h2.wrap_stream(_frames("data: 1\n\n", "data: 2\n\n"))
    await s.__anext__()
    await s.aclose()  # the client went away
    h3 = trace.begin(route="/c")
    with pytest.raises(ValueError):
        async for _ in h3.wrap_stream(_frames("x", fail=ValueError("engine"))):
            pass
    h4 = trace.begin(route="/d")
    s4 = h4.wrap_stream(_frames("never"))
    del s4
    gc.collect()
    await trace.flush()
    reqs, resps = kinds(out_dir)
    by_id = {r["trace_id"]: r for r in resps}
    assert by_id[h.trace_id]["status"] == "completed"
    assert by_id[h.trace_id]["response"]["body"] == "data: 1\n\ndata: [DONE]\n\n"
    assert by_id[h2.trace_id]["status"] == "client_disconnected"
    assert by_id[h3.trace_id]["status"] == "error"
    assert by_id[h4.trace_id]["status"] == "client_disconnected"
    assert by_id[h4.trace_id]["termination"] == {"cause": "not_started", "detail": None}


async def test_the_directory_comes_from_the_environment(out_dir, monkeypatch):
    monkeypatch.setenv("TRTLLM_REQUEST_TRACE_DIR", str(out_dir))
    w = RequestTraceWriter()
    await w.start()
    w.record_request(route="/r")
    await w.close()
    assert len(read_records(out_dir)) == 1


async def test_without_a_directory_nothing_happens(monkeypatch):
    monkeypatch.delenv("TRTLLM_REQUEST_TRACE_DIR", raising=False)
    w = RequestTraceWriter()
    await w.start()
    assert w.record_request(route="/r") is None
    assert w.begin(route="/r") is None
    await w.close()


async def test_the_writer_suffix_names_the_files(out_dir):
    w = RequestTraceWriter(str(out_dir), writer_suffix="-frontend7")
    await w.start()
    w.record_request(route="/r")
    await w.close()
    assert glob.glob(str(out_dir / "*" / "requests-frontend7.jsonl"))


async def test_durable_mode_publishes_the_accounting_sidecar(out_dir):
    w = RequestTraceWriter(str(out_dir), durable=True)
    await w.start()
    gen = w.generation
    assert re.fullmatch(rf"{os.getpid()}-\d+-[0-9a-f]{{8}}", gen)
    for i in range(10):
        tid = w.record_request(route=f"/r{i}")
        w.record_response(tid)
    w.record_response("")  # no trace id: malformed
    report = await w.close()
    assert report["stats"]["written"] == 20 and report["stats"]["dropped"]["malformed"] == 1
    with open(w.sidecar_path) as f:
        side = json.load(f)
    assert side["generation"] == gen and side["closed"] is True
    assert side["counts"]["persisted"] == 20 and side["counts"]["pending"] == 0
    assert os.path.dirname(w.sidecar_path) == str(out_dir / "_writer")


async def test_a_malformed_trace_is_dropped_counted_and_the_next_written(trace, out_dir):
    trace.record_request(route=12)  # not a str
    trace.record_request(route="/ok")
    await trace.flush()
    s = trace.stats()
    assert s["dropped"]["malformed"] == 1 and s["written"] == 1


def test_construction_misuse_raises_clearly(tmp_path):
    with pytest.raises(TypeError):
        RequestTraceWriter(5)
    with pytest.raises(TypeError):
        RequestTraceWriter(str(tmp_path), durable="yes")
    with pytest.raises(TypeError):
        RequestTraceWriter(str(tmp_path), writer_suffix=3)


async def test_unpaired_surrogates_are_replaced_and_counted_as_sanitized(trace, out_dir):
    trace.record_request(route="/r", body="bad \udcff text", session="s")
    await trace.flush()
    (req,), _ = kinds(out_dir)
    assert req["body"] == "bad \ufffd text"
    assert trace.stats()["sanitized"] == 1
