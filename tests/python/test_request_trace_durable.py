"""jsonlw.trtllm.RequestTraceWriter(durable=True), the durable version of
tensorrt_llm/serve/request_trace.py from Python: a torn fragment left in a shard is isolated
by a newline before the next append and counted; the sidecar carries every field
TensorRT-LLM's sidecar has, its counts equal the close report's, and a close that times out
on a disk that stopped still publishes a closed sidecar counting what it dropped
(TensorRT-LLM's durable writer does so after its drain times out)."""

import asyncio
import json
import os
import re
import time

from conftest import StuckDisk, hour_folders, read_lines
from jsonlw.trtllm import RequestTraceWriter

SIDECAR_KEYS = ["schema", "generation", "pid", "writer_suffix", "started_at", "published_at",
                "sequence", "closed", "durability", "counts", "attributes", "shards", "errors"]


def sidecar(w):
    with open(w.sidecar_path) as f:
        return json.load(f)


def counts_of(stats):
    return {"submitted": stats["submitted"], "persisted": stats["written"],
            "dropped": stats["dropped"], "unknown": stats["unknown"], "pending": stats["pending"]}


async def test_a_torn_fragment_is_isolated_and_the_sidecar_accounts_for_the_shard(out_dir):
    hour = "2023-11-14T22"  # recorded_at 1_700_000_000 falls in it
    shard = out_dir / hour / f"requests-{os.getpid()}.jsonl"
    shard.parent.mkdir(parents=True)
    fragment = b'{"event":"request","tr'  # a line a killed writer left half-written
    shard.write_bytes(fragment)
    w = RequestTraceWriter(str(out_dir), durable=True)
    await w.start()
    for i in range(2):
        w.record_request(route=f"/r{i}", recorded_at=1_700_000_000.0)
    report = await w.close()
    assert report["stats"]["written"] == 2

    data = shard.read_bytes()
    assert data.startswith(fragment + b"\n")  # the fragment stays, alone on its line
    lines = data.split(b"\n")
    assert [json.loads(l)["route"] for l in lines[1:3]] == ["/r0", "/r1"] and lines[3] == b""

    side = sidecar(w)
    assert list(side) == SIDECAR_KEYS
    assert side["schema"] == "jsonlw-request-trace-writer/1"
    assert side["generation"] == w.generation and side["pid"] == os.getpid()
    assert side["writer_suffix"] == f"-{os.getpid()}" and side["closed"] is True
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", side["published_at"])
    assert side["counts"] == counts_of(report["stats"])
    assert side["attributes"] == {"sanitized": 0}
    assert side["errors"] == {"write_errors": 0, "last_error": None, "sidecar_errors": 0}
    assert side["shards"] == [{
        "file": f"{hour}/requests-{os.getpid()}.jsonl",
        "start_offset": len(fragment) + 1, "persisted_end": len(data),
        "persisted_records": 2, "fragments_isolated": 1, "unknown_extents": []}]


async def test_a_close_that_times_out_still_publishes_a_closed_sidecar_that_counts_the_drops(out_dir):
    w = RequestTraceWriter(str(out_dir), durable=True)
    await w.start()
    disks = [StuckDisk(os.path.join(d, f"requests-{os.getpid()}.jsonl"))
             for d in hour_folders(out_dir)]
    try:
        for i in range(1100):
            w.record_request(route="/r")
        report = await w.close()
        assert report["drained"] is False
        s = report["stats"]
        assert 1 <= s["unknown"] <= 32
        assert s["dropped"]["shutdown"] in (1024, 1024 - s["unknown"]), s
        # Published by a thread of its own (the strand must not wait on a disk that may be
        # stuck too), right after the timeout: wait for it.
        def closed():
            try:
                return sidecar(w)["closed"] is True
            except (OSError, ValueError):
                return False

        deadline = time.monotonic() + 20
        while not closed() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        side = sidecar(w)
        assert side["closed"] is True
        assert side["counts"] == counts_of(s)
        assert side["counts"]["persisted"] == 0
    finally:
        for d in disks:
            d.release()
