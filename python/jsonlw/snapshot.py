"""jsonlw.SnapshotStage: per decode step, one read of the logits [rows, vocab] gives per row
the sampled token's logit, logprob and rank, the top-k, log-sum-exp and special-value counts
(docs/snapshot.md), on the GPU (CUDA) or the CPU. Results reach a raw-output writer
(per-token logprobs, ranks, top-k, first_gen_logits) and can be read back as numpy arrays."""

from . import _native
from ._forward import forwarded

CaptureResult = _native.CaptureResult


class SnapshotStage:
    """capture(logits, sampled_ids, metas, stream=None, dtype=None) from the decode loop (one
    thread at a time). `logits`: any 2-D array with the buffer protocol (numpy), with
    __cuda_array_interface__ or with __dlpack__ (torch, cupy), fp32/fp16/bf16 (numpy bf16: a
    uint16 view and dtype="bfloat16"), rows may be padded (row stride > vocab). `sampled_ids`:
    int32, one per row, on the same side as the logits (a list on the CPU). `metas`: one
    (request_id, seq_index, step[, first_gen]) per row (or dicts of those keys). `stream`: the
    caller's CUDA stream (an int handle, a torch.cuda.Stream, a cupy Stream); the stage's work
    is queued on it. Returns a CaptureResult (dropped: no free slot, counted); raises
    ValueError/TypeError for an array it cannot read.

    raw_output: a jsonlw.trtllm.RawOutputDump to feed: each delivered row becomes that output's
    per-token data at position `step` (the engine sends its chunks with
    token_data_follows=True first). keep_results: also keep the batches for results().
    """

    def __init__(self, *, k=20, topk_logits=True, topk_logprobs=True, sampled_logprob=True,
                 sampled_rank=True, nan_count=True, first_gen="off", max_rows=512,
                 max_vocab=262144, ring_slots=4, slot_wait=0.0, cpu_threads=0, backend="auto",
                 raw_output=None, keep_results=True, max_kept_batches=1024):
        raw = None
        if raw_output is not None:
            raw = getattr(raw_output, "_native", None)
            if not isinstance(raw, _native.RawOutputWriter):
                raise TypeError("raw_output must be a jsonlw.trtllm.RawOutputDump")
        for name, v in (("k", k), ("max_rows", max_rows), ("max_vocab", max_vocab),
                        ("ring_slots", ring_slots), ("cpu_threads", cpu_threads),
                        ("max_kept_batches", max_kept_batches)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int")
        if max_kept_batches < 1:
            raise ValueError("max_kept_batches must be at least 1")
        self._raw_output = raw_output  # kept alive as long as the stage feeds it
        self._stage = _native.SnapshotStage(
            k, bool(topk_logits), bool(topk_logprobs), bool(sampled_logprob), bool(sampled_rank),
            bool(nan_count), first_gen, max_rows, max_vocab, ring_slots, float(slot_wait),
            cpu_threads, backend, bool(keep_results), max_kept_batches, raw)

    def capture(self, logits, sampled_ids, metas, stream=None, dtype=None, device=0):
        return self._stage.capture(logits, sampled_ids, metas, stream, dtype, device)

    def drain(self, timeout=5.0):
        """Blocks (GIL released) until every captured step reached its sink; never call it
        on an event-loop thread."""
        return self._stage.drain(timeout)

    def results(self):
        """The kept batches since the last call, oldest first: dicts of numpy arrays
        (request_id, seq_index, step, sampled_id, sampled_logit, sampled_logprob, sampled_rank,
        lse, nan_count, posinf_count, status_flags, topk_ids/topk_logits/topk_logprobs [rows,
        k]; id -1 / NaN past the vocabulary), with batch_seq, gap_before, failed, first_gen."""
        return self._stage.take_results()

    def stats(self):
        return self._stage.stats()

    backend = forwarded("_stage.backend")
    k = forwarded("_stage.k")


def cuda_device_count():
    return _native.cuda_device_count()


__all__ = ["SnapshotStage", "CaptureResult", "cuda_device_count"]
