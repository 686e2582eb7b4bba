"""jsonlw.trtllm.PerfMetricsJsonlWriter: TensorRT-LLM's PerfMetricsJsonlWriter surface
(tensorrt_llm/serve/perf_metrics.py), its _jsonl_record rules applied in C++, and the golden
example lines byte for byte."""

import asyncio
import copy
import json
import logging
import math
import os
import re
import socket

import pytest

from conftest import (DISAGG_LINE, DISAGG_RECORD, WORKER_LINE, WORKER_RECORD, jsonl_files,
                      read_lines, read_records, simple_record, worker_record)
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter, perf_metrics_line


def line(rec):
    return perf_metrics_line(rec)


# --- golden lines ---------------------------------------------------------------------------

def test_the_aggregated_example_is_byte_identical_to_the_golden_line():
    assert line(WORKER_RECORD) == WORKER_LINE


def test_the_disagg_example_is_byte_identical_to_the_golden_line():
    assert line(DISAGG_RECORD) == DISAGG_LINE


def test_a_traceparent_is_the_last_key_an_invalid_one_is_left_out_and_none_changes_nothing():
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert line(dict(WORKER_RECORD, traceparent=tp)) == WORKER_LINE[:-1] + b',"traceparent":"' + tp.encode() + b'"}'
    assert line(dict(DISAGG_RECORD, traceparent=tp)).endswith(b',"traceparent":"' + tp.encode() + b'"}')
    assert line(dict(WORKER_RECORD, traceparent="00-not-a-traceparent")) == WORKER_LINE
    assert line(dict(WORKER_RECORD, traceparent=None)) == WORKER_LINE


async def test_the_writer_writes_the_golden_lines_to_its_file(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    assert w.submit(copy.deepcopy(WORKER_RECORD)) == SubmitResult.accepted
    assert w.submit(copy.deepcopy(DISAGG_RECORD)) == SubmitResult.accepted
    report = await w.close()
    assert report["drained"] and report["stats"]["written"] == 2
    with open(jsonl_files(out_dir)[0], "rb") as f:
        assert f.read() == WORKER_LINE + b"\n" + DISAGG_LINE + b"\n"


def test_the_disagg_spans_are_one_to_twelve_ms():
    r = json.loads(line(DISAGG_RECORD))
    c = r["ctx_perf_metrics"]["perf_metrics"]["timing_metrics"]
    g = r["gen_perf_metrics"]["perf_metrics"]["timing_metrics"]
    stamps = [r["disagg_server_arrival_time"], c["server_arrival_time"], c["arrival_time"],
              c["first_scheduled_time"], c["first_token_time"], c["server_first_token_time"],
              g["server_arrival_time"], g["arrival_time"], g["kv_cache_transfer_start"],
              g["kv_cache_transfer_end"], g["first_scheduled_time"], g["server_first_token_time"],
              r["disagg_server_first_token_time"]]
    spans = [round((b - a) * 1000) for a, b in zip(stamps, stamps[1:])]
    assert spans == list(range(1, 13))


# --- _jsonl_record rules ---------------------------------------------------------------------

def test_no_disagg_phase_gives_the_worker_shape_from_the_server_phase():
    r = json.loads(line(simple_record("abc")))
    assert list(r) == ["request_id", "perf_metrics", "status"]
    assert r["request_id"] == "abc"


def test_a_missing_server_phase_is_malformed_with_pythons_key_error_text():
    with pytest.raises(ValueError, match="^'server'$"):
        line({"phases": {}})


def test_only_the_schema_fields_are_copied_into_perf_metrics():
    rec = worker_record()
    rec["phases"]["server"]["unknown_extra"] = {"x": 1}
    r = json.loads(line(rec))
    assert set(r["perf_metrics"]) == {"timing_metrics", "first_iter", "last_iter",
                                      "kv_cache_metrics"}
    assert "metrics_headers" not in json.dumps(r) and "streaming" not in r


def test_kv_cache_hit_rate_is_stripped():
    r = json.loads(line(WORKER_RECORD))
    assert "kv_cache_hit_rate" not in r["perf_metrics"]["kv_cache_metrics"]


# kv_cache_metrics as given, and the bytes TensorRT-LLM writes for it: the dict minus
# kv_cache_hit_rate, an empty one still emitted (as _jsonl_record does).
KV_CASES = [
    ({}, b'{}'),
    ({"kv_cache_hit_rate": 0.5}, b'{}'),
    ({"num_total_allocated_blocks": 5, "num_reused_blocks": 2, "kv_cache_hit_rate": 0.4},
     b'{"num_total_allocated_blocks":5,"num_reused_blocks":2}'),
    ({"num_missed_blocks": 0}, b'{"num_missed_blocks":0}'),
    ({"num_total_allocated_blocks": 5, "num_new_allocated_blocks": 3, "num_reused_blocks": 2,
      "num_missed_blocks": 3, "kv_cache_hit_rate": 0.4},
     b'{"num_total_allocated_blocks":5,"num_new_allocated_blocks":3,"num_reused_blocks":2,'
     b'"num_missed_blocks":3}'),
]


def kv_record(kv):
    rec = simple_record()
    rec["phases"]["server"]["kv_cache_metrics"] = kv
    return rec


def kv_line(kv_bytes, request_id=7):
    return (b'{"request_id":%d,"perf_metrics":{"timing_metrics":{"arrival_time":10.0,'
            b'"last_token_time":11.0},"kv_cache_metrics":%s},"status":"complete"}'
            % (request_id, kv_bytes))


@pytest.mark.parametrize("kv,kv_bytes", KV_CASES, ids=["empty", "only_hit_rate", "subset",
                                                        "one_zero", "all_four"])
def test_kv_cache_metrics_is_written_as_tensorrt_llm_writes_it(kv, kv_bytes):
    assert line(kv_record(kv)) == kv_line(kv_bytes)
    # What TensorRT-LLM's _jsonl_record + compact json.dumps gives for the same record.
    trtllm = {"request_id": 7, "perf_metrics": {
        "timing_metrics": {"arrival_time": 10.0, "last_token_time": 11.0},
        "kv_cache_metrics": {k: v for k, v in kv.items() if k != "kv_cache_hit_rate"}},
        "status": "complete"}
    assert line(kv_record(kv)) == json.dumps(trtllm, separators=(",", ":")).encode()


async def test_the_writer_writes_kv_cache_metrics_as_tensorrt_llm_does(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    for i, (kv, _) in enumerate(KV_CASES):
        rec = kv_record(copy.deepcopy(kv))
        rec["request_id"] = str(i)
        assert w.submit(rec) == SubmitResult.accepted
    report = await w.close()
    assert report["stats"]["written"] == len(KV_CASES)
    with open(jsonl_files(out_dir)[0], "rb") as f:
        assert f.read() == b"".join(kv_line(b, i) + b"\n" for i, (_, b) in enumerate(KV_CASES))


def test_a_null_kv_count_is_left_out_and_a_bad_one_is_malformed():
    assert line(kv_record({"num_reused_blocks": None, "num_missed_blocks": 1})) == kv_line(
        b'{"num_missed_blocks":1}')
    with pytest.raises(ValueError, match="kv_cache_metrics.num_reused_blocks"):
        line(kv_record({"num_reused_blocks": "2"}))


def test_a_falsy_kv_cache_size_is_removed_and_a_positive_one_kept():
    assert "kv_cache_size" not in json.loads(line(simple_record(kv_cache_size=0)))[
        "perf_metrics"]["timing_metrics"]
    t = json.loads(line(simple_record(kv_cache_size=128)))["perf_metrics"]["timing_metrics"]
    assert t["kv_cache_size"] == 128


def test_transfer_stamps_do_not_depend_on_kv_cache_size():
    t = json.loads(line(simple_record(kv_cache_size=0, kv_cache_transfer_start=10.1,
                                      kv_cache_transfer_end=10.2)))["perf_metrics"]["timing_metrics"]
    assert t["kv_cache_transfer_start"] == 10.1 and t["kv_cache_transfer_end"] == 10.2


@pytest.mark.parametrize("unknown", [None, 0, 0.0])
def test_transfer_stamps_that_are_null_or_zero_are_removed(unknown):
    t = json.loads(line(simple_record(kv_cache_transfer_start=unknown,
                                      kv_cache_transfer_end=unknown)))["perf_metrics"]["timing_metrics"]
    assert "kv_cache_transfer_start" not in t and "kv_cache_transfer_end" not in t


def test_time_breakdown_metrics_is_a_sibling_of_perf_metrics():
    r = json.loads(line(WORKER_RECORD))
    assert "time_breakdown_metrics" in r and "time_breakdown_metrics" not in r["perf_metrics"]


def test_speculative_decoding_only_when_there_were_draft_tokens():
    rec = worker_record()
    rec["phases"]["server"]["speculative_decoding"] = {
        "acceptance_rate": 0.5, "total_accepted_draft_tokens": 3, "total_draft_tokens": 6}
    assert json.loads(line(rec))["perf_metrics"]["speculative_decoding"] == {
        "acceptance_rate": 0.5, "total_accepted_draft_tokens": 3, "total_draft_tokens": 6}
    rec["phases"]["server"]["speculative_decoding"]["total_draft_tokens"] = 0
    assert "speculative_decoding" not in json.loads(line(rec))["perf_metrics"]


def test_disagg_sub_records_take_the_phase_id_falling_back_to_the_top_level_one():
    rec = copy.deepcopy(DISAGG_RECORD)
    del rec["phases"]["gen"]["request_id"]
    rec["request_id"] = "77"
    r = json.loads(line(rec))
    assert r["ctx_perf_metrics"]["request_id"] == "ctx-1"
    assert r["gen_perf_metrics"]["request_id"] == 77
    assert "request_id" not in r


def test_the_request_id_is_coerced_to_int_when_it_parses_as_one():
    assert json.loads(line(simple_record("42")))["request_id"] == 42
    assert json.loads(line(simple_record(42)))["request_id"] == 42
    assert json.loads(line(simple_record("chatcmpl-42")))["request_id"] == "chatcmpl-42"


def test_the_output_has_no_schema_version():
    assert b"schema_version" not in line(WORKER_RECORD)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_rejected(bad):
    with pytest.raises(ValueError, match="non-finite"):
        line(simple_record(first_token_time=bad))


def test_unknown_required_times_are_null_and_optional_ones_left_out():
    rec = {"request_id": "1", "phases": {"server": {"timing_metrics": {
        "arrival_time": None, "last_token_time": -1.0, "first_token_time": 0}}}}
    t = json.loads(line(rec))["perf_metrics"]["timing_metrics"]
    assert t == {"arrival_time": None, "last_token_time": None}


def test_the_disagg_shape_keeps_a_null_dispatch_time():
    rec = copy.deepcopy(DISAGG_RECORD)
    rec["phases"]["disagg"]["timing_metrics"]["ctx_dispatch_time"] = None
    r = json.loads(line(rec))
    assert r["disagg_ctx_dispatch_time"] is None


@pytest.mark.parametrize("key", ["ctx_server", "gen_server"])
def test_missing_disagg_keys_are_malformed(key):
    rec = copy.deepcopy(DISAGG_RECORD)
    del rec["phases"]["disagg"][key]
    with pytest.raises(ValueError, match=f"'{key}'"):
        line(rec)


# --- the writer (PerfMetricsJsonlWriter, tensorrt_llm/serve/perf_metrics.py) -----------------

async def test_an_empty_phases_record_is_dropped_and_counted_while_the_next_is_written(
        out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    w.submit({"phases": {}})
    w.submit(simple_record("42"))
    await w.close()
    assert w.dropped_records == 1
    recs = read_records(out_dir)
    assert len(recs) == 1 and recs[0]["request_id"] == 42
    msgs = [r.getMessage() for r in caplog.records]
    assert "Dropped malformed performance metrics record: 'server'" in msgs
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_the_file_is_named_after_kind_host_pid_and_start_time(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "disagg")
    await w.start()
    w.submit(simple_record())
    await w.close()
    (f,) = jsonl_files(out_dir)
    name = os.path.basename(f)
    host = socket.gethostname()
    assert re.fullmatch(rf"perf_metrics-disagg-{re.escape(host)}-{os.getpid()}-\d{{8}}T\d{{6}}Z\.jsonl",
                        name), name
    assert w.file_path == f


async def test_records_are_written_in_submission_order_one_compact_line_each(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    for i in range(200):
        w.submit(simple_record(str(i)))
    await w.close()
    lines = read_lines(out_dir)
    assert [json.loads(l)["request_id"] for l in lines] == list(range(200))
    assert all(b" " not in l for l in lines)


async def test_65_queued_records_are_appended_as_64_plus_1(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    for i in range(65):  # queued before the drain starts
        w.submit(simple_record(str(i)))
    await w.start()
    report = await w.close()
    assert report["stats"]["written"] == 65 and report["stats"]["batches"] == 2


async def test_a_full_queue_drops_the_newest_counts_them_and_logs_the_first(out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    results = [w.submit(simple_record(str(i))) for i in range(1030)]  # not started: no drain
    assert results.count(SubmitResult.accepted) == 1024
    assert results[1024:] == [SubmitResult.dropped_queue_full] * 6
    await w.start()
    await w.close()
    assert w.dropped_records == 6
    assert len(read_lines(out_dir)) == 1024
    assert [r.getMessage() for r in caplog.records].count(
        "Dropped 1 performance metrics records") == 1


async def test_a_second_start_changes_nothing(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    path = w.file_path
    await w.start()
    assert w.file_path == path
    await w.close()


async def test_start_creates_missing_parents_and_accepts_an_existing_directory(tmp_path):
    nested = tmp_path / "a" / "b" / "c"
    w = PerfMetricsJsonlWriter(str(nested), "server")
    await w.start()
    w.submit(simple_record("1"))
    await w.close()
    (tmp_path / "existing").mkdir()
    w2 = PerfMetricsJsonlWriter(str(tmp_path / "existing"), "server")
    await w2.start()
    w2.submit(simple_record("2"))
    await w2.close()
    assert [r["request_id"] for r in read_records(nested)] == [1]
    assert [r["request_id"] for r in read_records(tmp_path / "existing")] == [2]


async def test_closing_a_writer_never_started_returns_at_once_and_writes_nothing(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    report = await asyncio.wait_for(w.close(), 5)
    assert report["stats"]["submitted"] == 0 and report["drained"] is True
    assert not out_dir.exists() or not jsonl_files(out_dir)


async def test_a_writer_without_an_output_directory_does_nothing(tmp_path):
    w = PerfMetricsJsonlWriter(None, "server")
    await w.start()
    assert w.submit(simple_record()) == SubmitResult.disabled
    await w.close()
    assert w.dropped_records == 0 and w.stats()["submitted"] == 0
    assert not w.enabled


async def test_a_directory_that_cannot_be_created_disables_the_writer_with_an_error_log(
        tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    w = PerfMetricsJsonlWriter(str(blocker / "sub"), "server")
    await w.start()
    assert w.submit(simple_record()) == SubmitResult.disabled
    await w.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and errors[0].startswith("Disabling performance metrics JSONL output: ")


async def test_close_writes_every_queued_record_and_a_later_submit_is_ignored(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    for i in range(500):
        w.submit(simple_record(str(i)))
    report = await w.close()
    assert report["drained"] and report["stats"]["written"] == 500
    assert w.submit(simple_record()) == SubmitResult.closed
    assert len(read_lines(out_dir)) == 500
    assert w.dropped_records == 0


def test_construction_misuse_raises_clearly():
    with pytest.raises(TypeError):
        PerfMetricsJsonlWriter(123, "server")
    with pytest.raises(TypeError):
        PerfMetricsJsonlWriter("/tmp/x", 5)
    with pytest.raises(ValueError):
        PerfMetricsJsonlWriter("/tmp/x", "bad/kind")
    with pytest.raises(ValueError):
        PerfMetricsJsonlWriter("/tmp/x", "")
    with pytest.raises(ValueError):
        PerfMetricsJsonlWriter("/tmp/x", "server", durability="sometimes")


async def test_the_invariant_holds_after_mixed_input(out_dir):
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    for i in range(300):
        w.submit(simple_record(str(i)) if i % 3 else {"phases": {}})
    await w.flush()
    s = w.stats()
    assert s["submitted"] == s["written"] + sum(s["dropped"].values()) + s["unknown"] + s["pending"]
    assert s["dropped"]["malformed"] == 100 and s["written"] == 200
    await w.close()


async def test_an_append_the_filesystem_refuses_drops_the_batch_and_warns(out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    w = PerfMetricsJsonlWriter(str(out_dir), "server")
    await w.start()
    os.mkdir(w.file_path)  # the file's name is taken by a directory: open() fails (EISDIR)
    for i in range(3):
        w.submit(simple_record(str(i)))
    await w.flush()
    w.submit(simple_record("9"))
    await w.close()
    s = w.stats()
    assert s["dropped"]["write_error"] == 4 and s["written"] == 0
    assert w.dropped_records == 4
    warnings = [r.getMessage() for r in caplog.records
                if r.getMessage().startswith("Failed to write performance metrics JSONL")]
    assert len(warnings) == 1
