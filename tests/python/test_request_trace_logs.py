"""jsonlw.trtllm.RequestTraceWriter's lifecycle messages, faults and text rules
(tensorrt_llm/serve/request_trace.py):
"Recording request traces to <dir>" at start, "Disabling request trace output: ..." when the
directory cannot be made (a path through a regular file), "Failed to write request trace
JSONL: ..." when an append fails (its hour folder is a regular file), non-ASCII written raw,
every credential pattern redacted, and a cancelled stream recorded as client_disconnected."""

import asyncio
import json
import logging
import os
import time

import pytest

from conftest import read_lines, read_records
from jsonlw.trtllm import RequestTraceWriter


def messages(caplog, level):
    return [r.getMessage() for r in caplog.records if r.levelno == level]


async def test_start_says_where_it_records_and_a_second_start_says_nothing_more(out_dir, caplog):
    caplog.set_level(logging.INFO, logger="jsonlw")
    w = RequestTraceWriter(str(out_dir))
    await w.start()
    await w.start()
    await w.close()
    assert messages(caplog, logging.INFO).count(f"Recording request traces to {out_dir}") == 1
    assert not messages(caplog, logging.WARNING) and not messages(caplog, logging.ERROR)


async def test_a_directory_that_cannot_be_made_disables_the_writer_with_one_error(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="jsonlw")
    (tmp_path / "file").write_text("not a directory")
    w = RequestTraceWriter(str(tmp_path / "file" / "traces"))
    await w.start()
    w.record_request(route="/r")
    report = await w.close()
    assert report["stats"]["submitted"] == 0 and not w.enabled
    errors = messages(caplog, logging.ERROR)
    assert len(errors) == 1 and errors[0].startswith("Disabling request trace output: ")
    assert not [m for m in messages(caplog, logging.INFO) if m.startswith("Recording")]


async def test_an_append_that_fails_drops_its_batch_as_write_errors_and_warns_once(out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    out_dir.mkdir(parents=True)
    # The hour folder every line of this test goes to is a regular file: each append fails.
    w = RequestTraceWriter(str(out_dir))
    await w.start()
    stamp = 1_700_000_000.0  # 2023-11-14T22
    (out_dir / time.strftime("%Y-%m-%dT%H", time.gmtime(stamp))).write_text("in the way")
    w.record_request(route="/a", recorded_at=stamp)
    assert await w.flush() is True
    w.record_request(route="/b", recorded_at=stamp)
    report = await w.close()
    s = report["stats"]
    assert s["dropped"]["write_error"] == 2 and s["written"] == 0 and s["unknown"] == 0
    failed = [m for m in messages(caplog, logging.WARNING) if m.startswith("Failed to write request trace JSONL: ")]
    assert len(failed) == 1


async def test_non_ascii_text_is_written_raw_in_compact_lines(out_dir):
    w = RequestTraceWriter(str(out_dir))
    await w.start()
    tid = w.record_request(route="/r", body='{"prompt": "héllo ✓ 日本"}', session="s")
    w.record_response(tid, body='{"text": "réponse ✓"}')
    await w.close()
    lines = read_lines(out_dir)
    assert len(lines) == 2
    for line in lines:  # exactly Python's compact dump with ensure_ascii=False
        assert line == json.dumps(json.loads(line), separators=(",", ":"),
                                  ensure_ascii=False).encode()
    assert "héllo ✓ 日本".encode() in b"".join(lines)
    assert "réponse ✓".encode() in b"".join(lines)


async def test_every_credential_pattern_is_redacted_and_other_headers_kept_in_order(out_dir):
    w = RequestTraceWriter(str(out_dir))
    await w.start()
    headers = [("Proxy-Authorization", "Basic x"), ("Set-Cookie", "s=1"), ("X-My-Api_Key", "k1"),
               ("apikey", "k2"), ("X-Client-Secret", "k3"), ("db-password", "k4"),
               ("X-Refresh-Token", "k5"), ("X-API-KEY", "k6"), ("Accept", "text/html"),
               ("accept", "application/json"), ("X-Request-Id", "42")]
    w.record_request(route="/r", headers=headers)
    await w.close()
    (req,) = read_records(out_dir, "*/requests-*.jsonl")
    assert req["headers"] == [
        ["Proxy-Authorization", "[redacted]"], ["Set-Cookie", "[redacted]"],
        ["X-My-Api_Key", "[redacted]"], ["apikey", "[redacted]"],
        ["X-Client-Secret", "[redacted]"], ["db-password", "[redacted]"],
        ["X-Refresh-Token", "[redacted]"], ["X-API-KEY", "[redacted]"],
        ["Accept", "text/html"], ["accept", "application/json"], ["X-Request-Id", "42"]]


async def _frames(*frames):
    for f in frames:
        yield f
        await asyncio.sleep(0)


async def test_a_stream_cancelled_mid_way_is_recorded_as_client_disconnected(out_dir):
    w = RequestTraceWriter(str(out_dir))
    await w.start()
    h = w.begin(route="/v1/completions")
    started = asyncio.Event()

    async def consume():
        async for _ in h.wrap_stream(_endless()):
            started.set()

    async def _endless():
        while True:
            yield "data: x\n\n"
            await asyncio.sleep(0.001)

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(started.wait(), 20)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await w.close()
    (resp,) = read_records(out_dir, "*/responses-*.jsonl")
    assert resp["trace_id"] == h.trace_id and resp["status"] == "client_disconnected"
    assert resp["termination"]["cause"] == "cancelled"
    assert resp["response"]["body"].startswith("data: x\n\n")
