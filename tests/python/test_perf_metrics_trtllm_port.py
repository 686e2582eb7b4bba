"""The drop-in writes TensorRT-LLM's bytes for the records TensorRT-LLM's own helpers build:
worker records (aggregated, ctx and gen workers of a disaggregated deployment, with and
without ctx_request_id / disagg_request_id, time_breakdown_metrics, kv-cache and speculative
fields) and the disaggregated server's combined record (ctx and gen rebuilt from the workers'
metrics headers). Each record is built by trtllm_perf_port (a port of the helpers' logic) and
its expected line by the port of the writer; jsonlw must match byte for byte."""

import copy
import types
from datetime import timedelta

import pytest

import trtllm_perf_port as port
from conftest import jsonl_files
from jsonlw import SubmitResult
from jsonlw.trtllm import PerfMetricsJsonlWriter, perf_metrics_line

NS = types.SimpleNamespace


def _td(seconds):
    return timedelta(seconds=seconds) if seconds else timedelta(0)


def request_output(request_id, *, arrival, scheduled, first_token, last_token, kv_size=0,
                   kv_start=0.0, kv_end=0.0, kv=(5, 3, 2, 3, 0.4), spec=(0.0, 0, 0),
                   first_iter=812, last_iter=860, breakdown=None, ctx_request_id=None,
                   disagg_request_id=None):
    """What RequestOutput carries for the helpers: timedelta stamps (0 = not measured)."""
    timing = NS(arrival_time=_td(arrival), first_scheduled_time=_td(scheduled),
                first_token_time=_td(first_token), last_token_time=_td(last_token),
                kv_cache_transfer_start=_td(kv_start), kv_cache_transfer_end=_td(kv_end),
                kv_cache_size=kv_size)
    metrics = NS(timing_metrics=timing, first_iter=first_iter, last_iter=last_iter,
                 kv_cache_metrics=NS(num_total_allocated_blocks=kv[0], num_new_allocated_blocks=kv[1],
                                     num_reused_blocks=kv[2], num_missed_blocks=kv[3],
                                     kv_cache_hit_rate=kv[4]),
                 speculative_decoding=NS(acceptance_rate=spec[0],
                                         total_accepted_draft_tokens=spec[1],
                                         total_draft_tokens=spec[2]))
    params = None
    if ctx_request_id is not None or disagg_request_id is not None:
        params = NS(ctx_request_id=ctx_request_id, disagg_request_id=disagg_request_id)
    out = NS(request_perf_metrics=metrics, disaggregated_params=params)
    return NS(outputs=[out], request_id=request_id, time_breakdown_metrics=breakdown)


def raw_request(server_arrival, server_first_token):
    return NS(state=NS(server_arrival_time=server_arrival,
                       server_first_token_time=server_first_token))


def step(i, t0, **extra):
    s = {"iter": i, "forward_start_time": t0, "forward_end_time": t0 + 0.002,
         "sample_start_time": t0 + 0.002, "sample_end_time": t0 + 0.003,
         "gpu_forward_time": 1.5, "gpu_sample_time": 0.5, "token_time": t0 + 0.004}
    s.update(extra)
    return s


def chunk(t0):
    return {"forward_start_time": t0, "forward_end_time": t0 + 0.004,
            "sample_start_time": t0 + 0.004, "sample_end_time": t0 + 0.005,
            "gpu_forward_time": 3.0, "gpu_sample_time": 0.25, "token_time": t0 + 0.006}


# The workers of one disaggregated request: the stamps of TensorRT-LLM's perf-metrics unit
# test whose 12 time-breakdown spans last 1…12 ms.
def ctx_worker_record(ctx_request_id=7, disagg_request_id=1001):
    res = request_output(
        "11", arrival=1000.003, scheduled=1000.006, first_token=1000.010, last_token=1000.010,
        kv_size=2048, ctx_request_id=ctx_request_id, disagg_request_id=disagg_request_id,
        first_iter=3, last_iter=3,
        breakdown={"ctx_chunk_metrics": [chunk(5310.101), chunk(5310.108)],
                   "ctx_gpu_forward_time": 6.0, "ctx_gpu_sample_time": 0.5})
    return port.worker_record(res, raw_request(1000.001, 1000.015))


def gen_worker_record(ctx_request_id=7, disagg_request_id=1001, spec=(0.75, 3, 4)):
    res = request_output(
        "12", arrival=1000.028, scheduled=1000.055, first_token=1000.066, last_token=1000.2,
        kv_size=2048, kv_start=1000.036, kv_end=1000.045, spec=spec,
        ctx_request_id=ctx_request_id, disagg_request_id=disagg_request_id,
        breakdown={"step_metrics": [step(1, 5310.11), step(2, 5310.12)]})
    return port.worker_record(res, raw_request(1000.021, 1000.066))


def combined_record(disagg_request_id=1001, ctx_dispatch=1000.0005, request_id="1001"):
    """The disaggregated server's record: each worker's answer headers rebuilt into a phase,
    combined with its own phase."""
    ctx = port.record_from_headers(port.metrics_headers(ctx_worker_record()), "ctx", "ctx-1")
    gen = port.record_from_headers(port.metrics_headers(gen_worker_record()), "gen", "gen-1")
    phase = port.disagg_phase("http://ctx0:8001", "http://gen0:8002", 1000.0, ctx_dispatch,
                              1000.078, 1000.3)
    return port.combine(request_id, phase, ctx, gen, disagg_request_id=disagg_request_id)


def aggregated_record():
    res = request_output(
        "42", arrival=1000.0021, scheduled=1000.0053, first_token=1000.025, last_token=1000.41,
        breakdown={"step_metrics": [step(1, 5310.11), step(2, 5310.12)],
                   "ctx_chunk_metrics": [chunk(5310.101)]})
    return port.worker_record(res, raw_request(1000.0, 1000.027))


SCENARIOS = {
    "aggregated worker, steps before chunks as the engine gave them": lambda: aggregated_record(),
    "aggregated worker without the HTTP stamps": lambda: port.worker_record(request_output(
        "43", arrival=10.5, scheduled=10.6, first_token=10.7, last_token=11.0)),
    "aggregated worker with speculative decoding": lambda: port.worker_record(request_output(
        "44", arrival=10.5, scheduled=10.6, first_token=10.7, last_token=11.0,
        spec=(0.5, 2, 4)), raw_request(10.4, 10.75)),
    "ctx worker with ctx_request_id and disagg_request_id": lambda: ctx_worker_record(),
    "gen worker with the kv transfer and speculative decoding": lambda: gen_worker_record(),
    "gen worker with ctx_request_id only": lambda: gen_worker_record(disagg_request_id=None),
    "disaggregated record rebuilt from headers, with disagg_request_id": lambda: combined_record(),
    "disaggregated record without disagg_request_id": lambda: combined_record(None, request_id="7"),
    "disaggregated record never dispatched to ctx": lambda: combined_record(ctx_dispatch=0),
}


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_record_built_by_tensorrt_llms_helpers_is_written_as_tensorrt_llm_writes_it(name, streaming):
    rec = port.submitted(SCENARIOS[name](), streaming=streaming)
    assert perf_metrics_line(copy.deepcopy(rec)) == port.trtllm_line(rec)


def test_the_disaggregated_line_keeps_the_rebuilt_timing_order_and_ends_with_disagg_request_id():
    # The shape of the bytes, spelled out once (the ports above compute it for every case).
    rec = port.submitted(combined_record())
    line = perf_metrics_line(rec)
    assert line.endswith(b'}}},"disagg_request_id":1001}')
    assert (b'"ctx_perf_metrics":{"request_id":"ctx-1","perf_metrics":{"timing_metrics":{'
            b'"arrival_time":1000.003,"last_token_time":1000.01,'
            b'"first_scheduled_time":1000.0060000000001,"first_token_time":1000.01}}}') in line
    assert line == port.trtllm_line(rec)


def test_maps_passed_through_keep_the_key_order_they_were_given_in():
    res = request_output("45", arrival=10.5, scheduled=10.6, first_token=10.7, last_token=11.0,
                         breakdown={"ctx_gpu_sample_time": 0.5, "step_metrics": [
                             {"token_time": 5.004, "gpu_sample_time": 0.5, "iter": 1,
                              "num_scheduled": 8, "forward_start_time": 5.0,
                              "req_generation_token_number": 1}],
                             "ctx_gpu_forward_time": 6.0})
    rec = port.worker_record(res, raw_request(10.4, 10.75))
    pr = rec["phases"]["server"]
    pr["timing_metrics"] = dict(reversed(list(pr["timing_metrics"].items())))
    pr["kv_cache_metrics"] = dict(reversed(list(pr["kv_cache_metrics"].items())))
    pr["speculative_decoding"] = {"total_draft_tokens": 4, "acceptance_rate": 0.5,
                                  "total_accepted_draft_tokens": 2}
    assert perf_metrics_line(rec) == port.trtllm_line(rec)
    assert perf_metrics_line(rec) == (
        b'{"request_id":45,"perf_metrics":{"timing_metrics":{"server_first_token_time":10.75,'
        b'"server_arrival_time":10.4,"last_token_time":11.0,"first_token_time":10.7,'
        b'"first_scheduled_time":10.6,"arrival_time":10.5},"first_iter":812,"last_iter":860,'
        b'"kv_cache_metrics":{"num_missed_blocks":3,"num_reused_blocks":2,'
        b'"num_new_allocated_blocks":3,"num_total_allocated_blocks":5},"speculative_decoding":'
        b'{"total_draft_tokens":4,"acceptance_rate":0.5,"total_accepted_draft_tokens":2}},'
        b'"time_breakdown_metrics":{"ctx_gpu_sample_time":0.5,"step_metrics":[{'
        b'"token_time":5.004,"gpu_sample_time":0.5,"iter":1,"num_scheduled":8,'
        b'"forward_start_time":5.0,"req_generation_token_number":1}],'
        b'"ctx_gpu_forward_time":6.0},"status":"complete"}')


async def test_the_writer_appends_tensorrt_llms_bytes_for_every_helper_built_record(out_dir):
    records = [port.submitted(make(), streaming=bool(i % 2))
               for i, make in enumerate(SCENARIOS.values())]
    w = PerfMetricsJsonlWriter(str(out_dir), "disagg")
    await w.start()
    for rec in records:
        assert w.submit(copy.deepcopy(rec)) == SubmitResult.accepted
    report = await w.close()
    assert report["drained"] and report["stats"]["written"] == len(records)
    with open(jsonl_files(out_dir)[0], "rb") as f:
        assert f.read() == b"".join(port.trtllm_line(r) + b"\n" for r in records)
