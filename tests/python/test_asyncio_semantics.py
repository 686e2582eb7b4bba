"""asyncio and threading semantics: submit() is a plain non-blocking call from any thread;
start/flush/close complete on the calling loop; the GIL is never needed to write."""

import asyncio
import threading
import time

import pytest

from conftest import LoopTicker, read_lines, simple_record
import jsonlw
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter


async def test_start_flush_close_are_awaitables_completed_on_the_calling_loop(out_dir):
    loop = asyncio.get_running_loop()
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    for op in (w.start(), w.flush()):
        assert asyncio.isfuture(op) and op.get_loop() is loop
        await op
    op = w.close()
    assert asyncio.isfuture(op) and op.get_loop() is loop
    report = await op
    assert report["drained"]


async def test_submit_from_the_loop_returns_what_happened(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    assert w.submit(simple_record()) == SubmitResult.accepted
    await w.close()
    assert w.submit(simple_record()) == SubmitResult.closed


async def test_submit_from_many_threads_while_the_loop_runs(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    ticker = LoopTicker(0.001).start()

    def produce(base):
        for i in range(500):
            w.submit(simple_record(str(base + i)))

    await asyncio.gather(*[asyncio.to_thread(produce, k * 1000) for k in range(4)])
    report = await w.close()
    ticker.stop()
    s = report["stats"]
    assert s["written"] + s["dropped"]["queue_full"] == 2000
    assert ticker.ticks > 0


def test_records_are_written_while_the_caller_holds_the_gil(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    w.start()
    for i in range(1000):
        w.submit(simple_record(str(i)))
    deadline = time.monotonic() + 5.0
    written = 0
    while time.monotonic() < deadline and written < 1000:
        sum(range(3_000_000))  # one C call that never releases the GIL (~30 ms)
        written = w.stats()["written"]
    assert written == 1000
    w.close(timeout=10)


def test_close_with_a_timeout_blocks_for_non_asyncio_hosts(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    assert w.start() is None
    w.submit(simple_record())
    report = w.close(timeout=10)
    assert report["drained"] and report["stats"]["written"] == 1
    assert w.close(timeout=1) == report  # idempotent


async def test_close_with_a_timeout_inside_a_coroutine_blocks_too(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    w.submit(simple_record())
    report = w.close(timeout=10)
    assert isinstance(report, dict) and report["stats"]["written"] == 1


def test_flush_and_close_from_a_plain_thread(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    res = {}

    def run():
        w.start()
        w.submit(simple_record())
        res["flush"] = w.flush()
        res["close"] = w.close()

    t = threading.Thread(target=run)
    t.start()
    t.join(20)
    assert res["flush"] is True and res["close"]["stats"]["written"] == 1


def test_each_loop_gets_its_own_completion(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")

    async def step(i):
        if i == 0:
            await w.start()
        w.submit(simple_record(str(i)))
        return await w.flush()

    results = []
    for i in range(3):  # three loops one after another, as a test harness would
        results.append(asyncio.run(step(i)))
    assert results == [True, True, True]
    w.close(timeout=10)
    assert len(read_lines(out_dir)) == 3


def test_a_completion_after_the_loop_closed_is_harmless(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")

    async def leave_early():
        await w.start()
        w.submit(simple_record())
        w.flush()  # never awaited: its loop is gone when it completes

    asyncio.run(leave_early())
    assert w.close(timeout=10)["stats"]["written"] == 1


async def test_a_callers_own_io_context(out_dir):
    io = jsonlw.IoContext()
    w = PerfMetricsJsonlWriter(str(out_dir), "server", io_context=io)
    await w.start()
    w.submit(simple_record())
    await w.close()
    assert len(read_lines(out_dir)) == 1
    io.stop()


def test_the_package_shares_one_io_context_per_process():
    assert jsonlw.default_io_context() is jsonlw.default_io_context()
    with pytest.raises(TypeError):
        PerfMetricsJsonlWriter("/tmp/x", "server", io_context=object())
