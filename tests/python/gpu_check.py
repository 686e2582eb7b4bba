#!/usr/bin/env python3
"""The CUDA path of jsonlw.SnapshotStage, for a GPU machine (bench/gpu/run.sh runs it): device
logits the module allocates itself (jsonlw._native.DeviceArray, exposed through
__cuda_array_interface__; torch and numpy are not needed), fp32/fp16/bf16, packed and padded
rows, on a stream of the caller's; the results reach a RawOutputDump and must equal the CPU
reference (ids, ranks, logits exactly; logprobs within 1e-4). With torch present, the same
through torch CUDA tensors (DLPack / __cuda_array_interface__) on torch's current stream.
Exit 0 pass, 1 mismatch, 77 no CUDA build or no device. Prints one JSON line."""

import array
import json
import os
import random
import struct
import sys
import tempfile
import types

try:
    import jsonlw
    from jsonlw import _native
    from jsonlw.trtllm import RawOutputDump
except ImportError as e:  # built for another Python version than this machine's
    print(json.dumps({"skip": f"import jsonlw failed: {e}"}))
    sys.exit(77)


def f16_bits(x):
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0x7C00 if x > 0 else 0xFC00


def bf16_bits(x):
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def case(dtype, rows, vocab, pad, k, seed, stream, out_dir):
    rng = random.Random(seed)
    stride = vocab + pad
    vals = [rng.gauss(0, 3) for _ in range(rows * stride)]
    if dtype == "float32":
        host = array.array("f", vals)
        typestr = "<f4"
    else:
        host = array.array("H", [(f16_bits if dtype == "float16" else bf16_bits)(v) for v in vals])
        typestr = "<u2" if dtype == "bfloat16" else "<f2"
    ids = array.array("i", [rng.randrange(vocab) for _ in range(rows)])
    dev_logits = _native.DeviceArray(host, [rows, vocab], typestr, 0, stride)
    dev_ids = _native.DeviceArray(ids, [rows], "<i4", 0, 0)
    dump = RawOutputDump(out_dir)
    stage = jsonlw.SnapshotStage(k=k, backend="cuda", raw_output=dump, keep_results=False)
    for r in range(rows):
        dump(types.SimpleNamespace(request_id=r, output_index=0, text_diff="x",
                                   token_ids_diff=[ids[r]], is_final=False, streaming=True,
                                   token_data_follows=True))
    res = stage.capture(dev_logits, dev_ids, [(r, 0, 0) for r in range(rows)], stream=stream,
                        dtype="bfloat16" if dtype == "bfloat16" else None)
    assert res == jsonlw.CaptureResult.enqueued, res
    assert stage.drain(10.0)
    for r in range(rows):
        dump(types.SimpleNamespace(request_id=r, output_index=0, text_diff="", token_ids_diff=[],
                                   is_final=True, streaming=True))
    dump.close(timeout=10)
    recs = {}
    for root, _, files in os.walk(out_dir):
        for f in files:
            with open(os.path.join(root, f)) as fh:
                for line in fh:
                    rec = json.loads(line)
                    recs[int(rec["request_id"])] = rec
    bad = []
    for r in range(rows):
        row = host[r * stride:r * stride + vocab]
        ref = _native.snapshot_reference_row(row, dtype, ids[r], k)
        rec = recs.get(r)
        if rec is None or "logprobs" not in rec:
            bad.append((r, "no record or no logprobs"))
            continue
        top = [t[0] for t in rec["top_logprobs"][0]]
        if top != ref["topk_ids"]:
            bad.append((r, "topk ids", top, ref["topk_ids"]))
        if rec["ranks"][0] != ref["sampled_rank"]:
            bad.append((r, "rank", rec["ranks"][0], ref["sampled_rank"]))
        lp, rl = rec["logprobs"][0], ref["sampled_logprob"]
        if lp is None or abs(lp - rl) > 1e-4 + 1e-5 * abs(rl):
            bad.append((r, "logprob", lp, rl))
    return {"dtype": dtype, "rows": rows, "vocab": vocab, "pad": pad, "backend": stage.backend,
            "mismatches": bad[:5], "ok": not bad}


def torch_case(out_dir):
    try:
        import torch
    except Exception:  # noqa: BLE001
        return {"torch": "absent"}
    if not torch.cuda.is_available():
        return {"torch": "no cuda"}
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(16, 32000, device="cuda", generator=g, dtype=torch.bfloat16)
    ids = torch.argmax(x.float(), dim=1).to(torch.int32)
    stage = jsonlw.SnapshotStage(k=5, backend="cuda")
    stage.capture(x, ids, [(r, 0, 0) for r in range(16)], stream=torch.cuda.current_stream())
    stage.drain(10.0)
    try:
        (b,) = stage.results()
    except Exception as e:  # noqa: BLE001 - results() needs numpy
        return {"torch": f"captured; results need numpy ({e})"}
    ok = bool((b["sampled_rank"] == 1).all())
    return {"torch": "ok" if ok else "rank mismatch", "ok": ok}


def main():
    if not getattr(_native, "built_with_cuda", False):
        print(json.dumps({"skip": "built without CUDA"}))
        return 77
    if jsonlw.cuda_device_count() < 1:
        print(json.dumps({"skip": "no CUDA device"}))
        return 77
    stream = _native.cuda_stream_create()
    results = []
    with tempfile.TemporaryDirectory() as d:
        for i, (dtype, pad) in enumerate([("float32", 0), ("float16", 0), ("bfloat16", 0),
                                          ("float32", 37), ("bfloat16", 64)]):
            results.append(case(dtype, 32, 32000, pad, 8, i, stream, os.path.join(d, str(i))))
        results.append(torch_case(d))
    _native.cuda_stream_synchronize(stream)
    _native.cuda_stream_destroy(stream)
    ok = all(r.get("ok", True) for r in results)
    print(json.dumps({"ok": ok, "cases": results}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
