#!/usr/bin/env python3
"""Side by side, in one run: TensorRT-LLM-style asyncio writers (the baselines, written here
as tensorrt_llm/serve/perf_metrics.py and tensorrt_llm/executor/raw_output_hook.py behave)
against jsonlw.trtllm on the same records, on one asyncio loop.

  perf metrics   baseline: asyncio.Queue(1024), batches of 64, _jsonl_record + compact
                 json.dumps (NaN rejected) on the loop, asyncio.to_thread for the append
                 jsonlw:   jsonlw.trtllm.PerfMetricsJsonlWriter
  raw output     baseline: the hook keeps frames per (request, output) under a lock and, on
                 the final chunk, json.dumps + open/append/close in the caller's thread
                 jsonlw:   jsonlw.trtllm.RawOutputDump

The perf cases also run with a caller that reads `dropped_records` after every submit (as
callers read TensorRT-LLM's plain int attribute): "+read" (the attribute), and for jsonlw
"+stats read" (the same number summed from stats(), what the attribute cost before it read
the live counters).

Per case: records/s end to end (first submit to close done; the producer retries a refused
record after a 0.2 ms sleep, and waits 0.2 ms while the raw-output writer's queue is three-
quarters full, so every record is written), event-loop thread CPU per record
(time.thread_time() on the loop thread, over the same span), and event-loop lag p50/p99 of a
1 ms ticker running beside the producer. A script, not a test: figures vary by machine.

  PYTHONPATH=build/python /usr/bin/python3 bench/python/writers_bench.py [--records N] [--json F]
"""

import argparse
import asyncio
import copy
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import types

import jsonlw
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter, RawOutputDump

# --- the baseline perf-metrics writer (tensorrt_llm/serve/perf_metrics.py) ----------------

_TIMING_KEYS = ("timing_metrics", "first_iter", "last_iter", "kv_cache_metrics",
                "speculative_decoding")


def _coerce(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def _worker(phase, request_id):
    pm = {k: phase[k] for k in _TIMING_KEYS if k in phase}
    pm["timing_metrics"] = t = dict(pm["timing_metrics"])
    if "kv_cache_metrics" in pm:
        pm["kv_cache_metrics"] = {k: v for k, v in pm["kv_cache_metrics"].items()
                                  if k != "kv_cache_hit_rate"}
    if not t.get("kv_cache_size"):
        t.pop("kv_cache_size", None)
    for k in ("kv_cache_transfer_start", "kv_cache_transfer_end"):
        if not t.get(k):
            t.pop(k, None)
    out = {"request_id": _coerce(phase.get("request_id", request_id)), "perf_metrics": pm}
    if "time_breakdown_metrics" in phase:
        out["time_breakdown_metrics"] = phase["time_breakdown_metrics"]
    return out


def _jsonl_record(rec):
    phases = rec["phases"]
    if "disagg" not in phases:
        out = _worker(phases["server"], rec["request_id"])
        out["status"] = rec.get("status", "complete")
        return out
    d = phases["disagg"]
    t = d["timing_metrics"]
    return {"ctx_server": d["ctx_server"], "gen_server": d["gen_server"],
            "disagg_server_arrival_time": t["server_arrival_time"],
            "disagg_ctx_dispatch_time": t["ctx_dispatch_time"],
            "disagg_server_first_token_time": t["server_first_token_time"],
            "status": rec.get("status", "complete"),
            "ctx_perf_metrics": _worker(phases["ctx"], rec["request_id"]),
            "gen_perf_metrics": _worker(phases["gen"], rec["request_id"])}


class BaselinePerfMetricsWriter:
    QUEUE, BATCH, TIMEOUT = 1024, 64, 5.0
    _STOP = object()

    def __init__(self, directory):
        self.path = os.path.join(directory, f"perf_metrics-baseline-{os.getpid()}.jsonl")
        self.dropped_records = 0
        self._queue = None
        self._task = None

    async def start(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._queue = asyncio.Queue(self.QUEUE)
        self._task = asyncio.create_task(self._drain())

    def submit(self, record):
        try:
            self._queue.put_nowait(record)
            return SubmitResult.accepted
        except asyncio.QueueFull:
            self.dropped_records += 1
            return SubmitResult.dropped_queue_full

    def _append(self, text):
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(text)

    async def _drain(self):
        stop = False
        while not stop:
            item = await self._queue.get()
            if item is self._STOP:
                return
            batch = [item]
            while len(batch) < self.BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if nxt is self._STOP:
                    stop = True
                    break
                batch.append(nxt)
            lines = []
            for r in batch:
                try:
                    lines.append(json.dumps(_jsonl_record(r), separators=(",", ":"),
                                            allow_nan=False))
                except (KeyError, TypeError, ValueError):
                    self.dropped_records += 1
            if lines:
                try:
                    await asyncio.to_thread(self._append, "\n".join(lines) + "\n")
                except OSError:
                    self.dropped_records += len(lines)

    async def close(self):
        await asyncio.wait_for(self._queue.put(self._STOP), self.TIMEOUT)
        await asyncio.wait_for(self._task, self.TIMEOUT)


# --- the baseline raw-output hook (tensorrt_llm/executor/raw_output_hook.py: synchronous,
# one append per record) ------------------------------------------------------------------

class BaselineRawOutputDump:
    def __init__(self, directory):
        self.directory = directory
        self._lock = threading.Lock()
        self._pending = {}
        self._made = set()
        self.dropped = 0

    def __call__(self, chunk):
        key = (chunk.request_id, chunk.output_index)
        with self._lock:
            e = self._pending.get(key)
            if e is None:
                e = self._pending[key] = {"frames": [], "ids": [], "started_at": time.time(),
                                          "streaming": chunk.streaming}
            if chunk.text_diff:
                e["frames"].append(chunk.text_diff)
            e["ids"].extend(chunk.token_ids_diff)
            done = self._pending.pop(key) if chunk.is_final else None
        if done is not None:
            self._write(chunk, done)
        return chunk.text_diff

    def _write(self, chunk, e):
        try:
            now = time.gmtime()
            hour = time.strftime("%Y-%m-%dT%H", now)
            d = os.path.join(self.directory, hour)
            if d not in self._made:
                os.makedirs(d, exist_ok=True)
                self._made.add(d)
            rec = {"event": "raw_output", "request_id": str(chunk.request_id),
                   "output_index": chunk.output_index, "streaming": e["streaming"],
                   "aborted": chunk.aborted, "text": "".join(e["frames"]),
                   "frames": e["frames"], "token_ids": e["ids"],
                   "num_output_tokens": len(e["ids"])}
            line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"
            with open(os.path.join(d, f"raw-{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
                f.write(line)
        except (OSError, TypeError, ValueError):
            self.dropped += 1

    async def start(self):
        pass

    async def close(self):
        pass


# --- the measurement ----------------------------------------------------------------------

class Ticker:
    """A 1 ms ticker beside the producer: how late each tick wakes is the loop's lag."""

    def __init__(self):
        self.lags = []       # the whole run
        self.producing = []  # while the producer submits
        self.active = True
        self._task = None

    async def _run(self):
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(0.001)
            lag = time.perf_counter() - t0 - 0.001
            self.lags.append(lag)
            if self.active:
                self.producing.append(lag)

    def start(self):
        self._task = asyncio.create_task(self._run())

    async def stop(self):
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def perf_record(i):
    from_conftest = {
        "request_id": str(i), "status": "complete", "streaming": True,
        "metrics_headers": {"Server-Timing": "server_ttft;dur=25.000000"},
        "phases": {"server": {
            "first_iter": 812, "last_iter": 860,
            "timing_metrics": {"arrival_time": 1000.0021 + i, "first_scheduled_time": 1000.0053 + i,
                               "first_token_time": 1000.025 + i, "last_token_time": 1000.41 + i,
                               "server_arrival_time": 1000.0 + i,
                               "server_first_token_time": 1000.027 + i, "kv_cache_size": 0},
            "kv_cache_metrics": {"num_total_allocated_blocks": 5, "num_new_allocated_blocks": 3,
                                 "num_reused_blocks": 2, "num_missed_blocks": 3,
                                 "kv_cache_hit_rate": 0.4},
            "time_breakdown_metrics": {"step_metrics": [
                {"iter": k, "forward_start_time": 5310.11 + k, "forward_end_time": 5310.112 + k,
                 "sample_start_time": 5310.112 + k, "sample_end_time": 5310.113 + k,
                 "gpu_forward_time": 1.5, "gpu_sample_time": 0.5, "token_time": 5310.114 + k}
                for k in range(4)]},
        }},
    }
    return from_conftest


def _read_attribute(w):
    return w.dropped_records


def _read_stats(w):
    return sum(v for k, v in w.stats()["dropped"].items() if k != "closed")


async def run_perf(make_writer, records, read=None):
    w = make_writer()
    await w.start()
    ticker = Ticker()
    ticker.start()
    await asyncio.sleep(0.02)
    cpu0, t0 = time.thread_time(), time.perf_counter()
    retries = 0
    accepted = SubmitResult.accepted
    seen = 0
    for i, rec in enumerate(records):
        while w.submit(rec) is not accepted:
            retries += 1
            await asyncio.sleep(0.0002)  # back off (a spin on sleep(0) would burn loop CPU)
        if read is not None:
            seen = read(w)  # the caller checks the drop count after every submit
        if i % 64 == 63:
            await asyncio.sleep(0)  # a server yields between requests
    ticker.active = False
    await w.close()
    cpu1, t1 = time.thread_time(), time.perf_counter()
    await ticker.stop()
    dropped = w.dropped_records - retries
    return {"records_per_s": len(records) / (t1 - t0), "loop_cpu_us": (cpu1 - cpu0) / len(records) * 1e6,
            "lag_p50_ms": pct(ticker.producing, 50) * 1e3, "lag_p99_ms": pct(ticker.producing, 99) * 1e3,
            "lag_p99_whole_run_ms": pct(ticker.lags, 99) * 1e3,
            "refused_then_retried": retries, "lost": dropped, "seconds": t1 - t0,
            "last_read": seen}


async def run_raw(make_hook, outputs, chunks_per_output):
    h = make_hook()
    await h.start() if hasattr(h, "start") and asyncio.iscoroutinefunction(h.start) else None
    ticker = Ticker()
    ticker.start()
    await asyncio.sleep(0.02)
    text = "tok " * 4
    ids = [101, 102, 103, 104]
    chunks = [types.SimpleNamespace(request_id=0, output_index=0, text_diff=text, text=None,
                                    token_ids_diff=ids, is_final=k == chunks_per_output - 1,
                                    aborted=False, streaming=True, disagg_request_id=None)
              for k in range(chunks_per_output)]
    queued = h.stats if isinstance(h, RawOutputDump) else None
    backoffs = 0
    cpu0, t0 = time.thread_time(), time.perf_counter()
    for r in range(outputs):
        for c in chunks:
            c.request_id = r
            h(c)
        if r % 16 == 15:
            await asyncio.sleep(0)
        # The hook cannot refuse a record: past its queue (1024) the writer drops the newest.
        # A producer faster than the writer's thread (this one, on a busy machine) waits
        # while the queue is three-quarters full, so every record is written, as the perf
        # case retries a refused one.
        if queued and r % 64 == 63:
            while queued()["pending"] > 768:
                backoffs += 1
                await asyncio.sleep(0.0002)
    ticker.active = False
    if isinstance(h, RawOutputDump):
        res = h.close()
        if asyncio.isfuture(res):
            await res
    cpu1, t1 = time.thread_time(), time.perf_counter()
    await ticker.stop()
    return {"records_per_s": outputs / (t1 - t0), "loop_cpu_us": (cpu1 - cpu0) / outputs * 1e6,
            "lag_p50_ms": pct(ticker.producing, 50) * 1e3, "lag_p99_ms": pct(ticker.producing, 99) * 1e3,
            "lag_p99_whole_run_ms": pct(ticker.lags, 99) * 1e3,
            "seconds": t1 - t0, "lost": h.dropped, "backoffs": backoffs}


def count_lines(directory):
    n = 0
    for root, _, files in os.walk(directory):
        for f in files:
            if f.endswith(".jsonl"):
                with open(os.path.join(root, f), "rb") as fh:
                    n += sum(1 for _ in fh)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000, help="perf-metrics records per writer")
    ap.add_argument("--outputs", type=int, default=20_000, help="raw outputs per hook")
    ap.add_argument("--chunks", type=int, default=8, help="hook calls per output")
    ap.add_argument("--dir", default=None, help="where the files go (default: a temp dir)")
    ap.add_argument("--json", default=None, help="also write the results as JSON here")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="jsonlw-pybench-")
    records = [perf_record(i) for i in range(args.records)]
    results = {}

    d = os.path.join(base, "perf-baseline")
    results["perf_metrics/baseline"] = asyncio.run(run_perf(lambda: BaselinePerfMetricsWriter(d), records))
    results["perf_metrics/baseline"]["lines"] = count_lines(d)
    d2 = os.path.join(base, "perf-jsonlw")
    results["perf_metrics/jsonlw"] = asyncio.run(run_perf(lambda: PerfMetricsJsonlWriter(d2, "server"), records))
    results["perf_metrics/jsonlw"]["lines"] = count_lines(d2)
    d5 = os.path.join(base, "perf-baseline-read")
    results["perf_metrics/baseline+read"] = asyncio.run(
        run_perf(lambda: BaselinePerfMetricsWriter(d5), records, _read_attribute))
    results["perf_metrics/baseline+read"]["lines"] = count_lines(d5)
    d6 = os.path.join(base, "perf-jsonlw-read")
    results["perf_metrics/jsonlw+read"] = asyncio.run(
        run_perf(lambda: PerfMetricsJsonlWriter(d6, "server"), records, _read_attribute))
    results["perf_metrics/jsonlw+read"]["lines"] = count_lines(d6)
    d7 = os.path.join(base, "perf-jsonlw-stats-read")
    results["perf_metrics/jsonlw+stats read"] = asyncio.run(
        run_perf(lambda: PerfMetricsJsonlWriter(d7, "server"), records, _read_stats))
    results["perf_metrics/jsonlw+stats read"]["lines"] = count_lines(d7)

    d3 = os.path.join(base, "raw-baseline")
    results["raw_output/baseline"] = asyncio.run(run_raw(lambda: BaselineRawOutputDump(d3), args.outputs, args.chunks))
    results["raw_output/baseline"]["lines"] = count_lines(d3)
    d4 = os.path.join(base, "raw-jsonlw")
    results["raw_output/jsonlw"] = asyncio.run(run_raw(lambda: RawOutputDump(d4), args.outputs, args.chunks))
    results["raw_output/jsonlw"]["lines"] = count_lines(d4)

    print(f"jsonlw {jsonlw.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"{args.records} perf records, {args.outputs} raw outputs x {args.chunks} chunks, files in {base}")
    print("lag: a 1 ms ticker's lateness while the producer submits (p50, p99) and over the whole run")
    print(f"{'case':<30} {'records/s':>11} {'loop CPU/rec':>13} {'lag p50':>9} {'lag p99':>9} {'p99 all':>9} {'lines':>7} {'lost':>5}")
    for name, r in results.items():
        print(f"{name:<30} {r['records_per_s']:>11,.0f} {r['loop_cpu_us']:>10.2f} us "
              f"{r['lag_p50_ms']:>6.3f} ms {r['lag_p99_ms']:>6.3f} ms {r['lag_p99_whole_run_ms']:>6.3f} ms "
              f"{r['lines']:>7} {r['lost']:>5}")
    b = results["perf_metrics/baseline"]
    for case in ("jsonlw+read", "jsonlw+stats read"):
        j = results[f"perf_metrics/{case}"]
        print(f"perf_metrics, {case} after every submit: loop CPU per record "
              f"1/{b['loop_cpu_us'] / j['loop_cpu_us']:.1f} of the baseline's "
              f"(1/{results['perf_metrics/baseline+read']['loop_cpu_us'] / j['loop_cpu_us']:.1f} "
              f"of the baseline's reading its attribute)")
    for kind in ("perf_metrics", "raw_output"):
        b, j = results[f"{kind}/baseline"], results[f"{kind}/jsonlw"]
        print(f"{kind}: end to end {j['records_per_s'] / b['records_per_s']:.1f}x, "
              f"loop CPU per record 1/{b['loop_cpu_us'] / j['loop_cpu_us']:.1f}, "
              f"lag p99 {j['lag_p99_ms']:.3f} ms vs {b['lag_p99_ms']:.3f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
