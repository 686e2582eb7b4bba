"""jsonlw.trtllm.RawOutputDump under faults and at the byte level
(tensorrt_llm/executor/raw_output_hook.py): an append that
fails (the hour folder is a regular file) costs its records, counted as write errors with one
warning, never the served text; unreadable chunks warn at the 1st and every 1000th; the
default bound is TensorRT-LLM's 4096 outputs; started_at is the first chunk's time; text is
written raw in compact lines."""

import datetime
import json
import logging
import os
import time
import types

from conftest import hour_folders, read_lines
from jsonlw.trtllm import HookAction, RawOutputDump


def chunk(request_id=1, text_diff="", token_ids_diff=(), is_final=False):
    return types.SimpleNamespace(request_id=request_id, output_index=0, text_diff=text_diff,
                                 text=None, token_ids_diff=list(token_ids_diff),
                                 is_final=is_final, aborted=False, streaming=True,
                                 disagg_request_id=None)


def test_an_append_that_fails_costs_its_records_as_write_errors_not_the_response(out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")
    out_dir.mkdir(parents=True)
    for folder in hour_folders(out_dir):  # where this test's records go: regular files
        with open(folder, "w") as f:
            f.write("in the way")
    d = RawOutputDump(str(out_dir))
    try:
        assert d(chunk(1, "served", is_final=True)) == HookAction.emit("served")
        assert d.flush(timeout=20) is True
        assert d(chunk(2, "again", is_final=True)) == HookAction.emit("again")
        assert d.flush(timeout=20) is True
        s = d.stats()
        assert s["dropped"]["write_error"] == 2 and s["written"] == 0 and s["unknown"] == 0
        assert d.dropped == 2
        failed = [r.getMessage() for r in caplog.records
                  if r.getMessage().startswith("Failed to write raw output JSONL: ")]
        assert len(failed) == 1
    finally:
        d.close(timeout=20)


def test_unreadable_chunks_warn_at_the_first_and_every_thousandth(out_dir, caplog):
    caplog.set_level(logging.WARNING, logger="jsonlw")

    class Unreadable:
        request_id = "not a number"
        text_diff = "kept"

    d = RawOutputDump(str(out_dir))
    try:
        for _ in range(2000):
            assert d(Unreadable()) == HookAction.emit("kept")
        assert d.counters()["bad_chunks"] == 2000
        d.flush(timeout=20)
        counts = [int(m.split()[1]) for m in (r.getMessage() for r in caplog.records)
                  if m.startswith("Dropped ") and "raw output chunk(s) that could not be read" in m]
        assert counts == [1, 1000, 2000]
    finally:
        d.close(timeout=20)


def test_the_default_bound_is_tensorrt_llms_4096_outputs(out_dir):
    d = RawOutputDump(str(out_dir))
    try:
        assert d.max_pending == 4096
    finally:
        d.close(timeout=20)


def test_started_at_is_the_first_chunks_time_and_finished_at_the_final_ones(out_dir):
    d = RawOutputDump(str(out_dir))
    try:
        before = time.time()
        d(chunk(5, "a"))
        after_first = time.time()
        while time.time() < after_first + 0.005:  # the clock moves on: 5 ms
            pass
        d(chunk(5, "b", is_final=True))
        d.flush(timeout=20)
        (line,) = read_lines(out_dir)
        r = json.loads(line)

        def ts(s):
            return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

        assert before - 0.001 <= ts(r["started_at"]) <= after_first + 0.001
        assert ts(r["finished_at"]) >= after_first + 0.004
    finally:
        d.close(timeout=20)


def test_text_is_written_raw_in_a_compact_line(out_dir):
    d = RawOutputDump(str(out_dir))
    try:
        d(chunk(9, "wörld ✓ ", [1, 2]))
        d(chunk(9, "日本", [3], is_final=True))
        d.flush(timeout=20)
        (line,) = read_lines(out_dir)
        assert line == json.dumps(json.loads(line), separators=(",", ":"),
                                  ensure_ascii=False).encode()
        assert "wörld ✓ 日本".encode() in line and b"\\u" not in line
        r = json.loads(line)
        assert r["frames"] == ["wörld ✓ ", "日本"] and r["token_ids"] == [1, 2, 3]
    finally:
        d.close(timeout=20)
