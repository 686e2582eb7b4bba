"""jsonlw.trtllm.RawOutputDump: TensorRT-LLM's raw-output post-processor hook
(tensorrt_llm/executor/raw_output_hook.py and the behaviour its unit tests check), on the C++
RawOutputWriter (queued: no file I/O in the caller)."""

import dataclasses
import datetime
import glob
import importlib
import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

from conftest import read_records
import jsonlw.trtllm as trtllm
from jsonlw.trtllm import HookAction, RawOutputDump


def chunk(request_id=1, text_diff="", token_ids_diff=(), is_final=False, output_index=0,
          aborted=False, streaming=True, text=None, disagg_request_id=None):
    return types.SimpleNamespace(request_id=request_id, output_index=output_index,
                                 text_diff=text_diff, text=text, token_ids_diff=list(token_ids_diff),
                                 is_final=is_final, aborted=aborted, streaming=streaming,
                                 disagg_request_id=disagg_request_id)


@pytest.fixture
def dump(out_dir):
    d = RawOutputDump(str(out_dir))
    yield d
    d.close(timeout=10)


def records(d, out_dir):
    d.flush(timeout=10)
    return read_records(out_dir)


def test_the_served_text_is_unchanged(dump):
    for diff in ["Hel", "lo ", "", "wörld"]:
        verdict = dump(chunk(text_diff=diff, is_final=diff == "wörld"))
        assert verdict == HookAction.emit(diff)


def test_without_the_directory_nothing_is_recorded(tmp_path):
    # Its own process: the warning is logged once per process that builds the hook.
    code = textwrap.dedent("""
        import logging, os, types
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        os.environ.pop("TRTLLM_RAW_OUTPUT_DIR", None)
        from jsonlw.trtllm import RawOutputDump
        d = RawOutputDump()
        d2 = RawOutputDump()
        c = types.SimpleNamespace(request_id=1, output_index=0, text_diff="x", text=None,
                                  token_ids_diff=[1], is_final=True, aborted=False,
                                  streaming=False, disagg_request_id=None)
        assert d(c).text == "x"
        assert d.dropped == 0 and d.pending_outputs == 0 and not d.recording
        print("OK")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "OK" in p.stdout
    warnings = [l for l in p.stderr.splitlines() if "TRTLLM_RAW_OUTPUT_DIR" in l]
    assert len(warnings) == 1, p.stderr
    assert not glob.glob(str(tmp_path / "**" / "*.jsonl"), recursive=True)


def test_the_directory_comes_from_the_environment_at_construction(out_dir, monkeypatch):
    monkeypatch.setenv("TRTLLM_RAW_OUTPUT_DIR", str(out_dir))
    d = RawOutputDump()
    monkeypatch.delenv("TRTLLM_RAW_OUTPUT_DIR")
    d(chunk(text_diff="a", is_final=True))
    d.close(timeout=10)
    assert [r["text"] for r in read_records(out_dir)] == ["a"]


def test_streaming_frames_keep_the_chunk_boundaries(dump, out_dir):
    frames = ['<tool_call>{"na', 'me": "f"}', '</tool_call>']
    for i, f in enumerate(frames):
        dump(chunk(text_diff=f, is_final=i == 2))
    (r,) = records(dump, out_dir)
    assert r["frames"] == frames and r["text"] == "".join(frames)
    assert r["frames_consistent"] is True and r["event"] == "raw_output"


def test_chunks_that_add_no_text_are_not_frames(dump, out_dir):
    dump(chunk(text_diff="a", token_ids_diff=[1]))
    dump(chunk(text_diff="", token_ids_diff=[2]))
    dump(chunk(text_diff="b", token_ids_diff=[3], is_final=True))
    (r,) = records(dump, out_dir)
    assert r["frames"] == ["a", "b"]


def test_each_output_of_a_request_keeps_its_own_frames(dump, out_dir):
    dump(chunk(text_diff="a0", output_index=0))
    dump(chunk(text_diff="b0", output_index=1))
    dump(chunk(text_diff="a1", output_index=0, is_final=True))
    dump(chunk(text_diff="b1", output_index=1, is_final=True))
    rs = sorted(records(dump, out_dir), key=lambda r: r["output_index"])
    assert [r["frames"] for r in rs] == [["a0", "a1"], ["b0", "b1"]]


def test_a_non_streaming_request_records_its_one_chunk(dump, out_dir):
    dump(chunk(text_diff="whole answer", token_ids_diff=[5, 6, 7], streaming=False, is_final=True))
    (r,) = records(dump, out_dir)
    assert r["frames"] == ["whole answer"] and r["streaming"] is False
    assert r["token_ids"] == [5, 6, 7] and r["num_output_tokens"] == 3


def test_the_token_ids_are_recorded_with_the_text(dump, out_dir):
    dump(chunk(text_diff="hi", token_ids_diff=[10, 11]))
    dump(chunk(text_diff="", token_ids_diff=[2], is_final=True))  # a skipped special token
    (r,) = records(dump, out_dir)
    assert r["token_ids"] == [10, 11, 2] and r["num_output_tokens"] == 3


def test_numpy_token_ids_are_accepted(dump, out_dir):
    np = pytest.importorskip("numpy")
    dump(chunk(text_diff="x", token_ids_diff=np.array([3, 4], dtype=np.int32), is_final=True))
    (r,) = records(dump, out_dir)
    assert r["token_ids"] == [3, 4]


def test_one_record_is_written_when_the_output_finishes(dump, out_dir):
    dump(chunk(text_diff="a"))
    dump(chunk(text_diff="b"))
    assert records(dump, out_dir) == []
    dump(chunk(text_diff="c", is_final=True))
    assert len(records(dump, out_dir)) == 1


def test_a_finished_record_is_filed_under_its_hour_in_a_per_process_file(dump, out_dir):
    dump(chunk(text_diff="a", is_final=True))
    dump.flush(timeout=10)
    (f,) = glob.glob(str(out_dir / "*" / "*.jsonl"))
    hour, name = f.split(os.sep)[-2:]
    assert name == f"raw-{os.getpid()}.jsonl"
    (r,) = read_records(out_dir)
    assert hour == r["finished_at"][:13]
    datetime.datetime.strptime(hour, "%Y-%m-%dT%H")


def test_the_disaggregated_request_id_is_recorded_as_an_exact_string(dump, out_dir):
    big = 2**53 + 1
    dump(chunk(request_id=big + 2, text_diff="a", is_final=True, disagg_request_id=big))
    (r,) = records(dump, out_dir)
    assert r["disagg_request_id"] == str(big) and r["request_id"] == str(big + 2)


def test_an_aborted_output_is_recorded_as_aborted(dump, out_dir):
    dump(chunk(text_diff="a"))
    dump(chunk(text_diff="", aborted=True, is_final=True))
    (r,) = records(dump, out_dir)
    assert r["aborted"] is True


def test_it_loads_through_the_documented_import_path():
    path = "jsonlw.trtllm.RawOutputDump"
    module, name = path.rsplit(".", 1)
    assert getattr(importlib.import_module(module), name) is RawOutputDump


def test_an_unwritable_directory_costs_the_record_not_the_response(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    d = RawOutputDump(str(blocker / "raw"))
    d.flush(timeout=10)  # start() ran on the io_context thread and disabled the writer
    v = d(chunk(text_diff="served", is_final=True))
    assert v == HookAction.emit("served")
    assert d.dropped > 0
    d.close(timeout=10)


def test_an_unexpected_failure_costs_only_the_record(dump, out_dir):
    class Exploding:
        request_id = 3
        output_index = 0
        text_diff = "kept"
        text = None
        is_final = True
        aborted = False
        streaming = True
        disagg_request_id = None

        @property
        def token_ids_diff(self):
            raise RuntimeError("boom")

    assert dump(Exploding()) == HookAction.emit("kept")
    dump(chunk(request_id=4, text_diff="next", is_final=True))
    assert [r["text"] for r in records(dump, out_dir)] == ["next"]
    assert dump.counters()["bad_chunks"] == 1 and dump.dropped == 1


def test_a_request_ended_by_an_error_is_written_as_partial_and_released(dump, out_dir):
    dump(chunk(request_id=7, text_diff="half"))
    dump.on_request_end(7, "error")
    assert dump.pending_outputs == 0
    (r,) = records(dump, out_dir)
    assert r["partial"] is True and r["end_reason"] == "error" and r["text"] == "half"


def test_ending_one_request_leaves_the_others_alone(dump, out_dir):
    dump(chunk(request_id=1, text_diff="a"))
    dump(chunk(request_id=2, text_diff="b"))
    dump.on_request_end(1, "error")
    assert dump.pending_outputs == 1
    dump(chunk(request_id=2, text_diff="c", is_final=True))
    rs = {r["request_id"]: r for r in records(dump, out_dir)}
    assert rs["2"]["text"] == "bc" and "partial" not in rs["2"]


def test_a_request_that_ended_before_any_output_writes_nothing(dump, out_dir):
    dump(chunk(request_id=9, text_diff=""))
    dump.on_request_end(9, "error")
    assert records(dump, out_dir) == [] and dump.pending_outputs == 0


def test_a_request_that_generated_only_hidden_tokens_is_written(dump, out_dir):
    dump(chunk(request_id=9, text_diff="", token_ids_diff=[1, 2]))
    dump.on_request_end(9, "error")
    (r,) = records(dump, out_dir)
    assert r["token_ids"] == [1, 2] and r["text"] == ""


def test_ended_requests_do_not_accumulate(dump, out_dir):
    for i in range(1000):
        dump(chunk(request_id=i, text_diff="x" * 1024))
        dump.on_request_end(i, "error")
    assert dump.pending_outputs == 0
    assert len(records(dump, out_dir)) == 1000


def test_ending_an_unknown_request_is_harmless(dump):
    dump.on_request_end(12345, "error")
    assert dump.dropped == 0


def test_a_record_that_joins_two_sampled_sequences_is_marked(dump, out_dir):
    dump(chunk(text_diff="abc", text="abc"))
    dump(chunk(text_diff="d", text="xyzd", is_final=True))  # another sequence took index 0
    (r,) = records(dump, out_dir)
    assert r["frames_consistent"] is False


def test_outputs_past_the_limit_are_written_as_evicted(out_dir):
    d = RawOutputDump(str(out_dir), max_pending=2)
    for i in range(3):
        d(chunk(request_id=i, text_diff=f"t{i}"))
    assert d.pending_outputs == 2
    (r,) = records(d, out_dir)
    assert r["request_id"] == "0" and r["partial"] is True and r["end_reason"] == "evicted"
    d.close(timeout=10)


def test_the_least_recently_updated_output_is_evicted_first(out_dir):
    d = RawOutputDump(str(out_dir), max_pending=2)
    d(chunk(request_id=0, text_diff="a"))
    d(chunk(request_id=1, text_diff="b"))
    d(chunk(request_id=0, text_diff="c"))  # 0 is now the most recently updated
    d(chunk(request_id=2, text_diff="d"))
    (r,) = records(d, out_dir)
    assert r["request_id"] == "1" and r["end_reason"] == "evicted"
    d.close(timeout=10)


def test_an_evicted_output_that_produced_nothing_is_not_written(out_dir):
    d = RawOutputDump(str(out_dir), max_pending=1)
    d(chunk(request_id=0, text_diff=""))
    d(chunk(request_id=1, text_diff="b"))
    assert records(d, out_dir) == []
    d.close(timeout=10)


def test_two_instances_in_one_process_share_one_file(out_dir):
    a, b = RawOutputDump(str(out_dir)), RawOutputDump(str(out_dir))
    a(chunk(request_id=1, text_diff="a", is_final=True))
    b(chunk(request_id=2, text_diff="b", is_final=True))
    a.close(timeout=10)
    b.close(timeout=10)
    files = glob.glob(str(out_dir / "*" / "*.jsonl"))
    assert len(files) == 1 and len(read_records(out_dir)) == 2


def test_close_writes_outputs_in_flight_as_partial_shutdown(out_dir):
    d = RawOutputDump(str(out_dir))
    d(chunk(request_id=5, text_diff="unfinished"))
    report = d.close(timeout=10)
    assert report["drained"]
    (r,) = read_records(out_dir)
    assert r["end_reason"] == "shutdown"


def test_a_dict_chunk_is_accepted(dump, out_dir):
    v = dump({"request_id": 1, "text_diff": "d", "token_ids_diff": [1], "is_final": True})
    assert v == HookAction.emit("d")
    assert [r["text"] for r in records(dump, out_dir)] == ["d"]


def test_tensorrt_llms_own_verdict_is_returned_when_it_is_importable(out_dir, monkeypatch):
    # A stand-in shaped like the hook interface of tensorrt_llm/executor/postprocessor_hook.py.
    class PostProcessorHookAction:
        def __init__(self, kind, text=None):
            self.kind, self.text = kind, text

        @classmethod
        def emit(cls, text):
            return cls("emit", text)

    hook_mod = types.ModuleType("tensorrt_llm.executor.postprocessor_hook")
    hook_mod.PostProcessorHookAction = PostProcessorHookAction
    pkg = types.ModuleType("tensorrt_llm")
    ex = types.ModuleType("tensorrt_llm.executor")
    pkg.executor, ex.postprocessor_hook = ex, hook_mod
    monkeypatch.setitem(sys.modules, "tensorrt_llm", pkg)
    monkeypatch.setitem(sys.modules, "tensorrt_llm.executor", ex)
    monkeypatch.setitem(sys.modules, "tensorrt_llm.executor.postprocessor_hook", hook_mod)
    d = RawOutputDump(str(out_dir))
    v = d(chunk(text_diff="same", is_final=True))
    assert isinstance(v, PostProcessorHookAction) and v.kind == "emit" and v.text == "same"
    d.close(timeout=10)


def test_the_hook_can_be_called_from_many_threads(dump, out_dir):
    import threading

    def run(base):
        for i in range(200):
            dump(chunk(request_id=base + i, text_diff="t", is_final=True))

    threads = [threading.Thread(target=run, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(records(dump, out_dir)) == 800


def test_construction_misuse_raises_clearly(tmp_path):
    with pytest.raises(TypeError):
        RawOutputDump(42)
    with pytest.raises(ValueError):
        RawOutputDump(str(tmp_path), max_pending=0)
    with pytest.raises(TypeError):
        RawOutputDump(str(tmp_path), max_pending="8")


# --- chunk shapes: every way a chunk's fields can be found reads the same record ------------

FIELDS = dict(request_id=5, output_index=0, text_diff="ab", text="ab", token_ids_diff=[7, 8],
              is_final=True, aborted=True, streaming=False, disagg_request_id=9)


# The fields of a chunk dataclass: one layout with an instance __dict__, one with __slots__
# (members: data descriptors, read by getattr).
CHUNK_FIELDS = [("request_id", int), ("output_index", int), ("text_diff", str), ("text", object),
                ("token_ids_diff", list), ("is_final", bool), ("aborted", bool),
                ("streaming", bool),
                ("disagg_request_id", object, dataclasses.field(default=None))]
DataChunk = dataclasses.make_dataclass("DataChunk", CHUNK_FIELDS)
SlotsChunk = dataclasses.make_dataclass("SlotsChunk", CHUNK_FIELDS, slots=True)


class PropertyChunk:
    def __init__(self, **f):
        self._f = f

    request_id = property(lambda self: self._f["request_id"])
    text_diff = property(lambda self: self._f["text_diff"])

    def __getattr__(self, name):  # the rest on demand
        try:
            return self._f[name]
        except KeyError:
            raise AttributeError(name) from None


class DefaultsChunk:
    """Fields the instance lacks come from the class."""
    output_index = 0
    text = "ab"
    token_ids_diff = (7, 8)
    aborted = True
    streaming = False
    disagg_request_id = 9

    def __init__(self, request_id, text_diff, is_final):
        self.request_id, self.text_diff, self.is_final = request_id, text_diff, is_final


class Key(str):
    pass


def _with_subclass_key(**f):
    c = types.SimpleNamespace(**{k: v for k, v in f.items() if k != "is_final"})
    c.__dict__[Key("is_final")] = f["is_final"]
    return c


CHUNK_MAKERS = {
    "namespace": lambda: types.SimpleNamespace(**FIELDS),
    "json_keys": lambda: types.SimpleNamespace(**json.loads(json.dumps(FIELDS))),
    "dataclass": lambda: DataChunk(**FIELDS),
    "slots": lambda: SlotsChunk(**FIELDS),
    "properties": lambda: PropertyChunk(**FIELDS),
    "class_defaults": lambda: DefaultsChunk(5, "ab", True),
    "subclass_key": lambda: _with_subclass_key(**FIELDS),
    "dict": lambda: dict(FIELDS),
}


@pytest.mark.parametrize("kind", list(CHUNK_MAKERS))
def test_every_chunk_shape_reads_the_same_record(kind, dump, out_dir):
    for _ in range(2):  # the second call finds the type's cached layout
        assert dump(CHUNK_MAKERS[kind]()) == HookAction.emit("ab")
    rs = records(dump, out_dir)
    assert len(rs) == 2 and rs[0] == {**rs[1], "started_at": rs[0]["started_at"],
                                      "finished_at": rs[0]["finished_at"]}
    r = rs[0]
    assert (r["request_id"], r["text"], r["frames"], r["token_ids"], r["aborted"],
            r["streaming"], r["disagg_request_id"]) == ("5", "ab", ["ab"], [7, 8], True, False, "9")
    assert dump.counters()["bad_chunks"] == 0


def test_a_chunk_type_changed_after_use_is_read_as_it_is_now(dump, out_dir):
    class Chunk:
        pass

    def make(i):
        c = Chunk()
        vars(c).update(request_id=i, text_diff="x", is_final=True)
        return c

    assert dump(make(1)) == HookAction.emit("x")
    Chunk.text_diff = property(lambda self: "changed")  # now wins over the instance dict
    assert dump(make(2)) == HookAction.emit("changed")
    assert [r["text"] for r in records(dump, out_dir)] == ["x", "changed"]


def test_on_chunk_is_the_hook_and_a_none_text_diff_passes_through(dump, out_dir):
    assert dump.on_chunk(chunk(text_diff="a")) == HookAction.emit("a")
    assert dump(chunk(text_diff=None, is_final=True)) == HookAction.emit(None)
    assert [r["text"] for r in records(dump, out_dir)] == ["a"]


def test_a_subclass_can_override_the_hook_call(out_dir):
    class Wrapped(RawOutputDump):
        def __call__(self, chunk):
            return ("wrapped", super().__call__(chunk))

    class Plain(RawOutputDump):
        pass

    w, p = Wrapped(str(out_dir)), Plain(str(out_dir))
    assert w(chunk(text_diff="a")) == ("wrapped", HookAction.emit("a"))
    assert p(chunk(request_id=2, text_diff="b", is_final=True)) == HookAction.emit("b")
    w.close(timeout=10)
    p.close(timeout=10)
