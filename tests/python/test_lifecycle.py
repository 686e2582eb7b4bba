"""Interpreter exit with open writers (closed within their shutdown timeouts, no hang, counts
logged) and fork() (a child never writes through what it inherited; its own writers work)."""

import glob
import json
import os
import subprocess
import sys
import textwrap
import time


def run_py(code, cwd, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, cwd=str(cwd), timeout=timeout)
    return p, time.monotonic() - t0


def lines(pattern):
    out = []
    for f in glob.glob(pattern, recursive=True):
        with open(f) as fh:
            out += [json.loads(l) for l in fh]
    return out


def test_open_writers_are_closed_at_exit_without_a_hang(tmp_path):
    code = f"""
        import asyncio, logging, types
        logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
        from jsonlw.trtllm import PerfMetricsJsonlWriter, RawOutputDump, RequestTraceWriter
        async def main():
            w = PerfMetricsJsonlWriter({str(tmp_path / 'pm')!r}, "server")
            await w.start()
            for i in range(3000):
                w.submit({{"request_id": str(i), "phases": {{"server": {{"timing_metrics": {{}}}}}}}})
            t = RequestTraceWriter({str(tmp_path / 'tr')!r})
            await t.start()
            t.record_request(route="/r")
            d = RawOutputDump({str(tmp_path / 'raw')!r})
            d(types.SimpleNamespace(request_id=1, text_diff="in flight"))
            globals()["keep"] = (w, t, d)  # never closed
        asyncio.run(main())
        print("main done")
    """
    p, took = run_py(code, tmp_path)
    assert p.returncode == 0, p.stderr
    assert took < 20
    assert len(lines(str(tmp_path / "pm" / "*.jsonl"))) + 0 == 3000 or "dropped" in p.stderr
    assert len(lines(str(tmp_path / "tr" / "**" / "*.jsonl"))) == 1
    (raw,) = lines(str(tmp_path / "raw" / "**" / "*.jsonl"))
    assert raw["end_reason"] == "shutdown"
    assert "closed at exit: submitted 3000" in p.stderr, p.stderr


def test_exit_does_not_hang_on_a_writer_whose_disk_stopped(tmp_path):
    # The perf-metrics file is a full FIFO nobody drains: the writer's first append blocks
    # for good, as on a hung network mount. Exit closes it within its timeout, logs the
    # counts, and leaves the writer to its stuck thread instead of waiting for it.
    code = f"""
        import asyncio, logging, sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
        from conftest import StuckDisk, simple_record
        from jsonlw.trtllm import PerfMetricsJsonlWriter
        async def main():
            w = PerfMetricsJsonlWriter({str(tmp_path / 'pm')!r}, "server")
            await w.start()
            disk = StuckDisk(w.file_path)  # never released
            for i in range(500):
                w.submit(simple_record(str(i)))
            globals()["keep"] = (w, disk)  # never closed by the program
        asyncio.run(main())
        print("main done", flush=True)
    """
    p, took = run_py(code, tmp_path)
    assert p.returncode == 0, p.stderr
    assert "main done" in p.stdout
    assert took < 20, took  # the 5 s shutdown timeout, not forever
    assert "Timed out flushing performance metrics JSONL; dropping remaining records" in p.stderr
    assert "closed at exit: submitted 500, written 0" in p.stderr, p.stderr


def test_a_writer_collected_while_its_append_is_stuck_keeps_logging_into_live_memory(tmp_path):
    # The writer object goes away while its append is stuck (it is left to its thread), then
    # the disk fails the append: the I/O thread logs "Failed to write ..." into the log queue,
    # which the writer must still own. Allocation-heavy work afterwards catches a corrupted
    # heap (MALLOC_CHECK_=3 aborts on one).
    code = f"""
        import asyncio, gc, os, sys, time
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from conftest import StuckDisk, simple_record
        from jsonlw.trtllm import PerfMetricsJsonlWriter
        async def main():
            for round in range(2):
                w = PerfMetricsJsonlWriter({str(tmp_path)!r} + f"/pm{{round}}", "server")
                await w.start()
                disk = StuckDisk(w.file_path)
                for i in range(200):
                    w.submit(simple_record(str(i)))
                r = w.close(timeout=0.2)  # gives up on the stuck append
                assert r is None or r["drained"] is False, r
                del w
                gc.collect()
                os.close(disk._fd)  # the reader goes: the stuck append fails (EPIPE)
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline:
                    junk = [bytearray(64) for _ in range(20000)]
                    del junk
                    await asyncio.sleep(0.01)
        asyncio.run(main())
        print("survived", flush=True)
    """
    env = dict(os.environ, MALLOC_CHECK_="3", MALLOC_PERTURB_="165")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, cwd=str(tmp_path), timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "survived" in p.stdout
    assert time.monotonic() - t0 < 90


def test_exit_with_a_writer_that_was_never_started(tmp_path):
    code = f"""
        from jsonlw.trtllm import PerfMetricsJsonlWriter
        w = PerfMetricsJsonlWriter({str(tmp_path / 'pm')!r}, "server")
        w.submit({{"phases": {{}}}})
    """
    p, took = run_py(code, tmp_path)
    assert p.returncode == 0, p.stderr
    assert took < 20


def test_a_forked_child_never_writes_through_an_inherited_writer(tmp_path):
    code = f"""
        import os, sys, time
        from jsonlw.trtllm import PerfMetricsJsonlWriter
        rec = lambda i: {{"request_id": str(i), "phases": {{"server": {{"timing_metrics": {{}}}}}}}}
        w = PerfMetricsJsonlWriter({str(tmp_path / 'parent')!r}, "server")
        w.start()
        w.submit(rec(1))
        w.flush()
        pid = os.fork()
        if pid == 0:
            for i in range(100, 110):
                w.submit(rec(i))  # queued, never written: the drain is not in the child
            own = PerfMetricsJsonlWriter({str(tmp_path / 'child')!r}, "server")
            own.start()
            own.submit(rec(7))
            report = own.close(timeout=10)
            sys.exit(0 if report and report["stats"]["written"] == 1 else 3)  # atexit runs
        _, status = os.waitpid(pid, 0)
        w.submit(rec(2))
        w.close(timeout=10)
        print("child", os.waitstatus_to_exitcode(status))
    """
    p, took = run_py(code, tmp_path)
    assert p.returncode == 0, p.stderr
    assert "child 0" in p.stdout, p.stdout + p.stderr
    assert took < 30
    parent = lines(str(tmp_path / "parent" / "*.jsonl"))
    assert sorted(r["request_id"] for r in parent) == [1, 2]
    (child,) = lines(str(tmp_path / "child" / "*.jsonl"))
    assert child["request_id"] == 7
    assert glob.glob(str(tmp_path / "child" / "*.jsonl"))[0] != glob.glob(
        str(tmp_path / "parent" / "*.jsonl"))[0]
