"""Shared helpers of the jsonlw Python tests (run against the built or installed package)."""

import asyncio
import copy
import glob
import json
import os
import threading
import time

import pytest


def jsonl_files(directory, pattern="**/*.jsonl"):
    return sorted(glob.glob(os.path.join(str(directory), pattern), recursive=True))


def read_lines(directory, pattern="**/*.jsonl"):
    out = []
    for f in jsonl_files(directory, pattern):
        with open(f, "rb") as fh:
            out.extend(fh.read().splitlines())
    return out


def read_records(directory, pattern="**/*.jsonl"):
    return [json.loads(line) for line in read_lines(directory, pattern)]


# The internal record TensorRT-LLM's middleware (PerfMetricsMiddleware,
# tensorrt_llm/serve/perf_metrics.py) submits for the aggregated worker example.
WORKER_RECORD = {
    "schema_version": 1,
    "request_id": "42",
    "status": "complete",
    "streaming": True,
    "metrics_headers": {"X-TRTLLM-Start-End-Time": "server-start;ts=1000.000000000"},
    "phases": {
        "server": {
            "first_iter": 812,
            "last_iter": 860,
            "timing_metrics": {
                "arrival_time": 1000.0021, "first_scheduled_time": 1000.0053,
                "first_token_time": 1000.0250, "last_token_time": 1000.4100,
                "server_arrival_time": 1000.0000, "server_first_token_time": 1000.0270,
                "kv_cache_size": 0,
            },
            "kv_cache_metrics": {
                "num_total_allocated_blocks": 5, "num_new_allocated_blocks": 3,
                "num_reused_blocks": 2, "num_missed_blocks": 3, "kv_cache_hit_rate": 0.4,
            },
            "time_breakdown_metrics": {
                "ctx_chunk_metrics": [{
                    "forward_start_time": 5310.101, "forward_end_time": 5310.104,
                    "sample_start_time": 5310.104, "sample_end_time": 5310.105,
                    "gpu_forward_time": 3.0, "gpu_sample_time": 0.25, "token_time": 5310.106}],
                "step_metrics": [{
                    "iter": 1, "forward_start_time": 5310.110, "forward_end_time": 5310.112,
                    "sample_start_time": 5310.112, "sample_end_time": 5310.113,
                    "gpu_forward_time": 1.5, "gpu_sample_time": 0.5, "token_time": 5310.114}],
            },
            "metrics_headers": {"Server-Timing": "server_ttft;dur=25.000000"},
        }
    },
}

# The aggregated worker example as the file holds it (Python's compact json.dumps of the parsed
# values; the same bytes as the C++ PerfMetricsWriter's golden test).
WORKER_LINE = (
    b'{"request_id":42,"perf_metrics":{"timing_metrics":{"arrival_time":1000.0021,'
    b'"first_scheduled_time":1000.0053,"first_token_time":1000.025,"last_token_time":1000.41,'
    b'"server_arrival_time":1000.0,"server_first_token_time":1000.027},"first_iter":812,'
    b'"last_iter":860,"kv_cache_metrics":{"num_total_allocated_blocks":5,'
    b'"num_new_allocated_blocks":3,"num_reused_blocks":2,"num_missed_blocks":3}},'
    b'"time_breakdown_metrics":{"ctx_chunk_metrics":[{"forward_start_time":5310.101,'
    b'"forward_end_time":5310.104,"sample_start_time":5310.104,"sample_end_time":5310.105,'
    b'"gpu_forward_time":3.0,"gpu_sample_time":0.25,"token_time":5310.106}],'
    b'"step_metrics":[{"iter":1,"forward_start_time":5310.11,"forward_end_time":5310.112,'
    b'"sample_start_time":5310.112,"sample_end_time":5310.113,"gpu_forward_time":1.5,'
    b'"gpu_sample_time":0.5,"token_time":5310.114}]},"status":"complete"}'
)

DISAGG_RECORD = {
    "schema_version": 1,
    "request_id": "1",
    "status": "complete",
    "disagg_request_id": 1,
    "phases": {
        "disagg": {
            "ctx_server": "http://ctx0:8001", "gen_server": "http://gen0:8002",
            "timing_metrics": {
                "arrival_time": 1000.000, "last_token_time": 1000.200,
                "server_arrival_time": 1000.000, "ctx_dispatch_time": 1000.0005,
                "server_first_token_time": 1000.078,
            },
        },
        "ctx": {
            "request_id": "ctx-1",
            "timing_metrics": {
                "server_arrival_time": 1000.001, "arrival_time": 1000.003,
                "first_scheduled_time": 1000.006, "first_token_time": 1000.010,
                "last_token_time": 1000.010, "server_first_token_time": 1000.015,
            },
        },
        "gen": {
            "request_id": "gen-1",
            "timing_metrics": {
                "server_arrival_time": 1000.021, "arrival_time": 1000.028,
                "kv_cache_transfer_start": 1000.036, "kv_cache_transfer_end": 1000.045,
                "first_scheduled_time": 1000.055, "first_token_time": 1000.066,
                "last_token_time": 1000.200, "server_first_token_time": 1000.066,
            },
        },
    },
}

# disagg_request_id last, and the ctx/gen timing keys in the order the record gives them
# (TensorRT-LLM's _jsonl_record() appends the id after gen_perf_metrics and copies the dicts).
DISAGG_LINE = (
    b'{"ctx_server":"http://ctx0:8001","gen_server":"http://gen0:8002",'
    b'"disagg_server_arrival_time":1000.0,"disagg_ctx_dispatch_time":1000.0005,'
    b'"disagg_server_first_token_time":1000.078,"status":"complete",'
    b'"ctx_perf_metrics":{"request_id":"ctx-1","perf_metrics":{"timing_metrics":{'
    b'"server_arrival_time":1000.001,"arrival_time":1000.003,"first_scheduled_time":1000.006,'
    b'"first_token_time":1000.01,"last_token_time":1000.01,"server_first_token_time":1000.015}}},'
    b'"gen_perf_metrics":{"request_id":"gen-1","perf_metrics":{"timing_metrics":{'
    b'"server_arrival_time":1000.021,"arrival_time":1000.028,"kv_cache_transfer_start":1000.036,'
    b'"kv_cache_transfer_end":1000.045,"first_scheduled_time":1000.055,"first_token_time":1000.066,'
    b'"last_token_time":1000.2,"server_first_token_time":1000.066}}},"disagg_request_id":1}'
)


def worker_record(**over):
    rec = copy.deepcopy(WORKER_RECORD)
    rec.update(over)
    return rec


def simple_record(request_id="7", **timing):
    t = {"arrival_time": 10.0, "last_token_time": 11.0}
    t.update(timing)
    return {"request_id": request_id, "status": "complete",
            "phases": {"server": {"timing_metrics": t}}}


class StuckDisk:
    """A full FIFO at `path`: opening it works, writing to it blocks until release()."""

    def __init__(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.mkfifo(path)
        self._fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # also the reader: opens never block
        for size in (65536, 1):
            try:
                while True:
                    os.write(self._fd, b"x" * size)
            except BlockingIOError:
                pass

    def release(self):
        """Drains the FIFO from now on, so the blocked append returns (a daemon thread)."""
        os.set_blocking(self._fd, True)

        def drain():
            while True:
                try:
                    os.read(self._fd, 1 << 20)
                except OSError:
                    return

        threading.Thread(target=drain, daemon=True).start()


class LoopTicker:
    """Counts its turns on the running asyncio loop, one per `period` seconds (0: one per pass
    of the loop), from start() until stop(): `ticks` grows only while the loop is not held."""

    def __init__(self, period=0.0):
        self.period = period
        self.ticks = 0
        self._task = None

    async def _run(self):
        while True:
            self.ticks += 1
            await asyncio.sleep(self.period)

    def start(self):
        self._task = asyncio.create_task(self._run())
        return self

    def stop(self):
        self._task.cancel()


def hour_folders(root):
    """The UTC hour folder a record made now goes to, and the next one (a test that runs
    across the hour puts later records there)."""
    now = time.time()
    return [os.path.join(str(root), time.strftime("%Y-%m-%dT%H", time.gmtime(t)))
            for t in (now, now + 3600)]


@pytest.fixture
def out_dir(tmp_path):
    return tmp_path / "out"
