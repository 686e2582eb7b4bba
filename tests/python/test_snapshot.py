"""jsonlw.SnapshotStage on the CPU with numpy: results equal the C++ reference for fp32, fp16
and bf16 (as a uint16 view), padded rows, the DLPack path, and the results reaching a
raw-output writer (logprobs, ranks, top-k, first_gen_logits)."""

import base64
import types

import pytest

np = pytest.importorskip("numpy")

import jsonlw
from jsonlw import CaptureResult, SnapshotStage
from jsonlw._native import snapshot_reference_row
from jsonlw.trtllm import RawOutputDump

from conftest import read_records


def bf16_bits(x):
    """fp32 -> bf16 bits (round to nearest even), as a uint16 array."""
    u = np.asarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def logits(rows, vocab, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)


def check_against_reference(batch, arr, dtype, ids, k):
    for i in range(arr.shape[0]):
        ref = snapshot_reference_row(np.ascontiguousarray(arr[i]), dtype, int(ids[i]), k)
        assert list(batch["topk_ids"][i][:len(ref["topk_ids"])]) == ref["topk_ids"]
        assert np.array_equal(batch["topk_logits"][i][:len(ref["topk_logits"])],
                              np.array(ref["topk_logits"], np.float32))
        assert batch["sampled_rank"][i] == ref["sampled_rank"]
        assert batch["sampled_logit"][i] == np.float32(ref["sampled_logit"])
        assert batch["sampled_logprob"][i] == pytest.approx(ref["sampled_logprob"], abs=1e-4, rel=1e-5)
        assert batch["lse"][i] == pytest.approx(ref["lse"], abs=1e-4, rel=1e-5)
        assert batch["nan_count"][i] == ref["nan_count"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cpu_results_equal_the_reference(dtype):
    rows, vocab, k = 8, 1000, 10
    x = logits(rows, vocab)
    arr = {"float32": x, "float16": x.astype(np.float16), "bfloat16": bf16_bits(x)}[dtype]
    ids = np.arange(rows, dtype=np.int32) * 7
    s = SnapshotStage(k=k, backend="cpu")
    assert s.capture(arr, ids, [(100 + i, 0, 3) for i in range(rows)],
                     dtype="bfloat16" if dtype == "bfloat16" else None) == CaptureResult.enqueued
    assert s.drain()
    (b,) = s.results()
    assert list(b["request_id"]) == [100 + i for i in range(rows)] and list(b["step"]) == [3] * rows
    check_against_reference(b, arr, dtype, ids, k)


def test_padded_row_strides_are_honoured():
    wide = logits(4, 512)
    view = wide[:, :300]  # row stride 512 elements, vocab 300
    s = SnapshotStage(k=5, backend="cpu")
    ids = np.array([1, 2, 3, 299], np.int32)
    s.capture(view, ids, [(i, 0, 0) for i in range(4)])
    s.drain()
    (b,) = s.results()
    check_against_reference(b, view, "float32", ids, 5)
    assert (b["topk_ids"] < 300).all()


def test_bf16_bits_need_an_explicit_dtype():
    s = SnapshotStage(k=5, backend="cpu")
    with pytest.raises(ValueError, match="bfloat16"):
        s.capture(bf16_bits(logits(1, 10)), [0], [(1, 0, 0)])


def test_a_list_of_ids_and_dict_metas_are_accepted():
    s = SnapshotStage(k=3, backend="cpu")
    s.capture(logits(2, 50), [4, 5], [{"request_id": 1}, {"request_id": 2, "seq_index": 1, "step": 9}])
    s.drain()
    (b,) = s.results()
    assert list(b["sampled_id"]) == [4, 5] and list(b["seq_index"]) == [0, 1]


class DlpackOnly:
    """An array that offers only DLPack (as a torch CPU tensor does)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_the_dlpack_path_gives_the_same_results():
    x = logits(3, 200, seed=5)
    ids = np.array([0, 10, 199], np.int32)
    s = SnapshotStage(k=8, backend="cpu")
    s.capture(DlpackOnly(x), DlpackOnly(ids), [(i, 0, 0) for i in range(3)])
    s.drain()
    (b,) = s.results()
    check_against_reference(b, x, "float32", ids, 8)


def test_device_memory_is_refused_by_the_cpu_backend():
    class FakeDevice:
        __cuda_array_interface__ = {"shape": (1, 10), "typestr": "<f4", "data": (0x1000, True),
                                    "version": 3, "strides": None}

    s = SnapshotStage(k=3, backend="cpu")
    with pytest.raises(ValueError):
        s.capture(FakeDevice(), FakeDevice(), [(1, 0, 0)])


def test_bad_arrays_raise_clearly():
    s = SnapshotStage(k=3, backend="cpu")
    with pytest.raises(ValueError):
        s.capture(np.zeros(10, np.float32), [0], [(1, 0, 0)])  # not 2-D
    with pytest.raises(ValueError):
        s.capture(np.zeros((2, 10), np.float32), [0], [(1, 0, 0)])  # ids per row
    with pytest.raises(TypeError):
        s.capture(object(), [0], [(1, 0, 0)])
    with pytest.raises(ValueError):
        SnapshotStage(k=0, backend="cpu")
    with pytest.raises(ValueError):
        SnapshotStage(first_gen="sometimes")


def test_results_reach_the_raw_output_writer(out_dir):
    dump = RawOutputDump(str(out_dir))
    s = SnapshotStage(k=3, backend="cpu", raw_output=dump, first_gen="float32_exact")
    vocab = 64
    steps = [logits(1, vocab, seed=i) for i in range(3)]
    ids = [int(np.argmax(x[0])) for x in steps]
    for step, x in enumerate(steps):
        dump(types.SimpleNamespace(request_id=9, output_index=0, text_diff=f"t{step}",
                                   token_ids_diff=[ids[step]], is_final=False, streaming=True,
                                   token_data_follows=True))
        s.capture(x, [ids[step]], [(9, 0, step, step == 0)])
    s.drain()
    dump(types.SimpleNamespace(request_id=9, output_index=0, text_diff="", token_ids_diff=[],
                               is_final=True, streaming=True))
    dump.close(timeout=10)
    (rec,) = read_records(out_dir)
    assert rec["token_ids"] == ids
    assert rec["ranks"] == [1, 1, 1]
    for step, x in enumerate(steps):
        ref = snapshot_reference_row(x[0], "float32", ids[step], 3)
        assert rec["logprobs"][step] == pytest.approx(ref["sampled_logprob"], abs=1e-4)
        assert [t[0] for t in rec["top_logprobs"][step]] == ref["topk_ids"]
    (fg,) = rec["first_gen_logits"]
    assert fg["dtype"] == "float32" and fg["shape"] == [1, vocab]
    assert np.array_equal(np.frombuffer(base64.b64decode(fg["data"]), np.float32), steps[0][0])
    assert "logprobs_missing" not in rec


def test_kept_results_are_bounded():
    s = SnapshotStage(k=2, backend="cpu", max_kept_batches=3)
    for i in range(5):
        s.capture(logits(1, 20, seed=i), [0], [(i, 0, 0)])
    s.drain()
    res = s.results()
    assert [b["batch_seq"] for b in res] == [2, 3, 4]
    assert s.stats()["results_discarded"] == 2


def test_the_package_reports_cuda_devices():
    assert jsonlw.cuda_device_count() >= 0
