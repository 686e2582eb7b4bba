"""Bad input never raises into the serving loop: a record that cannot be represented is
dropped and counted as malformed (with the rate-limited log); the next one is written."""

import asyncio
import copy
import logging
import math
import random

import pytest

from conftest import WORKER_RECORD, LoopTicker, read_records, simple_record
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter, RawOutputDump, perf_metrics_line


def deep(n):
    v = 1.0
    for _ in range(n):
        v = [v]
    return v


def cyclic():
    t = {}
    t["arrival_time"] = t
    return {"request_id": "1", "phases": {"server": {"timing_metrics": t}}}


def non_str_keys():
    r = simple_record()
    r["phases"]["server"]["timing_metrics"][1] = 2.0
    return r


def with_server(**server):
    return {"request_id": "1", "phases": {"server": server}}


BAD = {
    "not a dict": [1, 2],
    "None": None,
    "a string": "{}",
    "missing phases": {"request_id": "1"},
    "missing server": {"phases": {}},
    "missing timing_metrics": with_server(first_iter=1),
    "phases not a dict": {"phases": []},
    "timing a list": with_server(timing_metrics=[]),
    "str time": simple_record(arrival_time="1000.0"),
    "bool time": simple_record(arrival_time=True),
    "float iter": with_server(first_iter=1.5, timing_metrics={}),
    "huge int": with_server(first_iter=2**80, timing_metrics={}),
    "nan": simple_record(first_token_time=math.nan),
    "inf": simple_record(last_token_time=math.inf),
    "-inf": simple_record(arrival_time=-math.inf),
    "non-string keys": non_str_keys(),
    "non-string top key": {**simple_record(), 5: "x"},
    "bytes id": simple_record(b"42"),
    "bytes status": {**simple_record(), "status": b"complete"},
    "deep nesting": with_server(timing_metrics={"arrival_time": deep(10_000)}),
    "a cycle": cyclic(),
    "multi-megabyte id": simple_record("x" * (5 << 20)),
    "multi-megabyte status": {**simple_record(), "status": "y" * (3 << 20)},
    "steps not a list": with_server(timing_metrics={}, time_breakdown_metrics={"step_metrics": 3}),
    "step not a dict": with_server(timing_metrics={}, time_breakdown_metrics={"step_metrics": [1]}),
    "nan in a step": with_server(timing_metrics={}, time_breakdown_metrics={
        "step_metrics": [{"forward_start_time": math.nan}]}),
    "disagg without gen": {"phases": {"disagg": {"ctx_server": "a", "gen_server": "b",
                                                 "timing_metrics": {}},
                                      "ctx": {"timing_metrics": {}}}},
    "set value": {**simple_record(), "disagg_request_id": {1, 2}},
}


@pytest.mark.parametrize("name", list(BAD))
async def test_each_bad_record_is_dropped_counted_and_the_next_written(out_dir, name, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    assert w.submit(BAD[name]) == SubmitResult.accepted
    assert w.submit(simple_record("42")) == SubmitResult.accepted
    await w.close()
    s = w.stats()
    assert s["dropped"]["malformed"] == 1 and s["written"] == 1, name
    assert [r["request_id"] for r in read_records(out_dir)] == [42]
    assert any(r.getMessage().startswith("Dropped malformed performance metrics record: ")
               for r in caplog.records)
    with pytest.raises(ValueError):
        perf_metrics_line(BAD[name])


async def test_deep_nesting_in_a_field_the_schema_ignores_is_never_walked(out_dir):
    rec = copy.deepcopy(WORKER_RECORD)
    rec["metrics_headers"] = deep(100_000)
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    w.submit(rec)
    await w.close()
    assert w.stats()["written"] == 1


async def test_the_malformed_log_is_rate_limited(out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    for i in range(2001):
        w.submit({"phases": {}})
        if i % 500 == 0:
            await w.flush()
    await w.close()
    assert w.dropped_records == 2001
    logged = [r for r in caplog.records if "Dropped malformed" in r.getMessage()]
    assert len(logged) == 3  # the 1st, 1000th and 2000th


async def test_the_loop_keeps_running_under_bad_input(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    ticker = LoopTicker().start()
    for name, bad in BAD.items():
        w.submit(bad)
        await asyncio.sleep(0)
    ticker.stop()
    await w.close()
    assert ticker.ticks >= len(BAD) - 1
    assert w.stats()["dropped"]["malformed"] == len(BAD)


def random_value(rng, depth=0):
    kinds = ["int", "float", "str", "none", "bool", "bytes", "nan", "list", "dict", "bigint"]
    k = rng.choice(kinds if depth < 4 else kinds[:7])
    if k == "int":
        return rng.randint(-5, 10**6)
    if k == "float":
        return rng.uniform(-10, 2000)
    if k == "str":
        return rng.choice(["", "42", "server", "\udcff", "é", "x" * rng.randint(0, 50)])
    if k == "none":
        return None
    if k == "bool":
        return rng.random() < 0.5
    if k == "bytes":
        return b"\x00\xff"
    if k == "nan":
        return rng.choice([math.nan, math.inf, -math.inf])
    if k == "bigint":
        return 2**70
    if k == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["request_id", "phases", "server", "disagg", "ctx", "gen", "timing_metrics",
            "arrival_time", "last_token_time", "first_iter", "kv_cache_metrics",
            "time_breakdown_metrics", "step_metrics", "ctx_server", "gen_server", "status", 7]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def random_record(rng):
    rec = copy.deepcopy(WORKER_RECORD if rng.random() < 0.5 else simple_record())
    # Replace one node somewhere in the record with a random value.
    node = rec
    path = []
    while isinstance(node, dict) and node and rng.random() < 0.7:
        key = rng.choice(list(node))
        path.append((node, key))
        node = node[key]
    if path:
        parent, key = path[-1]
        parent[key] = random_value(rng)
    else:
        rec = random_value(rng)
    return rec


async def test_fuzz_random_nested_values_never_raise_and_are_all_accounted_for(out_dir):
    rng = random.Random(15)
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    n = 3000
    expect_ok = 0
    for i in range(n):
        rec = random_record(rng)
        try:
            perf_metrics_line(rec)
            expect_ok += 1
        except ValueError:
            pass
        assert w.submit(rec) in (SubmitResult.accepted, SubmitResult.dropped_queue_full)
        if i % 500 == 0:
            await w.flush()
    report = await w.close()
    s = report["stats"]
    assert s["submitted"] == n
    assert s["submitted"] == s["written"] + sum(s["dropped"].values()) + s["unknown"] + s["pending"]
    assert s["written"] + s["dropped"]["queue_full"] >= expect_ok - s["dropped"]["queue_full"]
    assert s["dropped"]["unexpected"] == 0
    for line_rec in read_records(out_dir):  # every written line is strict JSON
        assert isinstance(line_rec, dict)


def test_the_hook_survives_random_chunks(out_dir):
    rng = random.Random(7)
    d = RawOutputDump(str(out_dir))
    for _ in range(2000):
        c = random_value(rng)
        if isinstance(c, dict) and rng.random() < 0.5:
            c["request_id"] = rng.randint(0, 50)
            c["text_diff"] = rng.choice(["a", "", "\udc80", 3])
        d(c)
    report = d.close(timeout=10)
    assert report is not None
    assert d.counters()["hook_failures"] == 0
