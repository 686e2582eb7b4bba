"""A disk that stops returning, for each drop-in (as TensorRT-LLM's writers in
tensorrt_llm/serve/perf_metrics.py and request_trace.py do: close() gives up after its
5 s shutdown timeout with "Timed out flushing ...; dropping remaining records", and a full
queue warns at the 1st and every 1000th drop). The fault is real: where the writer's file
goes there is a FIFO that is already full, so the writer's first append blocks in the kernel
until the test drains it. jsonlw counts every record at the timeout — queued ones as
`shutdown`, the batch stuck in the append as `unknown` — where TensorRT-LLM's perf and basic
trace writers lose them uncounted — and the event loop keeps running throughout."""

import asyncio
import logging
import os
import socket
import time
import types

import pytest

from conftest import StuckDisk, hour_folders, simple_record
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter, RawOutputDump, RequestTraceWriter

RECORDS = 3100  # past the queue (1024) and one batch (at most 1024), by more than 1000
QUEUE = 1024


async def close_while_ticking(writer):
    """Closes `writer` while a 10 ms ticker runs on the loop: (report, seconds, ticks)."""
    ticks = 0
    done = False

    async def ticker():
        nonlocal ticks
        while not done:
            await asyncio.sleep(0.01)
            ticks += 1

    t = asyncio.ensure_future(ticker())
    t0 = time.monotonic()
    report = await writer.close()
    seconds = time.monotonic() - t0
    done = True
    await t
    return report, seconds, ticks


def warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def check_timed_out(report, seconds, ticks, batch):
    assert 4.9 <= seconds <= 7.0, seconds  # the 5 s shutdown timeout, once
    assert ticks >= 200, ticks             # the loop ran all along (500 ticks in 5 s)
    assert report["drained"] is False
    s = report["stats"]
    assert s["submitted"] == RECORDS
    assert s["written"] == 0 and s["pending"] == 0
    assert 1 <= s["unknown"] <= batch  # the batch stuck in the append
    # The queued records, counted. The polling drain took its one batch (its append never
    # returns) whenever its look came — before the queue filled, while the producer was being
    # refused, or after it was done — so the queue held QUEUE records once, and at most the
    # stuck batch more went in: every accepted record is the stuck batch or queued at close.
    accepted = RECORDS - s["dropped"]["queue_full"]
    assert QUEUE <= accepted <= QUEUE + s["unknown"], s
    assert s["dropped"]["shutdown"] == accepted - s["unknown"], s
    assert s["submitted"] == s["written"] + sum(s["dropped"].values()) + s["unknown"] + s["pending"]
    return s


async def test_perf_metrics_close_gives_up_after_its_timeout_on_a_disk_that_stopped(
        out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    disk = StuckDisk(w.file_path)
    try:
        results = [w.submit(simple_record(str(i))) for i in range(RECORDS)]
        report, seconds, ticks = await close_while_ticking(w)
        s = check_timed_out(report, seconds, ticks, batch=64)
        assert results.count(SubmitResult.dropped_queue_full) == s["dropped"]["queue_full"]
        assert w.dropped_records == RECORDS - s["unknown"]
        msgs = warnings(caplog)
        assert msgs.count("Dropped 1 performance metrics records") == 1
        assert msgs.count("Dropped 1000 performance metrics records") == 1
        assert msgs.count(
            "Timed out flushing performance metrics JSONL; dropping remaining records") == 1
    finally:
        disk.release()


async def test_raw_output_close_gives_up_after_its_timeout_on_a_disk_that_stopped(
        out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    h = RawOutputDump(str(out_dir))
    assert await h.flush() is True  # started: its directory exists
    disks = [StuckDisk(os.path.join(d, f"raw-{os.getpid()}.jsonl")) for d in hour_folders(out_dir)]
    try:
        for i in range(RECORDS):  # one-chunk outputs: a record each
            verdict = h(types.SimpleNamespace(
                request_id=i, output_index=0, text_diff="hi", text=None, token_ids_diff=[7],
                is_final=True, aborted=False, streaming=False, disagg_request_id=None))
            assert verdict.text == "hi"
        report, seconds, ticks = await close_while_ticking(h)
        s = check_timed_out(report, seconds, ticks, batch=1024)  # the engine's default cap
        assert h.counters()["finished"] == RECORDS
        assert h.dropped == RECORDS - s["unknown"]
        msgs = warnings(caplog)
        assert msgs.count("Dropped 1 raw output records") == 1
        assert msgs.count("Dropped 1000 raw output records") == 1
        assert msgs.count("Timed out flushing raw output JSONL; dropping remaining records") == 1
    finally:
        for d in disks:
            d.release()


@pytest.mark.parametrize("durable", [False, True], ids=["basic", "durable"])
async def test_request_trace_close_gives_up_after_its_timeout_on_a_disk_that_stopped(
        out_dir, caplog, durable):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    w = RequestTraceWriter(str(out_dir), durable=durable)
    await w.start()
    disks = [StuckDisk(os.path.join(d, f"requests-{os.getpid()}.jsonl"))
             for d in hour_folders(out_dir)]
    try:
        for i in range(RECORDS):
            assert w.record_request(route="/v1/completions", body=b'{"prompt":"hi"}').startswith("tr_")
        report, seconds, ticks = await close_while_ticking(w)
        check_timed_out(report, seconds, ticks, batch=32)
        msgs = warnings(caplog)
        full = ": the writer queue is full" if durable else ""  # durable: TensorRT-LLM's wording
        assert msgs.count(f"Dropped 1 request trace records{full}") == 1
        assert msgs.count(f"Dropped 1000 request trace records{full}") == 1
        assert msgs.count("Timed out flushing request traces; dropping remaining records") == 1
        assert not [m for m in msgs if "request trace JSONL" in m]
    finally:
        for d in disks:
            d.release()


async def test_65_queued_records_go_out_as_a_batch_of_64_then_1(out_dir):
    # TensorRT-LLM's Python writer's test "65 queued -> 64 + 1", seen exactly: with the disk stuck, close finds the
    # first batch in the append (unknown) and the last record still queued (shutdown). The
    # drain writes as soon as start() returns, so the file (named after start()'s second) is
    # a full FIFO already, for each of the next few seconds.
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    for i in range(65):  # queued before the drain starts
        assert w.submit(simple_record(str(i))) == SubmitResult.accepted
    prefix = f"perf_metrics-server-{socket.gethostname()}-{os.getpid()}-"
    now = time.time()
    disks = [StuckDisk(os.path.join(str(out_dir), prefix + time.strftime(
        "%Y%m%dT%H%M%SZ", time.gmtime(now + k)) + ".jsonl")) for k in range(4)]
    try:
        await w.start()
        assert os.path.basename(w.file_path).startswith(prefix)
        report = await w.close()
        s = report["stats"]
        assert report["drained"] is False
        assert s["unknown"] == 64 and s["dropped"]["shutdown"] == 1 and s["written"] == 0
    finally:
        for d in disks:
            d.release()
