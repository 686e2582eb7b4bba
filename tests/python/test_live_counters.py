"""The drop-ins' counters that TensorRT-LLM exposes as plain ints (PerfMetricsJsonlWriter and
RequestTraceWriter `dropped_records`, RawOutputDump `_dropped`) are read live, each read one C
call: callers read them after every submit, as they would TensorRT-LLM's attribute."""

import operator
import sys

from conftest import simple_record
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter, RawOutputDump, RequestTraceWriter


def python_calls_during(obj, attribute):
    """The Python-level calls (Python functions, and builtins called from Python code) made
    while `attribute` of `obj` is read, as a profiler sees them."""
    read = operator.attrgetter(attribute)  # a C callable: the profiler reports nothing for it
    events = []

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            events.append((event, getattr(arg, "__name__", None) or frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        value = read(obj)
    finally:
        sys.setprofile(None)
    return value, [e for e in events if e[1] != "setprofile"]


def test_reading_dropped_records_runs_no_python_code_and_builds_no_stats(out_dir):
    perf = PerfMetricsJsonlWriter(str(out_dir), "server")
    trace = RequestTraceWriter(str(out_dir / "trace"))
    raw = RawOutputDump(str(out_dir / "raw"))
    for obj, attribute in ((perf, "dropped_records"), (trace, "dropped_records"),
                           (raw, "_dropped"), (raw, "dropped")):
        value, calls = python_calls_during(obj, attribute)
        assert type(value) is int and value == 0
        assert calls == []
    for w in (perf, trace, raw):
        w.close(timeout=5)


def test_dropped_records_tracks_each_queue_full_drop_exactly(out_dir):
    # Never started: nothing drains, so the 1025th submit and every later one is refused.
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    for i in range(1024):
        assert w.submit(simple_record(str(i))) is SubmitResult.accepted
        assert w.dropped_records == 0
    for n in range(1, 8):
        assert w.submit(simple_record("x")) is SubmitResult.dropped_queue_full
        assert w.dropped_records == n
        assert w.stats()["dropped"]["queue_full"] == n
    w.close(timeout=10)


async def test_dropped_records_counts_malformed_and_write_drops_as_they_land(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    for bad in ({"phases": {}}, {"request_id": "1", "phases": {"server": {}}}, "not a dict"):
        w.submit(bad)
    w.submit(simple_record("2"))
    assert await w.flush()
    assert w.dropped_records == 3
    d = w.stats()["dropped"]
    assert w.dropped_records == sum(v for k, v in d.items() if k != "closed")
    await w.close()
    assert w.submit(simple_record("3")) is SubmitResult.closed
    assert w.dropped_records == 3  # a submit after close is not one of TensorRT-LLM's drops
    assert w.stats()["dropped"]["closed"] == 1


def test_raw_output_dropped_counts_unreadable_chunks_and_writer_drops(out_dir):
    class Unreadable:
        request_id = "not a number"
        text_diff = "kept"

    h = RawOutputDump(str(out_dir))
    assert h._dropped == 0
    for n in range(1, 4):
        h(Unreadable())  # counted, the verdict still returned
        assert h._dropped == h.dropped == n == h.counters()["bad_chunks"]
    h.close(timeout=5)


def test_request_trace_dropped_records_matches_its_stats(out_dir):
    w = RequestTraceWriter(str(out_dir))
    assert w.dropped_records == 0
    w.close(timeout=5)
    w.record_response("tr_" + "0" * 32)
    assert w.dropped_records == 0 and w.stats()["dropped"]["closed"] == 1
